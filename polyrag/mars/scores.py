"""MARS scores of one RAG system: its answers labelled by the trained judges, corrected with the
calibration set: by the judge's confusion matrix (``rogan_gladen``, the default, valid whatever the
calibration set's class balance) or by PPI (``ppi``, valid only when the calibration rows are a
random sample of the system's own answers). ``estimator`` names which one each row used.

Each answer becomes a (Query, Document, Answer) item: of the passages its system was given, those it
cites (all of them when it cites none), and the answer with its citations removed. Context relevance
thus judges what the system was given. A question without a parsed answer scores 0 on the
answer-based metrics (AR, AF, LC): no answer is neither relevant, faithful nor in the right language.
A system given no passage (closed-book) scores 0 on the document-based CR and AF: nothing relevant
was given, nothing grounds the answer. Such items are not judged: the correction applies to the
judge's labels of the items it can read (the calibration set holds no unanswered or document-less
item to measure an error on), and the estimate and its interval are scaled by the share judged.
Unanswered questions are counted in ``n_missing_answers``; LC, which asks whether the answer's
language suits the question, is judged without a document too.

The pooled ``all`` row is stratified over the system's own language keys, each corrected with
its own pair's calibration rows and weighted by its share of the system's questions; per-key
estimates are independent (disjoint answers and calibration rows), so their variances add.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.answer_parsing import strip_citations
from polyrag.mars.judges import binary
from polyrag.mars.labels import JUDGE_INPUTS, LABEL_COLUMNS, pair_of_language_key, split_pair
from polyrag.mars.estimates import Estimate, interval_columns, pooled, scaled
from polyrag.mars.ppi import ppi_estimate
from polyrag.mars.rogan_gladen import rogan_gladen_estimate
from polyrag.systems.passages import given_passages

ANSWER_BASED = {metric for metric, inputs in JUDGE_INPUTS.items() if "Answer" in inputs}
#: The metrics that score 0 without a document: whether what was given is relevant, whether the
#: answer is grounded in it.
DOCUMENT_BASED = {"cr", "af"}


def system_items(records: list[dict], answers: list[dict]) -> pd.DataFrame:
    """One judge item per question, answers aligned with their questions (``features.table.align``)."""
    rows = []
    for record, answer in zip(records, answers):
        given = given_passages(answer, record)
        cited = set(answer["cited_docids"] or [])
        passages = [p["text"] for p in given if p["docid"] in cited] or [p["text"] for p in given]
        text = strip_citations(answer["answer"], [p["docid"] for p in given]).strip() if answer["answer"] else ""
        rows.append({"query_id": record["query_id"], "Query": record["query"],
                     "Document": "\n\n".join(passages) if passages else None, "Answer": text or None})
    return pd.DataFrame(rows)


def judge_labels(items: pd.DataFrame, judges: dict, metrics: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric, the judge's 0/1 labels of the items it can read and which items those are: the
    answer-based judges read only answered items, CR and AF only items with a document. LC reads an
    item without a document with an empty one."""
    labels = {}
    has_answer = items["Answer"].notna().to_numpy()
    # items of answer-based metrics alone may come without a Document column
    has_document = items["Document"].notna().to_numpy() if "Document" in items else np.ones(len(items), dtype=bool)
    for metric in metrics:
        usable = np.ones(len(items), dtype=bool)
        if metric in ANSWER_BASED:
            usable &= has_answer
        if metric in DOCUMENT_BASED:
            usable &= has_document
        readable = items[usable].fillna({"Document": ""})  # LC: an empty document
        judged = binary(judges[metric].predict_proba(readable)) if usable.any() else np.zeros(0)
        labels[metric] = (judged, usable)
    return labels


def calibration_for(calibration: pd.DataFrame, pair: str, metric: str) -> tuple[pd.DataFrame, str]:
    """The calibration rows labelled for ``metric`` in ``pair``, or in every pair when it has none."""
    column = LABEL_COLUMNS[metric]
    passage_lang, question_lang = split_pair(pair)
    labelled = calibration[calibration[column].notna()]
    own = labelled[(labelled["doc_lang"] == passage_lang) & (labelled["qa_lang"] == question_lang)]
    return (own, "pair") if len(own) else (labelled, "all pairs")


def corrected_estimate(labels: np.ndarray, predictions: np.ndarray, judged: np.ndarray, scoring: dict) -> Estimate:
    """The judge's labels ``judged`` of a system's items corrected by its calibration labels, with
    the estimator ``scoring["estimator"]`` names."""
    if scoring["estimator"] == "ppi":
        return ppi_estimate(labels, predictions, judged, alpha=scoring["alpha"], power_tuning=scoring["power_tuning"])
    return rogan_gladen_estimate(labels, predictions, judged, alpha=scoring["alpha"])


def stratum_estimate(calibration: pd.DataFrame, metric: str, judged: np.ndarray, usable: np.ndarray,
                     scoring: dict) -> Estimate:
    """The corrected score over the items the judge read, as a share of all items: an unanswered
    question is not judged (the calibration set has no such item to correct its label with) and
    counts 0."""
    Y = calibration[LABEL_COLUMNS[metric]].to_numpy(dtype=float)
    Yhat = binary(calibration[f"prediction_{metric}"])
    # With no item judged the score is 0 exactly: any stand-in works, the scaling by 0 removes it.
    observed = judged if len(judged) else np.zeros(1)
    return scaled(corrected_estimate(Y, Yhat, observed, scoring), float(usable.mean()), len(usable))


def model_scores(items_by_lang: dict[str, pd.DataFrame], calibration: pd.DataFrame, judges: dict, metrics: list[str],
                 scoring: dict) -> pd.DataFrame:
    """Rows per (language key, metric), then ``all``: the pooled score over the system's own
    language keys, each weighted by its share of the system's questions (stratified: every key is
    corrected with its own calibration rows only).

    ``calibration`` carries the judges' probabilities in ``prediction_{metric}`` columns.
    """
    calibration = calibration.reset_index(drop=True)
    rows = []
    strata: dict[str, list[tuple[Estimate, pd.Index]]] = {m: [] for m in metrics}
    missing = {lang: int(items["Answer"].isna().sum()) for lang, items in items_by_lang.items()}
    for lang, items in items_by_lang.items():
        labels = judge_labels(items, judges, metrics)
        pair = pair_of_language_key(lang)
        for metric in metrics:
            ref, scope = calibration_for(calibration, pair, metric)
            estimate = stratum_estimate(ref, metric, *labels[metric], scoring)
            strata[metric].append((estimate, ref.index))
            rows.append(score_row(lang, metric, estimate, scope, missing[lang]))
    for metric in metrics:
        estimates, indexes = zip(*strata[metric])
        sizes = np.array([e.n_answers for e in estimates], dtype=float)
        used = indexes[0].append(list(indexes[1:])) if len(indexes) > 1 else indexes[0]
        independent = not used.has_duplicates  # no calibration row serves two strata
        estimate = pooled(estimates, sizes / sizes.sum(), independent, n_calibration=used.nunique())
        scope = "pairs scored" if independent else "pairs scored, shared calibration rows (conservative interval)"
        rows.append(score_row("all", metric, estimate, scope, sum(missing.values())))
    return pd.DataFrame(rows)


def score_row(lang: str, metric: str, estimate: Estimate, scope: str, missing: int) -> dict:
    return {"lang": lang, "metric": metric, **interval_columns(estimate), "n_missing_answers": missing,
            "calibration_scope": scope}
