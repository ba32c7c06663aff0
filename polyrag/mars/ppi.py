"""Prediction-powered inference (``ppi_py``) for a RAG system's score on one metric.

The judge labels every answer of the system (unlabelled, N) and the calibration set (labelled, n,
with human labels Y and judge labels Yhat). PPI's estimate is mean(Yhat_unlabelled) minus the
judge's bias measured on the calibration set, mean(Yhat - Y); its interval accounts for both
samples. ``ppi_py`` defaults to alpha=0.1 (90%), so alpha is always passed explicitly.

PPI is valid only when the calibration items are a random sample of the items being scored (a
labelled sample of the system's own answers). A calibration set built 50/50 per class is not: a
judge whose errors differ by class then pulls every score toward 0.5 (ARES has this flaw). For
such calibration sets use ``polyrag.mars.rogan_gladen``.
"""

from __future__ import annotations

import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from polyrag.mars.estimates import Estimate, interval_columns


def ppi_estimate(labels: np.ndarray, predictions: np.ndarray, unlabelled_predictions: np.ndarray, *, alpha: float,
                 power_tuning: bool) -> Estimate:
    """PPI (PPI++ with ``power_tuning``) estimate of the mean label of the unlabelled items with
    ``ppi_py``'s (normal) interval."""
    Y = np.asarray(labels, dtype=float)
    Yhat = np.asarray(predictions, dtype=float)
    Yhat_unlabelled = np.asarray(unlabelled_predictions, dtype=float)
    if len(Y) == 0 or len(Yhat_unlabelled) == 0:
        raise ValueError(f"PPI needs labelled and unlabelled items (got {len(Y)} and {len(Yhat_unlabelled)})")
    lam = None if power_tuning else 1.0  # None: PPI++ chooses lambda; 1: plain PPI
    low, high = (float(np.ravel(v)[0]) for v in ppi_mean_ci(Y, Yhat, Yhat_unlabelled, alpha=alpha, lam=lam))
    return Estimate(value=float(np.ravel(ppi_mean_pointestimate(Y, Yhat, Yhat_unlabelled, lam=lam))[0]),
                    low=low, high=high, estimator="ppi",
                    judge_positive_rate=float(Yhat_unlabelled.mean()), n_calibration=len(Y),
                    n_answers=len(Yhat_unlabelled))


def ppi_score(labels: np.ndarray, predictions: np.ndarray, unlabelled_predictions: np.ndarray, *, alpha: float,
              power_tuning: bool) -> dict:
    """:func:`ppi_estimate` as the columns of ``estimates.interval_columns``."""
    return interval_columns(ppi_estimate(labels, predictions, unlabelled_predictions, alpha=alpha,
                                         power_tuning=power_tuning))
