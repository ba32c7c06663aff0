"""Answer sentences with the docids each one cites.

Sentences are split with ``pysbd`` for the languages it knows (zh, ja, hi, ar, ... included) and
on sentence-final punctuation otherwise. Thai has neither: it writes no sentence punctuation and
separates sentences (and often clauses) with a space, so Thai is split on runs of whitespace
outside citation brackets; a clause is then scored as a sentence, which is the usual approximation.
Citations that open a segment ("... city. [a#0] Next") belong to the sentence before them.
"""

from __future__ import annotations

import re
from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES

from polyrag.answer_parsing import BRACKET, parse_citations, strip_citations

SENTENCE_END = re.compile(r"(?<=[.!?。！？।؟])\s+|(?<=[。！？])")
THAI_BREAK = re.compile(r"\s+(?![^\[\]\n]*\])")  # whitespace not inside "[a#0, b#1]"
LEADING_CITATIONS = re.compile(r"^\s*((?:\[[^\[\]\n]+\]\s*)+)")


@lru_cache(maxsize=None)
def segmenter(language: str) -> pysbd.Segmenter | None:
    return pysbd.Segmenter(language=language, clean=False) if language in LANGUAGE_CODES else None


def split_sentences(text: str, language: str) -> list[str]:
    if language == "th":
        parts = THAI_BREAK.split(text)
    else:
        seg = segmenter(language)
        parts = seg.segment(text) if seg is not None else SENTENCE_END.split(text)
    return [p for p in (part.strip() for part in parts) if p]


def cited_sentences(answer: str, language: str, context_docids: list[str]) -> list[tuple[str, list[str]]]:
    """``(sentence without citations, docids it cites)`` for every sentence of the answer."""
    pieces: list[str] = []
    for part in split_sentences(answer, language):
        leading = LEADING_CITATIONS.match(part)
        if leading and pieces:
            pieces[-1] += " " + leading.group(1).strip()
            part = part[leading.end():]
        if part.strip():
            pieces.append(part)
    out = []
    for sentence in pieces:
        text = strip_citations(sentence, context_docids)
        if text and not BRACKET.fullmatch(text):
            out.append((text, parse_citations(sentence, context_docids)))
    return out
