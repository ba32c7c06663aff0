"""Adaptive pair selection for the arena: judge calls go where they change the ranking.

The unit of choice is a *unit*: one question and one pair of models, judged in both orders (two
judge calls, two rows of the games table), as in the exhaustive design, which judges every unit
of ``C(N, 2) x Q``. A budget caps the units per judge and language (``parse_budget``).

Rounds:

- **Round 0** (``round_zero``) is the union of ``cycles`` seeded random Hamiltonian cycles over
  the models: each cycle alone connects every model (so every Bradley-Terry logit is identified
  by games, not by the penalty) with each model in exactly two pairs, the fewest games that
  connect N models with no model hanging on a single pair. Each pair gets ``block`` questions.
- **Round k** (``select_round``) fits Bradley-Terry on all games so far (``fit_logits``, the
  estimator of the leaderboard), takes the Fisher covariance of the penalised fit and greedily
  picks blocks of ``block`` questions of one pair each. A block on pair (i, j) brings
  ``w = 2 m p(1-p)`` units of information (``m`` questions, both orders, ``p`` the fitted
  probability that i beats j); its score is the drop it causes in ``sum r_kl Var(logit_k -
  logit_l)`` over all pairs (k, l) (a rank-one update, so pairs other than (i, j) count too).
  The weights ``r`` are the criterion: ``ranking`` (default) weighs each pair by the probability
  that its current order is wrong, ``Phi(-|d_kl| / sd_kl)``, so that settled pairs stop drawing
  calls, plus a ``floor`` (0.1) that every pair keeps: without it, pairs whose estimated gap came
  out too wide are left alone, the logits are pushed apart and the intervals under-cover
  (0.90-0.92 for 95% at a quarter of the units, docs/adaptive_arena.md); with it coverage is that
  of random selection and most of the
  gain in Kendall tau stays. ``information`` weighs all pairs alike (``floor`` 1: the A-optimal
  design, p(1-p) and variance alone);
  ``random`` picks unjudged units uniformly (the baseline). After each pick the covariance is
  updated, so one round spreads its picks instead of repeating the best pair. Round k has
  ``growth**k`` times the units of round 0 (1.5 by default): small rounds while the fit rests on
  few games, and few rounds in all (8 to spend half of the exhaustive design of 19 models, 10 for all).
- **Questions** of a pair are taken in a seeded order of that pair (``question_order``): block k
  of a pair is the next ``block`` questions of its order that it has not played. Orders do not
  depend on the other models, so a pair's questions stay the same when a model is added.
- **Stopping** (``next_round``): the budget is spent, every unit is judged, or the ranking is
  settled: every model's best and worst rank allowed by the bootstrap intervals (``intervals_and_ranks``)
  are equal, which holds exactly when every adjacent pair's 95% intervals are separated, or the
  bootstrap tournaments order fewer than ``tolerance`` (0.5) pairs unlike the point fit on
  average (``expected_discordant``); either only once every pair adjacent in the current order
  has games of its own (``adjacent_pairs_met``). The first rule alone almost never fires with 19 models (one
  adjacent pair whose intervals touch is enough); the second asks that the leaderboard be
  expected to have less than half a pair out of order, and never fires while tied models remain.
- **Placement** (``placement``): a model without games in an arena that has games plays first
  against its ``neighbours`` nearest models in the surrogate judge's predicted ranking (half
  above, half below), ``block`` questions each; later rounds treat it like any other model.

Everything is a function of its inputs and the seed: the same games, models, questions, budget
and seed give the same units.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr  # the standard normal CDF, without scipy.stats overhead in the loop

from polyrag.arena.bradley_terry import bradley_terry, fit_logits
from polyrag.arena.games import win_matrix
from polyrag.config.queries import EXHAUSTIVE, model_pairs
from polyrag.errors import ConfigError
from polyrag.seeds import rng_for

CRITERIA = ("ranking", "information", "random")
UNIT_COLUMNS = ["round", "model_a", "model_b", "query_id", "reason"]


@dataclass(frozen=True)
class AdaptiveSettings:
    block: int = 10  # questions of one pair per pick
    growth: float = 1.5  # round k (k >= 1) has growth**k times the units of round 0
    cycles: int = 1  # random Hamiltonian cycles in round 0
    criterion: str = "ranking"
    floor: float = 0.1  # weight every pair keeps under ``ranking`` however settled its order
    regularization: float = 0.01  # the Bradley-Terry penalty
    neighbours: int = 4  # placement opponents of a new model
    bootstrap: int = 100  # tournaments of the stopping rule each round; 0: stop on the budget alone
    tolerance: float = 0.5  # stop when the bootstrap expects fewer pairs than this out of order

    def __post_init__(self):
        if self.criterion not in CRITERIA:
            raise ConfigError(f"arena.adaptive.criterion: {self.criterion!r} is not one of {list(CRITERIA)}")
        for name in ("block", "cycles", "neighbours"):
            if getattr(self, name) < 1:
                raise ConfigError(f"arena.adaptive.{name}: {getattr(self, name)} must be at least 1")
        if self.tolerance < 0:
            raise ConfigError(f"arena.adaptive.tolerance: {self.tolerance} must not be negative")
        if not 0 <= self.floor <= 1:
            raise ConfigError(f"arena.adaptive.floor: {self.floor} is not in [0, 1]")
        if not self.growth >= 1:
            raise ConfigError(f"arena.adaptive.growth: {self.growth} must be at least 1")


def exhaustive_units(n_models: int, n_questions: int) -> int:
    """Units of the exhaustive design: every pair on every question (each unit is two calls)."""
    return n_models * (n_models - 1) // 2 * n_questions


def parse_budget(spec, n_models: int, n_questions: int, key: str = "arena.budget") -> int:
    """Units (question, pair judged in both orders) one language may spend.

    ``spec`` is ``"exhaustive"``, ``{"share": s}`` with 0 < s <= 1 (of the exhaustive design,
    rounded down) or ``{"games": n}`` (judge calls, two per unit, rounded down to whole units,
    capped at the exhaustive design). A budget must afford one question per pair of a cycle
    through all models (``n_models`` units, two for two models), else no ranking is identified."""
    total = exhaustive_units(n_models, n_questions)
    if spec == EXHAUSTIVE:
        return total
    if not isinstance(spec, Mapping) or len(spec) != 1 or next(iter(spec)) not in ("share", "games"):
        raise ConfigError(f"{key}: {spec!r} is not 'exhaustive', {{share: s}} or {{games: n}}")
    (kind, value), = spec.items()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key}.{kind}: {value!r} is not a number")
    if kind == "share":
        if not 0 < value <= 1:
            raise ConfigError(f"{key}.share: {value} is not in (0, 1]")
        units = math.floor(value * total + 1e-9)
    else:
        if value != int(value) or value < 1:
            raise ConfigError(f"{key}.games: {value} is not a positive whole number of judge calls")
        units = min(int(value) // 2, total)
    needed = n_models if n_models > 2 else 1
    if units < needed:
        raise ConfigError(f"{key}: {spec} gives {units} units ({2 * units} judge calls), fewer than the "
                          f"{needed} ({2 * needed} calls) that connect {n_models} models")
    return units


def planned_rounds(budget_units: int, n_models: int, settings: AdaptiveSettings) -> int:
    """Rounds that spend the budget when no stopping rule fires (round 0 included): a static
    number, so that every round is a known job of the workflow."""
    spent = min(round_zero_units(n_models, settings), budget_units)
    rounds = 1
    while spent < budget_units:
        spent += round_units(n_models, settings, rounds)
        rounds += 1
    return rounds


def round_units(n_models: int, settings: AdaptiveSettings, round_index: int) -> int:
    """Units of round ``round_index``: geometric, so that early rounds, chosen on few games, are
    small, and a budget of B units takes about log(B) rounds, not B / constant."""
    return math.ceil(round_zero_units(n_models, settings) * settings.growth ** round_index)


def round_zero_units(n_models: int, settings: AdaptiveSettings) -> int:
    pairs = 1 if n_models == 2 else min(settings.cycles * n_models, n_models * (n_models - 1) // 2)
    return pairs * settings.block


def question_order(questions: list[str], model_a: str, model_b: str, seed: int, lang: str) -> list[str]:
    """The seeded order in which a pair takes up questions; it depends on the pair alone."""
    return list(_question_order(tuple(sorted(questions)), *sorted((model_a, model_b)), seed, lang))


@functools.lru_cache(maxsize=4096)  # every round asks again for every pair
def _question_order(ordered: tuple[str, ...], a: str, b: str, seed: int, lang: str) -> tuple[str, ...]:
    return tuple(ordered[k] for k in rng_for(seed, "adaptive-questions", lang, a, b).permutation(len(ordered)))


def played_units(games: pd.DataFrame) -> set[tuple[str, str, str]]:
    """Distinct (model_a, model_b, query_id) with any game, invalid ones included (judging them
    again would return the cached verdict), pairs in sorted order."""
    a, b = games["model_a"].to_numpy(str), games["model_b"].to_numpy(str)
    return set(zip(np.where(a < b, a, b), np.where(a < b, b, a), games["query_id"].to_numpy(str)))


def units_frame(picks: list[tuple[str, str, list[str]]], round_index: int, reason: str) -> pd.DataFrame:
    rows = [(round_index, a, b, q, reason) for a, b, questions in picks for q in questions]
    return pd.DataFrame(rows, columns=UNIT_COLUMNS)


class QuestionQueue:
    """The questions each pair has not played yet, in its seeded order."""

    def __init__(self, models: list[str], questions: list[str], played: set[tuple[str, str, str]], seed: int,
                 lang: str):
        self.pairs = model_pairs(models)
        ordered = tuple(sorted(questions))
        self.left = {pair: [q for q in _question_order(ordered, *pair, seed, lang) if (*pair, q) not in played]
                     for pair in self.pairs}

    def take(self, pair: tuple[str, str], m: int) -> list[str]:
        taken, self.left[pair] = self.left[pair][:m], self.left[pair][m:]
        return taken


def questions_by_pair(units: pd.DataFrame) -> dict[tuple[str, str], list[str]]:
    """The question ids each pair of a round is judged on (in both orders): what one judging job
    of that pair reads from the round's file."""
    return {pair: frame["query_id"].tolist() for pair, frame in units.groupby(["model_a", "model_b"], sort=True)}


