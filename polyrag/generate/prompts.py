"""Answer-generation messages for one question, in the style chosen by ``generation.prompt``."""

from __future__ import annotations

import logging

from polyrag.prompts import load_strings, render

log = logging.getLogger(__name__)

#: How each prompt style's output is parsed: MIRAGE asks for ##Reason / ##Answer sections.
ANSWER_FORMAT = {"mirage": "sections", "memerag": "plain", "bergen": "plain"}


def language_name(code: str) -> str:
    return load_strings("languages.yaml").get(code, code)


def passage_language_name(record: dict) -> str:
    """What the passages given with ``record`` are written in: the languages its passages name
    (a retrieved system's over another language's corpus or a pooled one: "English and Hindi"),
    else the record's ``passage_language``, else its question's language."""
    named = [p.get("language") for p in record["passages"]]
    codes = list(dict.fromkeys(named)) if named and all(named) else [record.get("passage_language") or record["language"]]
    names = [language_name(code) for code in codes]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def bergen_strings(language: str) -> dict[str, str]:
    """BERGEN's system prompts (with documents, and ``system_without_docs`` for closed-book) and
    user-prompt labels in ``language``."""
    table = load_strings("answer/bergen.yaml")
    default = table["default"]
    own = table["languages"].get(language)
    if own is None:
        log.warning("BERGEN has no translated prompt for %r; using English with a reply-in instruction", language)
        reply = default["reply_in"].format(language=language_name(language))
        return {"system": f"{default['system']} {reply}",
                "system_without_docs": f"{default['system_without_docs']} {reply}",
                "background": default["background"], "question": default["question"]}
    return {"background": default["background"], "question": default["question"], **own}


def answer_messages(style: str, record: dict) -> list[dict[str, str]]:
    """Chat messages asking for an answer to ``record`` (a data-stage question whose ``passages``
    are those the system is given). With no passages the prompt is the style's closed-book one: it
    says that no passages are given and asks for an answer without citations."""
    closed_book = not record["passages"]
    template = f"answer/{style}_closed_book.j2" if closed_book else f"answer/{style}.j2"
    variables = {
        "query": record["query"],
        "passages": record["passages"],
        "answer_language_name": language_name(record["language"]),
        "passage_language_name": passage_language_name(record),
    }
    if style in ("mirage", "memerag"):
        return [{"role": "user", "content": render(template, **variables)}]
    if style == "bergen":
        strings = bergen_strings(record["language"])
        return [
            {"role": "system", "content": strings["system_without_docs" if closed_book else "system"]},
            {"role": "user", "content": render(template, labels=strings, **variables)},
        ]
    raise ValueError(f"unknown prompt style {style!r}")


def refusal(language: str) -> str | None:
    """A mock system's refusal in ``language`` (None where ``mock_refusal.yaml`` has none: the mock
    backend stops if it needs it, config validation before any job)."""
    return load_strings("mock_refusal.yaml").get(language)
