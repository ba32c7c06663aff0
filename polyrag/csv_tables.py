"""Writing the CSV tables meant for people, and reading back the CSV tables polyrag writes, with
names kept as text.

``write_table`` writes every float with ``SIGNIFICANT_DIGITS`` significant digits (0.7512, 12.35,
1235, 1.235e-05; no trailing zeros): a CSV is read by people, and sixteen digits of a bootstrap
mean are noise. The same call writes the table's full-precision twin beside it
(``full_precision_path``: the same name, ``.parquet``), and everything that computes on such a
table (later jobs, the checks, ``polyrag.show``) reads the twin with ``read_full_table``: two
scores that round alike keep their order, and a bound that rounds onto a value keeps its side.

A plain ``pd.read_csv`` turns a model named ``NA`` into NaN and ``080`` into the integer 80, so
every CSV polyrag reads goes through ``read_table``: the columns that hold names (models, judges,
languages, question and unit ids) are read as strings, and only an empty cell is missing there;
the other columns keep pandas' usual parsing (numbers, and ``NA``/``nan``/empty as missing).
"""

from __future__ import annotations

import math
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
#: Significant digits of the floats in a CSV meant for people.
SIGNIFICANT_DIGITS = 4


def significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> str:
    """``value`` with ``digits`` significant digits, in positional notation from 0.001 up (no
    exponent for large numbers: 123457 rather than 1.235e+05), without trailing zeros."""
    if not math.isfinite(value):
        return str(value)  # inf, -inf (NaN is written as an empty cell before this is asked)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude < -3:
        return f"{value:.{digits - 1}e}"
    text = f"{value:.{max(digits - 1 - magnitude, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def full_precision_path(path: str | Path) -> Path:
    """Where ``write_table`` puts the full-precision twin of the CSV at ``path``."""
    return Path(path).with_suffix(".parquet")


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """``table`` as a CSV for people: floats with ``SIGNIFICANT_DIGITS`` significant digits,
    missing values as empty cells, no index; and as Parquet at full precision beside it
    (``full_precision_path``), which a rule declares as an output too."""
    table.to_csv(path, index=False, float_format=significant)
    table.to_parquet(full_precision_path(path), index=False)


def read_full_table(path: str | Path) -> pd.DataFrame:
    """The full-precision twin of a table ``write_table`` wrote (``path``: the CSV or the twin)."""
    twin = full_precision_path(path)
    if not twin.exists():
        raise FileNotFoundError(f"{twin}: the full-precision twin of {Path(path).with_suffix('.csv')} is missing; "
                                "rerun the workflow (snakemake) to write it beside the CSV")
    return pd.read_parquet(twin)


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
