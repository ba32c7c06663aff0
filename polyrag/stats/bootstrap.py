"""The question bootstrap that intervals over questions share, and the ranks of scores.

Questions are the sampling unit: what is measured on one question (the games of its pairs, the
passages retrieved for it) is not independent, so a bootstrap resamples whole questions
(:func:`tournament_counts`: how often each question is drawn in each resample). An interval is
``point +- t(Q-1) * sqrt(Q / (Q-1)) * sd`` (:func:`bootstrap_interval`, :func:`critical_value`),
``sd`` the estimate's standard deviation over the resamples and ``Q`` the questions it rests on
(its clusters): the bootstrap variance of a mean over Q clusters is (Q-1)/Q of the unbiased one,
and the t quantile carries the uncertainty of a variance estimated from Q clusters.

The arena's Bradley-Terry fit (``polyrag.arena.bradley_terry``, which says what these intervals
covered), its diagnostics and style control use them; the retrieval leaderboard
(``polyrag.retrieval.metrics``) draws its questions and ranks its runs with them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import stdtrit  # Student's t quantile (what scipy.stats.t.ppf calls): scipy.stats
# takes 0.6 s to import, and Snakemake imports this module to plan the arena's rounds

# Below this many questions a question bootstrap has too few distinct resamples for an interval
# to mean much (with 2 questions there are 3): the workflow warns, and self-preference shows none.
MIN_BOOTSTRAP_QUESTIONS = 10


def rank_by(score) -> pd.Series:
    """Ranks, highest score first, ties sharing the best rank (float; NaN for a missing score).
    Scores are rounded to 1e-9 first: two models with the same games get logits that differ only
    by solver noise (-7.607e-17 against -7.649e-17), which must not order them."""
    return pd.Series(-np.round(np.asarray(score, dtype=float), 9)).rank(method="min")


def tournament_counts(n_questions: int, n_tournaments: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap tournaments: how often each question is drawn, resampling with replacement."""
    draws = rng.choice(n_questions, size=(n_tournaments, n_questions), replace=True)
    return np.array([np.bincount(row, minlength=n_questions) for row in draws])


def critical_value(n_questions, tail: float):
    """``t(Q-1)`` at ``1 - tail`` times ``sqrt(Q/(Q-1))``: the multiple of a bootstrap sd over
    ``n_questions`` clusters that an interval needs (the bootstrap variance is (Q-1)/Q of the
    unbiased one; the t quantile carries the uncertainty of a variance estimated from Q clusters).
    ``n_questions`` may be an array (one count per estimate): an array of critical values."""
    q = np.maximum(np.asarray(n_questions, dtype=int), 2)
    value = stdtrit(q - 1, 1 - tail) * np.sqrt(q / (q - 1))
    return float(value) if np.ndim(value) == 0 else value


def bootstrap_interval(point: np.ndarray, samples: np.ndarray, n_questions,
                       confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``point +- t(Q-1) sqrt(Q/(Q-1)) sd`` per column of ``samples`` (tournaments x estimates);
    ``n_questions``: one count for every column, or one per column."""
    half = critical_value(n_questions, (1 - confidence) / 2) * samples.std(axis=0, ddof=1)
    return point - half, point + half
