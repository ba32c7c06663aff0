"""The question record every loader produces, its validation, and its Parquet layout.

A record is a dict with ``query_id, query, passages`` (list of ``{docid, title, text}``),
``relevant_docids``, ``reference_answer`` (may be None), ``language`` (of the question) and
``passage_language``. The data stage adds ``arena`` (selected for pairwise judging).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.docids import checked_docid
from polyrag.errors import DataError
from polyrag.seeds import stable_seed

PASSAGE = pa.struct([("docid", pa.string()), ("title", pa.string()), ("text", pa.string())])
SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("query", pa.string()),
        ("passages", pa.list_(PASSAGE)),
        ("relevant_docids", pa.list_(pa.string())),
        ("reference_answer", pa.string()),
        ("language", pa.string()),
        ("passage_language", pa.string()),
        ("arena", pa.bool_()),
    ]
)


def require(row: Mapping[str, Any], fields: Iterable[str], source: str, row_number: int) -> None:
    """Stop with the file and row when a field is missing or null."""
    if not isinstance(row, Mapping):
        raise DataError(f"{source}: row {row_number}: expected an object, got {type(row).__name__}")
    for name in fields:
        if name not in row or row[name] is None:
            raise DataError(f"{source}: row {row_number}: missing field {name!r}")


def check_record(record: Mapping[str, Any], source: str, row_number: int) -> None:
    """A record is usable for RAG: passages with unique docids that citations can name
    (``polyrag.docids``), relevant docids among them."""
    require(record, ("query_id", "query", "passages", "relevant_docids"), source, row_number)
    where = f"{source}: row {row_number} (query_id {record['query_id']})"
    if not str(record["query"]).strip():
        raise DataError(f"{where}: empty query")
    if not record["passages"]:
        raise DataError(f"{where}: no passages")
    docids = []
    for k, passage in enumerate(record["passages"]):
        for name in ("docid", "text"):
            if not isinstance(passage, Mapping) or passage.get(name) in (None, ""):
                raise DataError(f"{where}: passage {k} has no {name!r}")
        checked_docid(passage["docid"], f"{where}: passage {k}")
        docids.append(passage["docid"])
    if len(set(docids)) != len(docids):
        duplicated = sorted({d for d in docids if docids.count(d) > 1})
        raise DataError(f"{where}: duplicated docids {duplicated}")
    stray = [d for d in record["relevant_docids"] if d not in set(docids)]
    if stray:
        raise DataError(f"{where}: relevant docids {stray} are not among its passages")


def make_record(
    source: str,
    row_number: int,
    *,
    query_id: Any,
    query: str,
    passages: list[dict],
    relevant_docids: list[str],
    language: str,
    passage_language: str | None = None,
    reference_answer: str | None = None,
) -> dict:
    """A checked record; ``source`` and ``row_number`` name the upstream row in errors."""
    record = {
        "query_id": str(query_id),
        "query": query,
        "passages": passages,
        "relevant_docids": [str(d) for d in relevant_docids],
        "reference_answer": reference_answer,
        "language": language,
        "passage_language": passage_language or language,
    }
    check_record(record, source, row_number)
    return record


def subsample(records: list[dict], limit: int | None, *seed_parts: object) -> list[dict]:
    """A seeded random subset of at most ``limit`` records, kept in their original order. Records are
    drawn by question id (each id gets a rank seeded by ``seed_parts`` and the id), so that parallel
    data (the same ids in every language: the demo, XQuAD) keep the same questions in every language
    when ``seed_parts`` name no language: a mock system's wrong-language answer is then the same
    question's answer in another language, not another question's."""
    if limit is None or len(records) <= limit:
        return records
    ranks = [(stable_seed(*seed_parts, record["query_id"]), i) for i, record in enumerate(records)]
    keep = {i for _, i in sorted(ranks)[:limit]}
    return [r for i, r in enumerate(records) if i in keep]


def mark_arena(records: list[dict], arena_queries: int, *seed_parts: object) -> list[dict]:
    """Flag a seeded sample of ``arena_queries`` questions for pairwise judging."""
    chosen = {r["query_id"] for r in subsample(records, arena_queries, "arena", *seed_parts)}
    return [{**r, "arena": r["query_id"] in chosen} for r in records]


def to_table(records: list[dict]) -> pa.Table:
    rows = [
        {
            "query_id": str(r["query_id"]),
            "query": r["query"],
            "passages": [{"docid": p["docid"], "title": p.get("title") or "", "text": p["text"]} for p in r["passages"]],
            "relevant_docids": [str(d) for d in r["relevant_docids"]],
            "reference_answer": r.get("reference_answer"),
            "language": r["language"],
            "passage_language": r.get("passage_language", r["language"]),
            "arena": bool(r.get("arena", False)),
        }
        for r in records
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def write_questions(records: list[dict], path: str | Path) -> None:
    ids = [str(r["query_id"]) for r in records]
    if len(set(ids)) != len(ids):
        duplicated = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise DataError(f"{path}: duplicated query_ids {duplicated}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_table(records), path)


def read_questions(path: str | Path) -> list[dict]:
    """Records from a data-stage Parquet file (lists as Python lists)."""
    return pq.read_table(path).to_pylist()
