"""Labelled examples from positive (question, passage, answer) triples, with negatives as MARS builds them.

- CR negative: the question with a random other passage;
- AR negative: the question with another question's answer;
- AF negative: half of them from a random passage (CR negatives), half from another answer
  (AR negatives), so that both ways an answer can be unsupported are seen;
- LC negative: the answer in the wrong language, kept only when it differs from the positive
  answer (SQuAD/BERGEN normalisation) and the language detector names the wrong language as its
  language. Parallel answers are often the same string in both languages (names, numbers: 30% of
  XQuAD en/de) and short ones often cannot be told apart; such a negative would label the positive
  itself LC=0, so it is dropped, the LC label of its positive is left empty too (LC stays
  balanced), and the drop is counted (:func:`lc_negative_drops`).

Each metric gets as many negatives as positives. A label that a corruption does not determine is
left empty (None), never guessed: a CR negative says nothing about answer relevance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from polyrag.errors import DataError
from polyrag.features.bergen import normalize
from polyrag.features.language import detected_language
from polyrag.mars.labels import COLUMNS, LABEL_COLUMNS

CR, AR, AF, LC = (LABEL_COLUMNS[m] for m in ("cr", "ar", "af", "lc"))


def different_picks(values: Sequence[str], pool: Sequence[str], rng: np.random.Generator, what: str) -> list[str]:
    """For each value, a uniformly drawn element of ``pool`` whose text differs from it."""
    unique = sorted(set(pool))
    if len(unique) < 2:
        raise DataError(f"cannot build {what} negatives: fewer than 2 distinct texts to draw from")
    picks = []
    for value in values:
        while True:
            pick = unique[int(rng.integers(len(unique)))]
            if pick != value:
                picks.append(pick)
                break
    return picks


def lc_negative_problem(answer: str, wrong_answer: str, wrong_lang: str) -> str | None:
    """Why ``wrong_answer`` cannot be a language-consistency negative of ``answer``, or None."""
    if not str(wrong_answer).strip():
        return "empty"
    if normalize(str(wrong_answer)) == normalize(str(answer)):
        return "same_as_positive"
    if detected_language(str(wrong_answer), wrong_lang) != wrong_lang:
        return "not_detected_as_wrong_language"
    return None


def lc_negative_problems(positives: pd.DataFrame) -> pd.Series:
    """Per positive row, why its wrong-language answer is no LC negative (None: it is one).

    ``positives`` has Answer, Wrong_Language_Answer and wrong_lang."""
    missing = [c for c in ("Wrong_Language_Answer", "wrong_lang") if c not in positives.columns]
    if missing:
        raise DataError(f"language-consistency negatives need the column {missing[0]!r}")
    return pd.Series([lc_negative_problem(a, w, lang) for a, w, lang in
                      zip(positives["Answer"], positives["Wrong_Language_Answer"].fillna(""), positives["wrong_lang"])],
                     index=positives.index, dtype=object)


def lc_negative_drops(problems: pd.Series) -> dict[str, int]:
    """Counts of dropped LC negatives by reason (every reason present, zeros included)."""
    return {reason: int((problems == reason).sum())
            for reason in ("empty", "same_as_positive", "not_detected_as_wrong_language")}


def corrupted(positives: pd.DataFrame, metric: str, rng: np.random.Generator,
              passage_pool: Sequence[str] | None = None) -> pd.DataFrame:
    """The metric's negative version of every positive row (texts only; labels set by the caller).

    ``af`` alternates: even positions take a random passage, odd ones another answer. ``lc``
    needs rows whose wrong-language answer is a valid negative (:func:`lc_negative_problems`).
    """
    out = positives.copy()
    passages = list(passage_pool) if passage_pool is not None else list(positives["Document"])
    if metric == "cr":
        out["Document"] = different_picks(out["Document"], passages, rng, "context relevance")
    elif metric == "ar":
        out["Answer"] = different_picks(out["Answer"], list(positives["Answer"]), rng, "answer relevance")
    elif metric == "af":
        half = np.arange(len(out)) % 2 == 0
        out.loc[half, "Document"] = different_picks(out.loc[half, "Document"], passages, rng, "faithfulness")
        out.loc[~half, "Answer"] = different_picks(out.loc[~half, "Answer"], list(positives["Answer"]), rng,
                                                   "faithfulness")
    elif metric == "lc":
        problems = lc_negative_problems(out)
        if problems.notna().any():
            raise DataError(f"{int(problems.notna().sum())} rows have no valid wrong-language answer for language "
                            f"consistency: {lc_negative_drops(problems)}")
        out["Answer"] = out["Wrong_Language_Answer"]
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return out


def with_negatives(positives: pd.DataFrame, rng: np.random.Generator,
                   passage_pool: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Positives (all four labels 1) followed by CR, AR and LC negatives, in the ARES/MARS columns,
    and the counts of LC negatives dropped by reason.

    ``positives`` has Query, Document, Answer, Wrong_Language_Answer, wrong_lang, doc_lang and
    qa_lang (plus any id columns, which are kept). AF negatives are a seeded half of the CR
    negatives and the complementary half of the AR negatives, so AF is balanced too. A positive
    without a valid LC negative has no LC label either.
    """
    n = len(positives)
    base = positives.reset_index(drop=True)
    problems = lc_negative_problems(base)
    has_lc_negative = problems.isna().to_numpy()
    positive = base.assign(**{CR: 1.0, AR: 1.0, AF: 1.0, LC: np.where(has_lc_negative, 1.0, np.nan)})
    af_from_passage = np.zeros(n, dtype=bool)
    af_from_passage[rng.permutation(n)[: n // 2]] = True

    cr_neg = corrupted(base, "cr", rng, passage_pool).assign(**{CR: 0.0, AR: None, LC: None})
    cr_neg[AF] = np.where(af_from_passage, 0.0, np.nan)
    ar_neg = corrupted(base, "ar", rng).assign(**{CR: None, AR: 0.0, LC: None})
    ar_neg[AF] = np.where(~af_from_passage, 0.0, np.nan)

    lc_neg = corrupted(base[has_lc_negative], "lc", rng).assign(**{CR: None, AR: None, AF: None, LC: 0.0})

    frames = [positive.assign(kind="positive"), cr_neg.assign(kind="cr_negative"),
              ar_neg.assign(kind="ar_negative"), lc_neg.assign(kind="lc_negative")]
    table = pd.concat(frames, ignore_index=True)
    for column in LABEL_COLUMNS.values():
        table[column] = table[column].astype("float64")
    extra = [c for c in table.columns if c not in COLUMNS]
    return table[COLUMNS + extra], lc_negative_drops(problems)


def label_counts(table: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Positives and negatives per metric (rows whose label is empty are not counted)."""
    return {
        metric: {"positive": int((table[column] == 1).sum()), "negative": int((table[column] == 0).sum())}
        for metric, column in LABEL_COLUMNS.items()
    }
