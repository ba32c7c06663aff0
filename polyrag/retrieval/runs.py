"""The run format every retriever and reranker writes and the retrieval metrics read.

A run is a pandas DataFrame with one row per (question, retrieved passage):

- ``query_id`` (str), ``docid`` (str): ids are strings always (``080`` stays ``080``);
- ``rank`` (int, 1-based within the question), ``score`` (float, higher is better);
- sorted by ``query_id``, then ``rank``. Equal scores are ranked by docid (ascending), so the
  same scores always give the same ranks whichever order the retriever returned them in.

Other columns may follow (a reranked run keeps ``first_stage_rank`` and ``first_stage_score``);
Parquet keeps them, the TREC format has no room for them. A question with no retrieved passage
has no rows (BM25 finds nothing for a question none of whose words are in the corpus).

Note for metrics: ``trec_eval`` and ``pytrec_eval`` ignore the rank column and order a question's
passages by score, breaking ties by docid in *descending* order; the ranks here break them in
ascending order. The two agree wherever scores differ.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from polyrag.errors import DataError

COLUMNS = ["query_id", "docid", "rank", "score"]
#: Bad rows named in one error before "... and N more".
SHOWN = 10


def make_run(query_ids: Iterable[str], docids: Iterable[str], scores: Iterable[float], **extra) -> pd.DataFrame:
    """A run from parallel sequences of (query_id, docid, score), in any order: ranked by score
    within each question, ties by docid. ``extra``: further columns, parallel to the others."""
    run = pd.DataFrame({"query_id": pd.Series(list(query_ids), dtype=object).astype(str),
                        "docid": pd.Series(list(docids), dtype=object).astype(str),
                        "score": np.asarray(list(scores), dtype=np.float64),
                        **{name: list(values) for name, values in extra.items()}})
    run = run.sort_values(["query_id", "score", "docid"], ascending=[True, False, True], kind="stable")
    run.insert(2, "rank", run.groupby("query_id").cumcount().astype(np.int64) + 1)
    return run.reset_index(drop=True)


def empty_run() -> pd.DataFrame:
    return make_run([], [], [])


def check_run(run: pd.DataFrame, source: str, rows: list[int] | None = None, unit: str = "row") -> pd.DataFrame:
    """``run`` with string ids and integer ranks, sorted, or a DataError naming ``source`` and each
    bad row (``rows``: each row's ``unit`` number in ``source``, a line of a TREC file; default 1, 2, ...)."""
    missing = [c for c in COLUMNS if c not in run.columns]
    if missing:
        raise DataError(f"{source}: a run needs the columns {', '.join(COLUMNS)}; missing: {', '.join(missing)}")
    rows = list(range(1, len(run) + 1)) if rows is None else rows
    problems = []
    seen: dict[tuple[str, str], int] = {}
    ranks: dict[tuple[str, int], int] = {}
    for row, query_id, docid, rank, score in zip(rows, run["query_id"], run["docid"], run["rank"], run["score"]):
        where = f"{unit} {row} (query {query_id!r}, docid {docid!r})"
        if not isinstance(query_id, str) or not isinstance(docid, str) or not query_id or not docid:
            problems.append(f"{where}: query_id and docid must be non-empty strings")
            continue
        whole = as_rank(rank)
        if whole is None:
            problems.append(f"{where}: rank {rank!r} is not a whole number of at least 1")
        elif (query_id, whole) in ranks:
            problems.append(f"{where}: rank {whole} repeats {unit} {ranks[query_id, whole]}")
        else:
            ranks[query_id, whole] = row
        if not isinstance(score, (int, float, np.number)) or isinstance(score, bool) or not math.isfinite(score):
            problems.append(f"{where}: score {score!r} is not a finite number")
        if (query_id, docid) in seen:
            problems.append(f"{where}: docid retrieved twice for this query (first at {unit} {seen[query_id, docid]})")
        else:
            seen[query_id, docid] = row
    if problems:
        more = f"; ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise DataError(f"{source}: {len(problems)} bad {unit}{'s' * (len(problems) != 1)} in the run: {'; '.join(problems[:SHOWN])}{more}")
    out = run.assign(rank=run["rank"].map(as_rank).astype(np.int64), score=run["score"].astype(np.float64))
    return out.sort_values(["query_id", "rank"], kind="stable").reset_index(drop=True)


def as_rank(value) -> int | None:
    """``value`` as a rank (1, "1", 1.0), or None if it is no whole number >= 1 ("1.5", "one", 0)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit():
            return None
        value = int(value)
    if isinstance(value, (int, np.integer)):
        return int(value) if value >= 1 else None
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value) and value >= 1:
        return int(value)
    return None


def write_trec(run: pd.DataFrame, path: str | Path, tag: str) -> None:
    """The standard 6-column TREC run file: ``qid Q0 docid rank score tag``, one line per row."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"a TREC run tag must be one word, not {tag!r}")
    for column in ("query_id", "docid"):
        spaced = run[column][run[column].str.contains(r"\s", regex=True)]
        if len(spaced):
            raise DataError(f"{path}: {column} {spaced.iloc[0]!r} holds whitespace, which a TREC run file cannot")
    lines = [f"{q} Q0 {d} {r} {s!r} {tag}\n" for q, d, r, s in
             zip(run["query_id"], run["docid"], run["rank"], run["score"].astype(float))]
    Path(path).write_text("".join(lines), encoding="utf-8")


def read_trec(path: str | Path) -> pd.DataFrame:
    """A TREC run file as a run (ids kept as strings; the tag column dropped), checked."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    records, rows = [], []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                raise DataError(f"{path}: line {number}: {len(fields)} fields; a TREC run line has 6 "
                                "(qid Q0 docid rank score tag)")
            query_id, _, docid, rank, score, _ = fields
            try:
                value = float(score)
            except ValueError:
                value = score  # refused by check_run with the line
            records.append((query_id, docid, rank, value))
            rows.append(number)
    run = pd.DataFrame.from_records(records, columns=COLUMNS)
    return check_run(run, str(path), rows, "line")


def write_run(run: pd.DataFrame, path: str | Path) -> None:
    """The run as Parquet, every column kept."""
    run.to_parquet(path, index=False)


def read_run(path: str | Path) -> pd.DataFrame:
    """A run written by ``write_run`` (or any Parquet with the run's columns), checked."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    run = pd.read_parquet(path)
    for column in ("query_id", "docid"):  # a numeric column written by another tool: ids must be strings
        if column in run.columns and not pd.api.types.is_string_dtype(run[column]):
            raise DataError(f"{path}: column {column} holds {run[column].dtype} values; ids must be strings")
    return check_run(run, str(path))
