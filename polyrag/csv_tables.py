"""Reading back the CSV tables polyrag writes, with names kept as text.

A plain ``pd.read_csv`` turns a model named ``NA`` into NaN and ``080`` into the integer 80, so
every CSV polyrag reads goes through ``read_table``: the columns that hold names (models, judges,
languages, question and unit ids) are read as strings, and only an empty cell is missing there;
the other columns keep pandas' usual parsing (numbers, and ``NA``/``nan``/empty as missing).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pandas._libs.parsers import STR_NA_VALUES

#: Columns of polyrag's tables (and of the files users give it) whose cells are names or ids.
NAME_COLUMNS = frozenset({
    "model", "model_a", "model_b", "model_left", "model_right", "shown_first", "contestant",
    "judge", "other_judge", "other_judges", "label_anchored_by", "evaluator", "vs_evaluator", "roles", "family",
    "lang", "language", "mars_languages", "doc_lang", "qa_lang", "pair",
    "query_id", "unit_id", "sentence_id",
    "system", "generator", "retriever", "reranker", "docid",
})
DEFAULT_NA = sorted(STR_NA_VALUES)


def read_table(path: str | Path, sep: str = ",", name_columns: tuple[str, ...] = (), **options) -> pd.DataFrame:
    """``path`` with its name columns (``NAME_COLUMNS``, and this table's own ``name_columns``) as
    text: ``NA``, ``None``, ``080`` stay as written and an empty cell is NaN; every other column is
    parsed as ``pd.read_csv`` would."""
    header = pd.read_csv(path, sep=sep, nrows=0).columns
    names = [column for column in header if column in NAME_COLUMNS or column in name_columns]
    return pd.read_csv(path, sep=sep, dtype={column: str for column in names}, keep_default_na=False,
                       na_values={column: [""] if column in names else DEFAULT_NA for column in header}, **options)


def read_text_table(path: str | Path, sep: str = ",", **options) -> pd.DataFrame:
    """A user's table of text (every cell a string, an empty cell ""): nothing parsed as a number or NaN."""
    return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, **options)
