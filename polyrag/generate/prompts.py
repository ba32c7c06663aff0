"""Answer-generation messages for one question, in the style chosen by ``generation.prompt``."""

from __future__ import annotations

import logging

from polyrag.prompts import load_strings, render

log = logging.getLogger(__name__)

#: How each prompt style's output is parsed: MIRAGE asks for ##Reason / ##Answer sections.
ANSWER_FORMAT = {"mirage": "sections", "memerag": "plain", "bergen": "plain"}


def language_name(code: str) -> str:
    return load_strings("languages.yaml").get(code, code)


def bergen_strings(language: str) -> dict[str, str]:
    table = load_strings("answer/bergen.yaml")
    default = table["default"]
    own = table["languages"].get(language)
    if own is None:
        log.warning("BERGEN has no translated prompt for %r; using English with a reply-in instruction", language)
        reply = default["reply_in"].format(language=language_name(language))
        return {"system": f"{default['system']} {reply}", "background": default["background"], "question": default["question"]}
    return {"background": default["background"], "question": default["question"], **own}


def answer_messages(style: str, record: dict) -> list[dict[str, str]]:
    """Chat messages asking for an answer to ``record`` (a data-stage question)."""
    variables = {
        "query": record["query"],
        "passages": record["passages"],
        "answer_language_name": language_name(record["language"]),
        "passage_language_name": language_name(record.get("passage_language") or record["language"]),
    }
    if style == "mirage":
        return [{"role": "user", "content": render("answer/mirage.j2", **variables)}]
    if style == "memerag":
        return [{"role": "user", "content": render("answer/memerag.j2", **variables)}]
    if style == "bergen":
        strings = bergen_strings(record["language"])
        return [
            {"role": "system", "content": strings["system"]},
            {"role": "user", "content": render("answer/bergen.j2", labels=strings, **variables)},
        ]
    raise ValueError(f"unknown prompt style {style!r}")


def refusal(language: str) -> str | None:
    """A mock system's refusal in ``language`` (None where ``mock_refusal.yaml`` has none: the mock
    backend stops if it needs it, config validation before any job)."""
    return load_strings("mock_refusal.yaml").get(language)