def round_zero(models: list[str], questions: list[str], settings: AdaptiveSettings, seed: int, lang: str,
               budget_units: int | None = None) -> pd.DataFrame:
    """Round 0: ``settings.cycles`` seeded random Hamiltonian cycles over the models (pairs shared
    by two cycles count once), ``block`` questions per pair, fewer when the budget is smaller."""
    rng = rng_for(seed, "adaptive-round0", lang)
    ordered = sorted(models)
    pairs: list[tuple[str, str]] = []
    for _ in range(settings.cycles):
        cycle = [ordered[k] for k in rng.permutation(len(ordered))]
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            pair = tuple(sorted((a, b)))
            if a != b and pair not in pairs:
                pairs.append(pair)
    block = settings.block
    if budget_units is not None:
        block = max(1, min(block, budget_units // len(pairs)))
    queue = QuestionQueue(models, questions, set(), seed, lang)
    units = units_frame([(a, b, queue.take((a, b), block)) for a, b in pairs], 0, "round0")
    return units if budget_units is None else units.iloc[:budget_units]


def placement(new_models: list[str], predicted: Mapping[str, float], games: pd.DataFrame, models: list[str],
              questions: list[str], settings: AdaptiveSettings, seed: int, lang: str,
              round_index: int) -> pd.DataFrame:
    """First units of models without games: ``block`` questions against each of the
    ``neighbours`` models with games nearest in the surrogate's predicted ranking (half above,
    half below, more on one side at the top or bottom). The ranking, not the logit scale, is
    compared: a tree-ensemble surrogate shrinks its predictions towards the middle."""
    missing = [m for m in models if m not in predicted]
    if missing:
        raise ConfigError(f"no surrogate prediction for {missing}: placement needs every model's predicted logit")
    judged = [m for m in models if m not in new_models]
    queue = QuestionQueue(models, questions, played_units(games), seed, lang)
    picks = []
    for new in new_models:
        above = sorted((m for m in judged if predicted[m] >= predicted[new]), key=lambda m: (predicted[m], m))
        below = sorted((m for m in judged if predicted[m] < predicted[new]), key=lambda m: (-predicted[m], m))
        k = min(settings.neighbours, len(judged))
        n_above = min(len(above), (k + 1) // 2)
        n_below = min(len(below), k - n_above)
        n_above = min(len(above), k - n_below)
        for opponent in above[:n_above] + below[:n_below]:
            pair = tuple(sorted((new, opponent)))
            picks.append((*pair, queue.take(pair, settings.block)))
    return units_frame(picks, round_index, "placement")


def fisher_covariance(wins: np.ndarray, logit: np.ndarray, regularization: float) -> np.ndarray:
    """Inverse Hessian of the penalised BT log-likelihood at ``logit``: every game of (i, j),
    a tie too, carries ``p(1-p)``; the penalty adds ``2 regularization`` on the diagonal."""
    p = 1 / (1 + np.exp(logit[None, :] - logit[:, None]))
    weight = (wins + wins.T) * p * (1 - p)
    np.fill_diagonal(weight, 0)
    hessian = np.diag(weight.sum(axis=1)) - weight + 2 * regularization * np.eye(len(logit))
    return np.linalg.inv(hessian)


def relevance(logit: np.ndarray, covariance: np.ndarray, criterion: str, floor: float) -> np.ndarray:
    """Weights r_kl of the pair differences in the design criterion, as a Laplacian matrix:
    ``information`` 1; ``ranking`` ``floor + (1 - floor) * Phi(-|d_kl| / sd_kl)``."""
    n = len(logit)
    if criterion == "information":
        r = np.ones((n, n))
    else:
        variance = np.diag(covariance)[:, None] + np.diag(covariance)[None, :] - 2 * covariance
        wrong = ndtr(-np.abs(logit[:, None] - logit[None, :]) / np.sqrt(np.maximum(variance, 1e-12)))
        r = floor + (1 - floor) * wrong
    np.fill_diagonal(r, 0)
    return np.diag(r.sum(axis=1)) - r


def select_round(games: pd.DataFrame, models: list[str], questions: list[str], n_units: int,
                 settings: AdaptiveSettings, seed: int, lang: str, round_index: int,
                 played: set[tuple[str, str, str]] | None = None) -> pd.DataFrame:
    """The next ``n_units`` units (fewer when fewer are left), chosen by ``settings.criterion``,
    with a ``score`` column: the drop in the design criterion of the pick the unit belongs to.
    ``played``: ``played_units(games)`` when the caller has it already."""
    queue = QuestionQueue(models, questions, played_units(games) if played is None else played, seed, lang)
    if settings.criterion == "random":
        left = [(a, b, q) for (a, b), qs in queue.left.items() for q in qs]
        chosen = rng_for(seed, "adaptive-random", lang, round_index).permutation(len(left))[:n_units]
        # in the order drawn, so that a smaller round is a prefix of a larger one
        frame = pd.DataFrame([(round_index, *left[k], "random") for k in chosen], columns=UNIT_COLUMNS)
        return frame.assign(score=np.nan)
    index = {m: i for i, m in enumerate(models)}
    wins = win_matrix(games, models)
    logit = fit_logits(wins, settings.regularization)
    covariance = fisher_covariance(wins, logit, settings.regularization)
    pairs = queue.pairs
    i = np.array([index[a] for a, _ in pairs])
    j = np.array([index[b] for _, b in pairs])
    p = 1 / (1 + np.exp(logit[j] - logit[i]))
    picks, scores = [], []
    left = n_units
    while left > 0:
        available = np.array([len(queue.left[pair]) for pair in pairs])
        m = np.minimum(np.minimum(available, settings.block), left)
        if not m.any():
            break
        w = 2 * m * p * (1 - p)
        weighted = covariance @ relevance(logit, covariance, settings.criterion, settings.floor) @ covariance
        # d = e_i - e_j; d'Cd and d'C R C d for every pair at once
        v = covariance[i, i] + covariance[j, j] - 2 * covariance[i, j]
        u = weighted[i, i] + weighted[j, j] - 2 * weighted[i, j]
        gain = np.where(m > 0, w * u / (1 + w * v), -np.inf)
        best = int(np.argmax(gain))
        a, b = pairs[best]
        picks.append((a, b, queue.take((a, b), int(m[best]))))
        scores += [gain[best]] * int(m[best])
        left -= int(m[best])
        d = covariance[:, i[best]] - covariance[:, j[best]]
        covariance = covariance - w[best] * np.outer(d, d) / (1 + w[best] * v[best])
    return units_frame(picks, round_index, settings.criterion).assign(score=scores)


def ranking_settled(table: pd.DataFrame) -> bool:
    """Every model's rank is pinned by the bootstrap intervals (``rank_best == rank_worst``),
    that is every adjacent pair's 95% intervals are separated."""
    return bool((table["rank_best"] == table["rank_worst"]).all())


def adjacent_pairs_met(table: pd.DataFrame, played: set[tuple[str, str, str]]) -> bool:
    """Every pair adjacent in the point fit's order has games of its own. Without them the order
    of two neighbours rests on their games against others alone, and a question bootstrap of a
    few such games can look certain (the demo: after round 0's cycle, 3 questions per pair, the
    intervals of a neighbour pair that never met were separated and in the wrong order)."""
    met = {(a, b) for a, b, _ in played}
    order = table.sort_values("logit", ascending=False)["model"].tolist()
    return all(tuple(sorted(pair)) in met for pair in zip(order, order[1:]))


def expected_discordant(table: pd.DataFrame, bootstrap: pd.DataFrame) -> float:
    """Pairs of models ordered unlike the point fit, averaged over the bootstrap tournaments: the
    expected Kendall distance between the leaderboard and a resampled one."""
    point = table.set_index("model")["logit"]
    samples = bootstrap.pivot(index="tournament", columns="model", values="logit")[point.index].to_numpy()
    point_order = np.sign(point.to_numpy()[:, None] - point.to_numpy()[None, :])
    sample_order = np.sign(samples[:, :, None] - samples[:, None, :])
    return float((sample_order != point_order).sum(axis=(1, 2)).mean() / 2)


def next_round(games: pd.DataFrame, models: list[str], questions: list[str], budget_units: int,
               settings: AdaptiveSettings, seed: int, lang: str, round_index: int,
               predicted: Mapping[str, float] | None = None) -> tuple[pd.DataFrame, str]:
    """The units of round ``round_index`` and why: ``round0``, ``placement``, the criterion, or
    the reason there are none: ``budget spent``, ``design exhausted``, ``ranking settled``.

    Models without games enter by ``placement`` when ``predicted`` (the surrogate's logits) is
    given and some model has games; otherwise an arena without games starts with round 0."""
    played = played_units(games)
    spent = len(played)
    left = budget_units - spent
    if left <= 0:
        return pd.DataFrame(columns=UNIT_COLUMNS), "budget spent"
    playing = {model for a, b, _ in played for model in (a, b)}
    new = [m for m in models if m not in playing]
    if len(new) == len(models):
        return round_zero(models, questions, settings, seed, lang, left), "round0"
    if new:
        if predicted is None:
            raise ConfigError(f"models {new} have no games: placing them needs the surrogate's predicted logits")
        units = placement(new, predicted, games, models, questions, settings, seed, lang, round_index)
        return units.iloc[:left], "placement"
    if spent >= exhaustive_units(len(models), len(questions)):
        return pd.DataFrame(columns=UNIT_COLUMNS), "design exhausted"
    if settings.bootstrap:
        table, bootstrap, _ = bradley_terry(games, models, settings.regularization, settings.bootstrap,
                                            rng_for(seed, "adaptive-bootstrap", lang, round_index))
        settled = ranking_settled(table) or expected_discordant(table, bootstrap) < settings.tolerance
        if settled and adjacent_pairs_met(table, played):
            return pd.DataFrame(columns=UNIT_COLUMNS), "ranking settled"
    n_units = min(left, round_units(len(models), settings, round_index))
    units = select_round(games, models, questions, n_units, settings, seed, lang, round_index, played)
    return units, settings.criterion


def run_rounds(models: list[str], questions: list[str], judge: Callable[[pd.DataFrame], pd.DataFrame],
               budget_units: int, settings: AdaptiveSettings, seed: int, lang: str,
               games: pd.DataFrame | None = None, predicted: Mapping[str, float] | None = None,
               first_round: int = 0) -> tuple[pd.DataFrame, list[pd.DataFrame], str]:
    """Rounds until one has no units, as the workflow runs them: ``judge`` turns a round's units
    into games (both orders of each). Returns all games, the rounds' units and the stop reason."""
    if games is None:
        games = pd.DataFrame(columns=["query_id", "model_a", "model_b", "shown_first", "verdict"])
    rounds = []
    k = first_round
    while True:
        units, reason = next_round(games, models, questions, budget_units, settings, seed, lang, k, predicted)
        if units.empty:
            return games, rounds, reason
        rounds.append(units)
        games = pd.concat([games, judge(units)], ignore_index=True)
        k += 1
