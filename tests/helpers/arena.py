"""Simulated arenas with a known answer, and independent computations to check polyrag's
statistics against: shared by the arena tests (and benchmarks/bench_judge_statistics.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize


def simulate_games(strengths: dict[str, float], n_questions: int, rng, tie_rate: float = 0.0,
                   first_position_bias: float = 0.0, question_bias_sd: float = 0.0) -> pd.DataFrame:
    """Every pair of models on every question, in both orders, won as a known BT model says; a
    judge with ``first_position_bias`` adds that much to the logit of the answer shown first,
    plus a question's own normal deviation of sd ``question_bias_sd`` (games of one question then
    share their position bias: clustered)."""
    models = sorted(strengths)
    rows = []
    for q in range(n_questions):
        question_bias = first_position_bias + (question_bias_sd * rng.normal() if question_bias_sd else 0.0)
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                for shown_first in (a, b):
                    bias = question_bias if shown_first == a else -question_bias
                    p_a = 1 / (1 + np.exp(strengths[b] - strengths[a] - bias))
                    if rng.random() < tie_rate:
                        verdict = "tie"
                    else:
                        verdict = "model_a" if rng.random() < p_a else "model_b"
                    rows.append({"query_id": f"q{q}", "model_a": a, "model_b": b, "shown_first": shown_first,
                                 "verdict": verdict})
    return pd.DataFrame(rows)


def maximum_likelihood(games: pd.DataFrame, models: list[str], penalty: float = 0.0) -> np.ndarray:
    """BT by direct maximum likelihood (scipy), game by game, ties as half a win each, minus
    ``penalty * sum(theta**2)``: independent of scikit-learn and of the win matrix."""
    index = {m: i for i, m in enumerate(models)}
    valid = games[games["verdict"] != "invalid"]
    a = valid["model_a"].map(index).to_numpy()
    b = valid["model_b"].map(index).to_numpy()
    share = valid["verdict"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()

    def negative_log_likelihood(theta):
        diff = theta[a] - theta[b]
        fit = (share * np.logaddexp(0, -diff) + (1 - share) * np.logaddexp(0, diff)).sum()
        return fit + penalty * (theta ** 2).sum()

    theta = minimize(negative_log_likelihood, np.zeros(len(models)), method="BFGS", options={"gtol": 1e-9}).x
    return theta - theta.mean()


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval written out (independent of scipy)."""
    p = k / n
    centre, half = p + z**2 / (2 * n), z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return (centre - half) / (1 + z**2 / n), (centre + half) / (1 + z**2 / n)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


#: Four models' true strengths, for the arenas of the judge diagnostics, panels and style control.
STRENGTHS = {"m0": 1.0, "m1": 0.4, "m2": -0.1, "m3": -0.6}


def simulate_clustered_games(strengths: dict[str, float], n_questions: int, rng, answer_sd: float = 0.0,
                             tie_rate: float = 0.0) -> pd.DataFrame:
    """Every pair of models on every question, in both orders, won as a known BT model says, each
    model's strength shifted on each question by a normal draw of sd ``answer_sd`` (how good its
    answer to that question is): the games of a question share its answers (clustered). A game is
    a tie with probability ``tie_rate``."""
    models = sorted(strengths)
    first, second = np.triu_indices(len(models), k=1)
    theta = np.array([strengths[m] for m in models])
    shifted = theta + answer_sd * rng.normal(size=(n_questions, len(models)))  # questions x models
    p = 1 / (1 + np.exp(shifted[:, second] - shifted[:, first]))  # questions x pairs: P(first wins)
    p = np.repeat(p[:, :, None], 2, axis=2)  # both orders
    tie = rng.random(p.shape) < tie_rate
    won = rng.random(p.shape) < p
    verdict = np.where(tie, "tie", np.where(won, "model_a", "model_b"))
    return games_frame(models, n_questions, verdict)


def games_frame(models: list[str], n_questions: int, verdict: np.ndarray) -> pd.DataFrame:
    """The games of every pair of ``models`` (``np.triu_indices`` order) on every question in both
    orders, from their verdicts (questions x pairs x 2 orders)."""
    first, second = np.triu_indices(len(models), k=1)
    names = np.array(models)
    shown_first = np.stack([np.broadcast_to(names[first], verdict.shape[:2]),
                            np.broadcast_to(names[second], verdict.shape[:2])], axis=2)
    return pd.DataFrame({
        "query_id": np.repeat([f"q{q}" for q in range(n_questions)], len(first) * 2),
        "model_a": np.tile(np.repeat(names[first], 2), n_questions),
        "model_b": np.tile(np.repeat(names[second], 2), n_questions),
        "shown_first": shown_first.ravel(), "verdict": verdict.ravel()})


def simulate_davidson_games(strengths: dict[str, float], nu: float, n_questions: int, rng,
                            answer_sd: float = 0.0) -> pd.DataFrame:
    """Every pair on every question in both orders, each game a win, loss or tie as Davidson's
    model says (``P(tie) = nu sqrt(pi_a pi_b) / (pi_a + pi_b + nu sqrt(pi_a pi_b))``), each
    model's strength shifted on each question by a normal draw of sd ``answer_sd``."""
    models = sorted(strengths)
    first, second = np.triu_indices(len(models), k=1)
    theta = np.array([strengths[m] for m in models])
    shifted = theta + answer_sd * rng.normal(size=(n_questions, len(models)))
    half = (shifted[:, first] - shifted[:, second]) / 2
    weights = np.stack([np.exp(half), np.exp(-half), np.full(half.shape, nu)], axis=-1)  # a, b, tie
    p = np.repeat((weights / weights.sum(axis=-1, keepdims=True))[:, :, None, :], 2, axis=2)
    draw = rng.random(p.shape[:3])
    verdict = np.where(draw < p[..., 0], "model_a", np.where(draw < p[..., 0] + p[..., 1], "model_b", "tie"))
    return games_frame(models, n_questions, verdict)
