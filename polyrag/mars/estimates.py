"""A MARS score with its interval, and what every estimator shares: rescaling by the share of
questions answered, pooling strata, and the printed interval columns.

An estimate may be partly unknown: a stratum whose judge cannot tell the classes apart
(``rogan_gladen``) is not estimable, and its share of the score could be anything from 0 to its
weight. ``unknown_weight`` carries that share; the printed interval then widens by it and the
score is left empty rather than shown with a precision it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class Estimate:
    """``value`` (the estimable part of the score) with its interval ``low``..``high`` at the
    estimator's level (not yet clipped), and the share of the score left unknown (0 when
    everything is estimable)."""

    value: float
    low: float
    high: float
    estimator: str
    judge_positive_rate: float
    n_calibration: int
    n_answers: int
    true_positive_rate: float = np.nan
    false_positive_rate: float = np.nan
    unknown_weight: float = 0.0


def z_value(alpha: float) -> float:
    return float(norm.ppf(1 - alpha / 2))


def scaled(estimate: Estimate, share: float, n_answers: int) -> Estimate:
    """The estimate of a mean over answered items as a mean over all ``n_answers`` items, the
    unanswered ones counting 0 (known exactly): value, interval, unknown share and raw rate times
    the share answered."""
    return replace(estimate, value=estimate.value * share, low=estimate.low * share, high=estimate.high * share,
                   unknown_weight=estimate.unknown_weight * share,
                   judge_positive_rate=estimate.judge_positive_rate * share, n_answers=n_answers)


def pooled(estimates: Sequence[Estimate], weights: Sequence[float], independent: bool, n_calibration: int) -> Estimate:
    """Stratified estimate sum_k w_k theta_k. Strata with disjoint calibration rows and answers are
    independent: their intervals combine by MOVER (Zou & Donner 2008), which keeps each one's
    asymmetry and is the usual sqrt(sum w_k^2 se_k^2) for symmetric ones. Strata sharing
    calibration rows get the bound that holds under any correlation: the weighted sum of the limits."""
    w = np.asarray(weights, dtype=float)
    if not np.isclose(w.sum(), 1.0):
        raise ValueError(f"stratum weights must sum to 1, got {w.sum()}")
    column = lambda name: np.array([getattr(e, name) for e in estimates], dtype=float)  # noqa: E731
    value, low, high = column("value"), column("low"), column("high")
    if independent:
        pooled_low = w @ value - np.sqrt(np.sum((w * (value - low)) ** 2))
        pooled_high = w @ value + np.sqrt(np.sum((w * (high - value)) ** 2))
    else:
        pooled_low, pooled_high = w @ low, w @ high
    return Estimate(value=float(w @ value), low=float(pooled_low), high=float(pooled_high),
                    estimator=",".join(sorted({e.estimator for e in estimates})),
                    judge_positive_rate=float(w @ column("judge_positive_rate")), n_calibration=n_calibration,
                    n_answers=int(column("n_answers").sum()), unknown_weight=float(w @ column("unknown_weight")))


def interval_columns(estimate: Estimate) -> dict:
    """Score with its interval, clipped to [0, 1] (a share lies there; an interval that holds the
    truth still does after clipping). A partly unknown estimate has no score, and its interval
    reaches up by the unknown share."""
    clip = lambda value: min(max(value, 0.0), 1.0)  # noqa: E731
    known = estimate.unknown_weight == 0
    return {
        "score": clip(estimate.value) if known else np.nan,
        "ci_low": clip(estimate.low),
        "ci_high": clip(estimate.high + estimate.unknown_weight),
        "score_unclipped": estimate.value if known else np.nan,
        "estimator": estimate.estimator,
        "estimable": known,
        "judge_positive_rate": estimate.judge_positive_rate,
        "judge_true_positive_rate": estimate.true_positive_rate,
        "judge_false_positive_rate": estimate.false_positive_rate,
        "n_calibration": estimate.n_calibration,
        "n_answers": estimate.n_answers,
    }
