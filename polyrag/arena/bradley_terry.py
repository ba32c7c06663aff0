"""Bradley-Terry logits with bootstrap intervals over arena questions (MIRAGE-BENCH).

Every tournament, the point fit and each bootstrap alike, is fitted by the same estimator: the
logits that maximise the log-likelihood of the games minus ``alpha * sum(logit**2)`` (choix's
``opt_pairwise`` penalty, a Gaussian prior with variance ``1 / (2 * alpha)``), so a model that
wins or loses every game still gets a finite logit. It is computed as an L2-regularised logistic
regression without intercept (scikit-learn, ``C = 1 / (2 * alpha)``) on the win matrix, one row
per pair and outcome weighted by its games, which is fast however many games there are.
Logits are natural-log strengths with mean 0 (the penalty centres them):
P(i beats j) = 1 / (1 + exp(logit_j - logit_i)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from polyrag.arena.games import question_win_matrices, tally
from polyrag.errors import DataError


def fit_logits(wins: np.ndarray, alpha: float) -> np.ndarray:
    """Centred, L2-penalised BT logits from a win matrix (``wins[i, j]``: wins of i over j,
    fractional for ties)."""
    n = len(wins)
    first, second = np.triu_indices(n, k=1)
    difference = np.zeros((len(first), n))
    difference[np.arange(len(first)), first] = 1.0
    difference[np.arange(len(first)), second] = -1.0
    # Each pair twice: y = 1 weighted by i's wins over j, y = 0 by j's wins over i. Rows of weight
    # 0 are kept so that both classes are always present.
    X = np.vstack([difference, difference])
    y = np.r_[np.ones(len(first)), np.zeros(len(first))]
    weight = np.r_[wins[first, second], wins[second, first]]
    regression = LogisticRegression(C=1 / (2 * alpha), fit_intercept=False, solver="newton-cholesky", tol=1e-10,
                                    max_iter=1000)
    params = regression.fit(X, y, sample_weight=weight).coef_[0]
    return params - params.mean()


def tournament_counts(n_questions: int, n_tournaments: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap tournaments: how often each question is drawn, resampling with replacement."""
    draws = rng.choice(n_questions, size=(n_tournaments, n_questions), replace=True)
    return np.array([np.bincount(row, minlength=n_questions) for row in draws])


def rank_ranges(logit: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best and worst rank each model can take given the intervals: a model is surely ahead of
    another only when their 95% intervals do not overlap."""
    surely_ahead = low[:, None] > high[None, :]  # [i, j]: i surely ahead of j
    best = 1 + surely_ahead.sum(axis=0)
    worst = len(logit) - surely_ahead.sum(axis=1)
    return best, worst


def bradley_terry(games: pd.DataFrame, models: list[str], alpha: float, n_bootstrap: int,
                  rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The leaderboard of one judge and language, the bootstrap logits, and the tournaments.

    Returns ``(table, bootstrap, tournaments)``: ``table`` has ``model, logit, ci_low, ci_high,
    rank, rank_best, rank_worst`` and the game counts; ``bootstrap`` has ``tournament, model,
    logit``; ``tournaments`` has ``tournament, query_id, count`` (the resampled questions, which
    the surrogate averages features over)."""
    counts = tally(games, models)
    unplayed = counts.loc[counts["games"] == 0, "model"].tolist()
    if unplayed:
        raise DataError(f"no valid game for {unplayed}: every verdict of their pairs is invalid or missing")
    questions, wins = question_win_matrices(games, models)
    logit = fit_logits(wins.sum(axis=0), alpha)
    counts_drawn = tournament_counts(len(questions), n_bootstrap, rng)
    samples = np.array([fit_logits(np.tensordot(drawn, wins, axes=1), alpha) for drawn in counts_drawn])
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    best, worst = rank_ranges(logit, low, high)
    table = pd.DataFrame({"model": models, "logit": logit, "ci_low": low, "ci_high": high,
                          "rank": pd.Series(-logit).rank(method="min").astype(int).to_numpy(),
                          "rank_best": best, "rank_worst": worst})
    table = table.merge(counts, on="model").sort_values(["rank", "model"], ignore_index=True)
    bootstrap = pd.DataFrame({"tournament": np.repeat(np.arange(n_bootstrap), len(models)),
                              "model": np.tile(models, n_bootstrap), "logit": samples.ravel()})
    tournament, question = np.nonzero(counts_drawn)
    drawn = pd.DataFrame({"tournament": tournament, "query_id": np.array(questions)[question],
                          "count": counts_drawn[tournament, question]})
    return table, bootstrap, drawn
