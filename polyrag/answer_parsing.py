"""Parsing of model outputs into reason, answer and cited docids.

Citations are bracketed docids in IEEE style: ``[a#0]``, ``[a#0, b#1]`` or ``[a#0][b#1]``.
They are read with a regular expression, never ``ast.literal_eval`` (which treats ``#`` as a
comment and silently loses ``[377253#0, 88#2]``). Only docids of the passages the system was
given count; anything else in brackets (``[1]``, ``[citation needed]``, a docid a closed-book
model remembers) is ignored.

It imports nothing of polyrag, so that every package that reads answers (generation, the mock
LLM, systems read from files, features, judges, the arena's style control) can import it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

#: What opens and closes a citation, and what separates the docids of one: no docid may hold them
#: (``polyrag.docids`` refuses such a docid where it is read).
BRACKETS = "[]"
SEPARATOR_CHARACTERS = ",;，、"
BRACKET = re.compile(r"\[([^\[\]\n]{1,500})\]")
SEPARATORS = re.compile(rf"\s*[{SEPARATOR_CHARACTERS}]\s*")
REASON_HEADER = re.compile(r"^[ \t]*#{1,6}[ \t]*reason[ \t]*:?", re.IGNORECASE | re.MULTILINE)
ANSWER_HEADER = re.compile(r"^[ \t]*#{1,6}[ \t]*answer[ \t]*:?", re.IGNORECASE | re.MULTILINE)


def has_visible_text(text: str | None) -> bool:
    """Whether ``text`` has a character one can see: not whitespace (a no-break space included) nor
    an invisible format or control character (a zero-width space, a joiner). An answer without one
    is empty."""
    return any(not char.isspace() and unicodedata.category(char)[0] not in "CZ" for char in text or "")


def parse_citations(text: str, context_docids: Iterable[str]) -> list[str]:
    """Docids cited in ``text`` that belong to the context, unique, in order of first citation."""
    valid = set(context_docids)
    cited: list[str] = []
    for group in BRACKET.findall(text or ""):
        for token in SEPARATORS.split(group.strip()):
            if token in valid and token not in cited:
                cited.append(token)
    return cited


def strip_citations(text: str, context_docids: Iterable[str]) -> str:
    """The text with every bracket group that cites a context docid removed."""
    valid = set(context_docids)

    def drop(match: re.Match) -> str:
        tokens = SEPARATORS.split(match.group(1).strip())
        return "" if any(t in valid for t in tokens) else match.group(0)

    without = BRACKET.sub(drop, text or "")
    return re.sub(r"[ \t]+([.,;:!?。，、！？])", r"\1", re.sub(r"[ \t]{2,}", " ", without)).strip()


@dataclass
class ParsedAnswer:
    reason: str | None
    answer: str | None
    cited_docids: list[str]
    error: str | None


def parse_sectioned(raw: str, context_docids: Iterable[str]) -> ParsedAnswer:
    """Parse the MIRAGE format: ``##Reason: ...`` then ``##Answer: ...``.

    Citations are taken from the answer section. Output without an answer section is kept
    (the caller stores ``raw_output``) with an error and no answer.
    """
    docids = list(context_docids)
    answers = list(ANSWER_HEADER.finditer(raw or ""))
    if not answers:
        return ParsedAnswer(reason=None, answer=None, cited_docids=[], error="no '##Answer:' section in the output")
    answer_match = answers[0]
    answer = raw[answer_match.end():].strip()
    reason_match = REASON_HEADER.search(raw, 0, answer_match.start())
    reason = raw[reason_match.end():answer_match.start()].strip() if reason_match else None
    if not has_visible_text(answer):
        return ParsedAnswer(reason=reason, answer=None, cited_docids=[], error="empty '##Answer:' section")
    return ParsedAnswer(reason=reason or None, answer=answer, cited_docids=parse_citations(answer, docids), error=None)


def parse_plain(raw: str, context_docids: Iterable[str]) -> ParsedAnswer:
    """Parse a whole output as the answer (BERGEN and MEMERAG prompts ask for no sections)."""
    answer = (raw or "").strip()
    if not has_visible_text(answer):
        return ParsedAnswer(reason=None, answer=None, cited_docids=[], error="empty output")
    return ParsedAnswer(reason=None, answer=answer, cited_docids=parse_citations(answer, context_docids), error=None)
