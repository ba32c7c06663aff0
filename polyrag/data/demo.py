"""The embedded demo benchmark in resources/demo/{lang}.jsonl, written by this project."""

from __future__ import annotations

from pathlib import Path

from polyrag.data.io import read_jsonl
from polyrag.data.records import check_record

DEMO_DIR = Path("resources/demo")


def load_demo(language: str, directory: str | Path | None = None) -> list[dict]:
    path = Path(directory or DEMO_DIR) / f"{language}.jsonl"
    records = []
    for number, row in read_jsonl(path):
        check_record(row, str(path), number)
        records.append({**row, "query_id": str(row["query_id"]), "language": language, "passage_language": language})
    return records
