"""Prediction-powered inference (``ppi_py``) for a RAG system's score on one metric.

The judge labels every answer of the system (unlabelled, N) and the reference set (labelled, n,
with human labels Y and judge labels Yhat). PPI's estimate is mean(Yhat_unlabelled) minus the
judge's bias measured on the reference set, mean(Yhat - Y); its interval accounts for both
samples. ``ppi_py`` defaults to alpha=0.1 (90%), so alpha is always passed explicitly.

Estimates are kept with their standard error (read off ``ppi_py``'s normal interval) so that they
can be rescaled (:func:`scaled`: the share of questions answered) and pooled over strata
(:func:`pooled`: the language pairs of one system) before the interval is formed.

The estimate can leave [0, 1] when the judge's bias on the reference set exceeds the room left
(a judge that says yes to everything here but is too generous there); a share lies in [0, 1],
so the estimate and interval are clipped to it (an interval that contains the truth still does),
and the unclipped estimate is kept in ``score_unclipped``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm


@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error, PPI's and the reference labels' alone (classical)."""

    value: float
    se: float
    classical: float
    classical_se: float
    judge_positive_rate: float
    n_reference: int
    n_answers: int


def z_value(alpha: float) -> float:
    return float(norm.ppf(1 - alpha / 2))


def ppi_estimate(labels: np.ndarray, predictions: np.ndarray, unlabelled_predictions: np.ndarray, *, alpha: float,
                 power_tuning: bool) -> Estimate:
    """PPI (PPI++ with ``power_tuning``) estimate of the mean label of the unlabelled items."""
    Y = np.asarray(labels, dtype=float)
    Yhat = np.asarray(predictions, dtype=float)
    Yhat_unlabelled = np.asarray(unlabelled_predictions, dtype=float)
    if len(Y) == 0 or len(Yhat_unlabelled) == 0:
        raise ValueError(f"PPI needs labelled and unlabelled items (got {len(Y)} and {len(Yhat_unlabelled)})")
    lam = None if power_tuning else 1.0  # None: PPI++ chooses lambda; 1: plain PPI
    z = z_value(alpha)
    low, high = (float(np.ravel(v)[0]) for v in ppi_mean_ci(Y, Yhat, Yhat_unlabelled, alpha=alpha, lam=lam))
    classical_low, classical_high = (float(np.ravel(v)[0]) for v in classical_mean_ci(Y, alpha=alpha))
    return Estimate(
        value=float(np.ravel(ppi_mean_pointestimate(Y, Yhat, Yhat_unlabelled, lam=lam))[0]),
        se=(high - low) / (2 * z), classical=float(Y.mean()), classical_se=(classical_high - classical_low) / (2 * z),
        judge_positive_rate=float(Yhat_unlabelled.mean()), n_reference=len(Y), n_answers=len(Yhat_unlabelled))


def scaled(estimate: Estimate, share: float, n_answers: int) -> Estimate:
    """The estimate of a mean over answered items as a mean over all ``n_answers`` items, the
    unanswered ones counting 0: value, SE and raw rate times the share answered."""
    return replace(estimate, value=estimate.value * share, se=estimate.se * share,
                   judge_positive_rate=estimate.judge_positive_rate * share, n_answers=n_answers)


def pooled(estimates: Sequence[Estimate], weights: Sequence[float], independent: bool, n_reference: int) -> Estimate:
    """Stratified estimate sum_k w_k theta_k. Strata with disjoint reference rows and answers are
    independent: SE = sqrt(sum w_k^2 se_k^2). Strata sharing reference rows get the bound that holds
    under any correlation, SE = sum w_k se_k (conservative)."""
    w = np.asarray(weights, dtype=float)
    if not np.isclose(w.sum(), 1.0):
        raise ValueError(f"stratum weights must sum to 1, got {w.sum()}")

    def combined_se(values: np.ndarray) -> float:
        return float(np.sqrt(np.sum((w * values) ** 2))) if independent else float(np.sum(w * values))

    column = lambda name: np.array([getattr(e, name) for e in estimates], dtype=float)  # noqa: E731
    return Estimate(value=float(w @ column("value")), se=combined_se(column("se")),
                    classical=float(w @ column("classical")), classical_se=combined_se(column("classical_se")),
                    judge_positive_rate=float(w @ column("judge_positive_rate")), n_reference=n_reference,
                    n_answers=int(column("n_answers").sum()))


def interval_columns(estimate: Estimate, alpha: float) -> dict:
    """Score with its (1 - alpha) interval, clipped to [0, 1], the classical interval of the labels
    alone beside it, and the judge's raw positive rate on the system's answers."""
    z = z_value(alpha)
    clip = lambda value: min(max(value, 0.0), 1.0)  # noqa: E731
    return {
        "score": clip(estimate.value),
        "ci_low": clip(estimate.value - z * estimate.se),
        "ci_high": clip(estimate.value + z * estimate.se),
        "score_unclipped": estimate.value,
        "classical_score": estimate.classical,
        "classical_ci_low": estimate.classical - z * estimate.classical_se,
        "classical_ci_high": estimate.classical + z * estimate.classical_se,
        "judge_positive_rate": estimate.judge_positive_rate,
        "n_reference": estimate.n_reference,
        "n_answers": estimate.n_answers,
    }


def ppi_score(labels: np.ndarray, predictions: np.ndarray, unlabelled_predictions: np.ndarray, *, alpha: float,
              power_tuning: bool) -> dict:
    """:func:`ppi_estimate` as the columns of :func:`interval_columns`."""
    return interval_columns(ppi_estimate(labels, predictions, unlabelled_predictions, alpha=alpha,
                                         power_tuning=power_tuning), alpha)
