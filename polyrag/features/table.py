"""Feature tables: aligning answers with their questions, writing and merging feature files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.errors import DataError


def align(records: list[dict], answers: list[dict], data_path: str, answers_path: str) -> list[dict]:
    """The answers in the order of the questions; stops when the two files disagree on query_ids."""
    by_id = {a["query_id"]: a for a in answers}
    question_ids = [r["query_id"] for r in records]
    missing = [q for q in question_ids if q not in by_id]
    extra = sorted(set(by_id) - set(question_ids))
    if missing or extra or len(by_id) != len(answers):
        raise DataError(
            f"{answers_path} does not match {data_path}: {len(missing)} questions without an answer "
            f"(e.g. {missing[:3]}), {len(extra)} answers to unknown questions (e.g. {extra[:3]}), "
            f"{len(answers) - len(by_id)} duplicated answers; rerun the generation for this model"
        )
    return [by_id[q] for q in question_ids]


def read_aligned(questions_path: str, answers_path: str) -> tuple[list[dict], list[dict]]:
    """The questions of a data file and one model's answers to them, in the same order."""
    from polyrag.data.records import read_questions

    records = read_questions(questions_path)
    return records, align(records, pq.read_table(answers_path).to_pylist(), questions_path, answers_path)


def write_features(rows: list[dict], columns: list[str], path: str | Path) -> None:
    """``query_id`` and float feature columns; None is written as null, never as 0 or NaN."""
    schema = pa.schema([("query_id", pa.string())] + [(c, pa.float64()) for c in columns])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def merge_feature_files(paths: list[str | Path], output: str | Path) -> None:
    """Join feature groups of one model and language on ``query_id`` (same questions, same order)."""
    tables = [pq.read_table(p) for p in paths]
    ids = tables[0].column("query_id").to_pylist()
    merged = tables[0]
    for path, table in zip(paths[1:], tables[1:]):
        if table.column("query_id").to_pylist() != ids:
            raise DataError(f"{path}: its query_ids differ from those of {paths[0]}")
        for name in table.column_names[1:]:
            if name in merged.column_names:
                raise DataError(f"{path}: feature {name!r} is also in another feature file")
            merged = merged.append_column(name, table.column(name))
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(merged, output)


def read_aligned_languages(questions_paths: list[str], answers_paths: list[str]):
    """(questions, answers) of one model per language, in the order of the paths: a feature job
    covers every language of a model, so a feature model is loaded once."""
    for questions_path, answers_path in zip(questions_paths, answers_paths, strict=True):
        yield read_aligned(questions_path, answers_path)
