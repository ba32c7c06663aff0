"""Bradley-Terry logits with bootstrap intervals over arena questions (MIRAGE-BENCH).

The fit is choix's I-LSR on the win matrix with a small regularisation ``alpha`` (a pseudo-count
of wins added between every pair), so a model that wins or loses every game still gets a finite
logit. If I-LSR does not converge, the fit falls back to choix's ``opt_pairwise`` (maximum
likelihood with an L2 penalty). Logits are natural-log strengths centred to mean 0:
P(i beats j) = 1 / (1 + exp(logit_j - logit_i)).
"""

from __future__ import annotations

import logging

import choix
import numpy as np
import pandas as pd

from polyrag.arena.games import question_win_matrices, tally
from polyrag.errors import DataError

log = logging.getLogger(__name__)


def fit_logits(wins: np.ndarray, alpha: float) -> np.ndarray:
    """Centred BT logits from a win matrix (``wins[i, j]``: wins of i over j, fractional for ties)."""
    try:
        params = choix.ilsr_pairwise_dense(wins, alpha=alpha, max_iter=1000)
    except RuntimeError as error:  # choix raises when I-LSR does not converge
        log.warning("I-LSR did not converge (%s); falling back to opt_pairwise", error)
        params = choix.opt_pairwise(len(wins), games_list(wins), alpha=alpha)
    return params - params.mean()


def games_list(wins: np.ndarray) -> list[tuple[int, int]]:
    """The win matrix as (winner, loser) pairs for ``opt_pairwise``; every count doubled so that
    half wins (ties) are whole games. Doubling the data leaves the maximum-likelihood estimate as
    it is (the penalty weighs relatively half as much)."""
    doubled = np.rint(2 * wins).astype(int)
    return [(i, j) for i, j in zip(*np.nonzero(doubled)) for _ in range(doubled[i, j])]


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
