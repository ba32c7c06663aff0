"""The four MARS metrics, their ARES/MARS label columns, and what each judge reads."""

from __future__ import annotations

#: metric code -> label column of the ARES/MARS TSV schema
LABEL_COLUMNS = {
    "cr": "Context_Relevance_Label",
    "ar": "Answer_Relevance_Label",
    "af": "Answer_Faithfulness_Label",
    "lc": "Language_Consistency_Label",
}
METRICS = tuple(LABEL_COLUMNS)
TEXT_COLUMNS = ("Query", "Document", "Answer")
#: columns of every synthetic, calibration and mock-system table
COLUMNS = [*TEXT_COLUMNS, *LABEL_COLUMNS.values(), "doc_lang", "qa_lang"]

#: what each judge reads, as MARS gives it: AR never sees the passage, CR never sees the answer
JUDGE_INPUTS = {
    "cr": ("Query", "Document"),
    "ar": ("Query", "Answer"),
    "af": ("Query", "Document", "Answer"),
    "lc": ("Query", "Document", "Answer"),
}

#: label spellings found in ARES/MARS files
YES = {"1", "1.0", "yes", "[[yes]]", "true"}
NO = {"0", "0.0", "no", "[[no]]", "false"}


def parse_label(value: object, where: str) -> float | None:
    """1.0, 0.0 or None (no label) from an ARES/MARS cell; anything else is an error naming ``where``."""
    if value is None or (isinstance(value, float) and value != value) or str(value).strip() == "":
        return None
    text = str(value).strip().lower()
    if text in YES:
        return 1.0
    if text in NO:
        return 0.0
    raise ValueError(f"{where}: unknown label value {value!r} (expected Yes/No, [[Yes]]/[[No]] or 1/0)")


def pair_key(passage_lang: str, question_lang: str) -> str:
    """MARS names a language pair passage language first: ``en-de`` = passages en, questions de."""
    return f"{passage_lang}-{question_lang}"


def split_pair(pair: str) -> tuple[str, str]:
    passage_lang, question_lang = pair.split("-")
    return passage_lang, question_lang


def pair_of_language_key(key: str) -> str:
    """The MARS pair of a data language key (``q`` or ``q-p``: questions q, passages p)."""
    question_lang, _, passage_lang = key.partition("-")
    return pair_key(passage_lang or question_lang, question_lang)
