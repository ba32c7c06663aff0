"""Teacher answers on the training questions: the MIRAGE answer prompt with only the relevant
passages, so the teacher cites what it should and never has to ignore a distractor."""

from __future__ import annotations

from polyrag.generate.answers import generate_answers
from polyrag.llm.client import LLM


def relevant_only(record: dict) -> dict:
    """``record`` with its passages cut to the relevant ones (in their original order)."""
    relevant = set(record["relevant_docids"])
    return {**record, "passages": [p for p in record["passages"] if p["docid"] in relevant]}


def teachable(records: list[dict]) -> list[dict]:
    """The questions a teacher can answer from relevant passages (curation counts the others)."""
    return [relevant_only(r) for r in records if set(r["relevant_docids"]) & {p["docid"] for p in r["passages"]}]


def teacher_answers(llm: LLM, records: list[dict], settings: dict) -> list[dict]:
    """One answer row per teachable question (the generation stage's schema and parsing), from the
    generation prompt of ``settings`` (the teacher's generation settings) over the relevant
    passages only. Requests go through ``llm``'s cache: a rerun or a second student pays nothing."""
    return generate_answers(llm, teachable(records), settings)
