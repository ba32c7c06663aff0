"""Curation of teacher answers into training examples (MIRAGE-BENCH appendix C).

A teacher answer is kept only if it parsed, is written in the question's language, and cites at
least one relevant passage. Each question is counted under the first reason that drops it (in the
order of ``DROP_REASONS``), so the counts add up to the number of questions.

A kept answer becomes the target completion of a prompt that holds *all* the question's passages,
the non-relevant ones added back as distractors and the order shuffled with a seeded generator, so
the student learns to find and cite the relevant passage among others. The prompt is the request
the generation stage sends the student at evaluation time (same template, same settings): train
and test prompts match token for token (``polyrag.llm.transformers_backend.prompt_ids`` encodes
both).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.answer_parsing import strip_citations
from polyrag.errors import DataError
from polyrag.features.language import detected_language, has_letters
from polyrag.generate.answers import build_requests
from polyrag.seeds import rng_for

DROP_REASONS = (
    "no_relevant_passage",  # the question has no relevant passage to teach from
    "teacher_error",  # the teacher's request failed (e.g. a prompt longer than its context)
    "parse_error",  # no ##Answer section, or an empty one
    "wrong_language",  # the answer is not in the question's language (langid, lingua where langid lacks it)
    "no_relevant_citation",  # the answer cites no relevant passage
    "response_prefix_mismatch",  # the student's prompt ends with a response prefix the answer does not start with
)

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("language", pa.string()),
        ("prompt", pa.string()),  # completion-style request (a response prefix), else null
        ("messages", pa.list_(MESSAGE)),  # chat request, else null
        ("completion", pa.string()),  # the teacher's answer: the target of the loss
        ("passage_docids", pa.list_(pa.string())),  # the order the student sees the passages in
    ]
)


def with_distractors(record: dict, seed: int) -> dict:
    """``record`` with every passage (relevant and distractor) in a seeded random order."""
    order = rng_for(seed, "sft-distractors", record["language"], record["query_id"]).permutation(len(record["passages"]))
    return {**record, "passages": [record["passages"][int(i)] for i in order]}


def answer_language_text(row: dict, docids: list[str]) -> str:
    """The answer without its citations; the reason where the answer has no letters (a year)."""
    answer = strip_citations(row["answer"], docids)
    return answer if has_letters(answer) else strip_citations(row.get("reason") or "", docids)


def drop_reason(record: dict, row: dict | None, prefix: str) -> str | None:
    """Why the teacher's ``row`` cannot teach ``record`` (None: it can)."""
    docids = [p["docid"] for p in record["passages"]]
    relevant = set(record["relevant_docids"]) & set(docids)
    if not relevant:
        return "no_relevant_passage"
    if row is None:
        raise DataError(f"teacher answers: no row for question {record['query_id']!r} ({record['language']})")
    if row["raw_output"] is None:
        return "teacher_error"
    if row["error"] or not row["answer"]:
        return "parse_error"
    if detected_language(answer_language_text(row, docids), record["language"]) != record["language"]:
        return "wrong_language"
    if not relevant & set(row["cited_docids"]):
        return "no_relevant_citation"
    if prefix and not row["raw_output"].startswith(prefix):
        return "response_prefix_mismatch"
    return None


def empty_counts() -> dict:
    return {"questions": 0, "kept": 0, "dropped": dict.fromkeys(DROP_REASONS, 0)}


def curate(records: list[dict], teacher_rows: dict[str, list[dict]], student_settings: dict,
           seed: int) -> tuple[list[dict], dict]:
    """Training examples and the counts behind them.

    ``records`` are the training questions (any languages), ``teacher_rows`` the teacher's answers
    per language (:func:`polyrag.finetune.teacher.teacher_answers`; query ids repeat across languages
    in parallel data), ``student_settings`` the student's generation settings
    (``polyrag.config.generation_settings``). Counts: ``{"total": {...}, "by_language":
    {lang: {...}}}``, each ``{"questions", "kept", "dropped": {reason: n}}``."""
    by_id: dict[tuple[str, str], dict] = {}
    known = {(r["language"], r["query_id"]) for r in records}
    for language, rows in teacher_rows.items():
        for row in rows:
            key = (language, row["query_id"])
            if key not in known:
                raise DataError(f"teacher answers ({language}): row for question {row['query_id']!r}, "
                                "which is not a training question")
            by_id[key] = row
    prefix = student_settings.get("response_prefix") or ""
    totals, per_language = empty_counts(), {}
    examples = []
    for record in records:
        counts = per_language.setdefault(record["language"], empty_counts())
        reason = drop_reason(record, by_id.get((record["language"], record["query_id"])), prefix)
        for bucket in (counts, totals):
            bucket["questions"] += 1
            if reason:
                bucket["dropped"][reason] += 1
            else:
                bucket["kept"] += 1
        if reason:
            continue
        shown = with_distractors(record, seed)
        request = build_requests([shown], student_settings)[0]
        raw = by_id[(record["language"], record["query_id"])]["raw_output"]
        examples.append({
            "query_id": record["query_id"],
            "language": record["language"],
            "prompt": request.prompt,
            "messages": request.messages,
            # After a prefix the text goes on exactly as the teacher wrote it (a leading space included).
            "completion": raw[len(prefix):].rstrip() if prefix else raw.strip(),
            "passage_docids": [p["docid"] for p in shown["passages"]],
        })
    return examples, {"total": totals, "by_language": per_language}


def write_examples(examples: list[dict], path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(examples, schema=SCHEMA), path)


def read_examples(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: training examples not found")
    table = pq.read_table(path)
    missing = [name for name in SCHEMA.names if name not in table.column_names]
    if missing:
        raise DataError(f"{path}: training examples lack columns {missing}")
    return table.to_pylist()


def write_counts(counts: dict, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n", encoding="utf-8")
