"""CSV cells that a spreadsheet must not run as formulas (CSV injection).

Model output, questions, passages and labels from data files are untrusted text. A cell that
begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice
and Google Sheets as a formula (``=HYPERLINK("http://...","click")``). Following the OWASP rule,
such a text cell gets a leading single quote, which a spreadsheet shows as text.

Only text cells are touched: numbers (numeric columns, and text cells that are a plain number such
as ``-0.5``, which a spreadsheet reads as that number and cannot run) stay as they are, so a table
polyrag reads back numerically is unchanged. The quote is added so that :func:`restore` undoes it
exactly: a value that already begins with quotes before a formula character gets one more, and
:func:`restore` strips one quote only from such values. JSONL and Label Studio exports are
written exact, never through this module.
"""

from __future__ import annotations

import csv
import re

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _formula_like(text: str) -> bool:
    return text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text)


def neutralise(value):
    """``value`` with a leading ``'`` if a spreadsheet would read it as a formula; anything that is
    not a string (a number, None, NaN) unchanged."""
    if isinstance(value, str) and _formula_like(value.lstrip("'")):
        return "'" + value
    return value


def restore(value):
    """The value :func:`neutralise` was given (the inverse on strings; other values unchanged)."""
    if isinstance(value, str) and value.startswith("'") and _formula_like(value.lstrip("'")):
        return value[1:]
    return value


def _text_columns(frame: pd.DataFrame, columns) -> list:
    if columns is not None:
        return list(columns)
    return [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])
            and not pd.api.types.is_bool_dtype(frame[c]) and not pd.api.types.is_datetime64_any_dtype(frame[c])]


def for_spreadsheet(frame: pd.DataFrame, columns=None) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (in ``columns``, default every non-numeric column)
    cannot run as formulas. Numeric columns are never changed."""
    out = frame.copy()
    for column in _text_columns(frame, columns):
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(neutralise)
    return out


def from_spreadsheet(frame: pd.DataFrame, columns=None) -> pd.DataFrame:
    """A CSV written with :func:`for_spreadsheet` as it was before (its text cells restored)."""
    out = frame.copy()
    for column in _text_columns(frame, columns):
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(restore)
    return out


def write_csv_for_people(frame: pd.DataFrame, path, columns=None) -> None:
    """``frame`` as a CSV file with :func:`for_spreadsheet` applied and every text cell quoted:
    pandas leaves a cell with a bare carriage return unquoted, which splits its row in two for
    any reader (a spreadsheet, ``pandas.read_csv``). Numbers stay unquoted, read as numbers."""
    for_spreadsheet(frame, columns).to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)
