"""MARS meta-evaluation (section 5.2): mock RAG systems of known accuracy, ranked by MARS.

For a language pair and a metric, a mock system of accuracy r answers n gold XQuAD questions:
exactly round(r n) items are the gold triple (label 1) and the rest are that metric's negative
(``negatives.corrupted``, label 0; for LC only questions with a valid wrong-language negative).
Judges label every item; the calibration set of the pair corrects the judge's positive rate into
each system's estimated accuracy (``scores.stratum_estimate``). A good evaluator ranks the systems
as their accuracies are ordered: Kendall tau between true accuracies and the judge's raw positive
rates (``kendall_tau_raw``) and the corrected estimates (``kendall_tau_corrected``).

Each system's true accuracy is known, so the share of (pair, metric, system) cells whose interval
holds it is a direct check of the intervals on the workflow's own judges (:func:`coverage`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau
from sklearn.metrics import balanced_accuracy_score

from polyrag.mars.judges import binary
from polyrag.mars.labels import split_pair
from polyrag.mars.negatives import corrupted, lc_negative_problems
from polyrag.mars.scores import calibration_for, score_row, stratum_estimate
from polyrag.seeds import rng_for


def mock_items(gold: pd.DataFrame, metric: str, items: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(gold triples, their negatives for ``metric``): a seeded sample of ``items`` pool questions.
    For LC only questions whose wrong-language answer is a valid negative are drawn
    (``negatives.lc_negative_problems``): the others' negative would be the gold answer itself."""
    pool = gold[gold["role"] == "pool"].reset_index(drop=True)
    if metric == "lc":
        pool = pool[lc_negative_problems(pool).isna()].reset_index(drop=True)
    pool = pool.iloc[sorted(rng.permutation(len(pool))[:items])].reset_index(drop=True)
    return pool, corrupted(pool, metric, rng, passage_pool=pool["Document"].unique().tolist())


def mock_systems(gold: pd.DataFrame, pair: str, metric: str, judge, accuracies: list[float], items: int,
                 seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Per system: the true labels and the judge's 0/1 labels of its items; also the judge's
    labels of every gold item and of its negative (for the judge's own accuracy)."""
    rng = rng_for(seed, "mars", "mock-systems", pair, metric)
    pool, negatives = mock_items(gold, metric, items, rng)
    positive_labels = binary(judge.predict_proba(pool))
    negative_labels = binary(judge.predict_proba(negatives))
    systems = []
    for accuracy in accuracies:
        n = len(pool)
        truth = np.zeros(n)
        truth[rng.permutation(n)[: int(round(accuracy * n))]] = 1.0
        systems.append({"accuracy": accuracy, "true_score": truth.mean(),
                        "labels": np.where(truth == 1, positive_labels, negative_labels)})
    return pd.DataFrame(systems), positive_labels, negative_labels


def meta_evaluate(gold_by_pair: dict[str, pd.DataFrame], judges: dict, calibration: pd.DataFrame, metrics: list[str],
                  settings: dict, scoring: dict, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary per pair and metric, one row per mock system)."""
    summary, system_rows = [], []
    for pair, gold in sorted(gold_by_pair.items()):
        for metric in metrics:
            systems, on_positives, on_negatives = mock_systems(
                gold, pair, metric, judges[metric], settings["accuracies"], settings["items"], seed)
            ref, scope = calibration_for(calibration, pair, metric)
            for system in systems.itertuples():
                every_item = np.ones(len(system.labels), dtype=bool)
                estimate = stratum_estimate(ref, metric, system.labels, every_item, scoring)
                row = score_row(pair, metric, estimate, scope, 0)
                system_rows.append({"pair": pair, "metric": metric, "accuracy": system.accuracy,
                                    "true_score": system.true_score,
                                    **{k: v for k, v in row.items() if k not in ("lang", "metric", "n_missing_answers")},
                                    "covered": row["ci_low"] <= system.true_score <= row["ci_high"]})
            rows = pd.DataFrame(system_rows[-len(systems):])
            truth = np.r_[np.ones(len(on_positives)), np.zeros(len(on_negatives))]
            judged = np.r_[on_positives, on_negatives]
            passage_lang, question_lang = split_pair(pair)
            summary.append({
                "pair": pair, "doc_lang": passage_lang, "qa_lang": question_lang, "metric": metric,
                "systems": len(rows), "items_per_system": len(on_positives),
                "kendall_tau_raw": kendalltau(rows["true_score"], rows["judge_positive_rate"]).statistic,
                "kendall_tau_corrected": kendalltau(rows["true_score"], rows["score"]).statistic,
                "judge_accuracy": float((judged == truth).mean()),
                "judge_balanced_accuracy": float(balanced_accuracy_score(truth, judged)),
                "judge_true_positive_rate": rows["judge_true_positive_rate"].iloc[0],
                "judge_false_positive_rate": rows["judge_false_positive_rate"].iloc[0],
                "estimable": bool(rows["estimable"].all()),
                "mean_ci_width": float((rows["ci_high"] - rows["ci_low"]).mean()),
                "ci_coverage": float(rows["covered"].mean()),
                "n_calibration": int(rows["n_calibration"].iloc[0]), "calibration_scope": scope,
            })
    return pd.DataFrame(summary), pd.DataFrame(system_rows)


def coverage(systems: pd.DataFrame) -> pd.DataFrame:
    """Per metric, then over all (``metric == "all"``): the (pair, metric, system) cells, the share
    whose interval holds the system's true accuracy, the mean interval width, and the share of
    cells whose judge could measure the metric at all (``estimable``)."""
    def row(metric: str, cells: pd.DataFrame) -> dict:
        return {"metric": metric, "cells": len(cells), "coverage": float(cells["covered"].mean()),
                "mean_ci_width": float((cells["ci_high"] - cells["ci_low"]).mean()),
                "estimable_share": float(cells["estimable"].mean()), "estimator": ",".join(sorted(set(cells["estimator"])))}
    return pd.DataFrame([row(metric, cells) for metric, cells in systems.groupby("metric", sort=False)]
                        + [row("all", systems)])
