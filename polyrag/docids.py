"""What a docid may be, checked where docids are read: a system's answer file and its corpus
(``polyrag.systems.answer_files``), a retrieval corpus (``polyrag.retrieval.corpus``) and question
data (``polyrag.data.records``).

An answer cites a passage as ``[docid]``, several as ``[a, b]`` or ``[a; b]``
(``polyrag.answer_parsing``), and a TREC run file holds a docid as one whitespace-separated field.
A docid holding a bracket, a separator, whitespace or an invisible control or format character
would be mis-cited (``d1,d2`` read as ``d1`` and ``d2``) or break a run file hours later, so it is
refused where it is first read, naming the file and line; so is a docid longer than
``MAX_LENGTH`` characters and one that is no text or whole number (``{"a": 1}``).
"""

from __future__ import annotations

import math
import unicodedata
from numbers import Integral

from polyrag.answer_parsing import BRACKETS, SEPARATOR_CHARACTERS
from polyrag.errors import DataError

#: Characters no docid may hold: citation syntax.
FORBIDDEN = BRACKETS + SEPARATOR_CHARACTERS
#: The longest docid accepted, in characters (MIRACL's are under 20; a chunk adds ``#N``).
MAX_LENGTH = 200
RULE = (f"a docid is text of at most {MAX_LENGTH} characters without whitespace, control characters or any of "
        f"{' '.join(FORBIDDEN)}")


def as_docid(value: object) -> str:
    """``value`` as a docid: a text, or a whole number written as its digits (JSON, Parquet and a
    numeric column with nulls, read as floats, can hold one). Raises ValueError saying what is
    wrong with any other value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError("no docid")
    if isinstance(value, bool):
        raise ValueError(f"docid {value!r} is no text; {RULE}")
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if not isinstance(value, str):
        raise ValueError(f"docid {value!r} is a {type(value).__name__}, no text; {RULE}")
    if not value:
        raise ValueError("no docid")
    fault = docid_fault(value)
    if fault:
        raise ValueError(f"docid {value[:MAX_LENGTH]!r} {fault}; {RULE}")
    return value


def docid_fault(docid: str) -> str | None:
    """What is wrong with the text ``docid`` (None: nothing)."""
    if len(docid) > MAX_LENGTH:
        return f"has {len(docid)} characters"
    for char in docid:
        if char.isspace():
            return "holds whitespace"
        if unicodedata.category(char)[0] == "C":
            return f"holds the control character U+{ord(char):04X}"
        if char in FORBIDDEN:
            return f"holds {char!r}, which citations use"
    return None


def checked_docid(value: object, where: str) -> str:
    """``as_docid(value)``, or a DataError naming ``where`` (a file and line) and what is wrong."""
    try:
        return as_docid(value)
    except ValueError as error:
        raise DataError(f"{where}: {error}") from None
