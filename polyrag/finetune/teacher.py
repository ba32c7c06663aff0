"""Teacher answers on the training questions: the MIRAGE answer prompt with only the relevant
passages (the oracle's), so the teacher cites what it should and never has to ignore a distractor."""

from __future__ import annotations

from polyrag.generate.answers import generate_answers
from polyrag.llm.client import LLM
from polyrag.systems.passages import ORACLE, passages_for


def relevant_only(record: dict) -> dict:
    """``record`` with its passages cut to the relevant ones (in their original order)."""
    return {**record, "passages": passages_for(record, ORACLE)}


def teachable(records: list[dict]) -> list[dict]:
    """The questions a teacher can answer from relevant passages (curation counts the others)."""
    return [r for r in records if passages_for(r, ORACLE)]


def teacher_answers(llm: LLM, records: list[dict], settings: dict) -> list[dict]:
    """One answer row per teachable question (the generation stage's schema and parsing), from the
    generation prompt of ``settings`` (the teacher's generation settings) over the relevant
    passages only (``passages: oracle``, whatever the teacher's own entry says; its rows record
    them). Requests go through ``llm``'s cache: a rerun or a second student pays nothing."""
    return generate_answers(llm, teachable(records), {**settings, "passages": ORACLE})
