"""Adaptive pair selection in the arena against random selection, at a share of the judge calls.

Simulated mode (default): ``--models`` models (19) with known BT logits in three scenarios, shuffled
over the model names:

- ``spread``: evenly over [-2, 2] (adjacent gap 0.22);
- ``close``: evenly over [-0.5, 0.5] (adjacent gap 0.056, near what 100 questions can resolve);
- ``ties``: 7 levels evenly over [-1.5, 1.5], two or three models on each (tied models have
  equal strength; their order in any fit is noise).

Every pair is judged on ``--questions`` questions (100) in both orders (the exhaustive design,
34,200 games for 19 models); a game is a tie with probability ``--tie-prob`` (0.1), else model a
wins with probability ``1 / (1 + exp(s_b - s_a))``. A design "judges" a unit (question, pair,
both orders) by looking up those simulated verdicts, so every design of a seed sees the same
verdicts and the exhaustive fit is the ranking the designs try to reach at a fraction of the calls.

Designs, each at 10%, 25%, 50% of the exhaustive calls (100% is the exhaustive design itself):

- ``random``: round 0 (the same connected cycle as adaptive), then units drawn uniformly from
  the unjudged ones, round after round (``criterion="random"``);
- ``adaptive``: ``polyrag.arena.adaptive`` with its defaults (criterion ``ranking``).

A run to 50% records its games at each smaller budget: a run with a smaller budget judges exactly
the first units of a larger one (rounds are fixed sizes and each round's picks are ordered; the
test suite checks this), so one run per seed serves every budget. Kendall tau (scipy, tau-b)
of the BT logits with the true strengths and with the exhaustive BT logits, mean and standard
deviation over ``--seeds`` seeds (20).

``--design-table`` adds the design choices on the ``close`` scenario: criterion, block size
(questions per pick; ``block = questions`` is whole pairs), round size.

Coverage (``--coverage-seeds``, 0 to skip): share of models whose centred true strength lies in
the 95% bootstrap interval of ``bradley_terry`` (the leaderboard's intervals, ``--bootstrap``
tournaments), and of adjacent true-order pairs whose true difference lies in the percentile
interval of the bootstrap differences, for the exhaustive design, random and adaptive at 25% and 50%.

Verdicts mode (``--judgments DIR``): the exhaustive verdicts that exist in
``DIR/{lang}/*.parquet`` (``results/judgments/{judge}``) are subsampled by each design: tau with
the exhaustive ranking per language (there is no truth). ``--write-simulated DIR`` writes one
simulated exhaustive arena in that layout, to try the mode.

    .venv/bin/python benchmarks/bench_adaptive.py [--seeds 20] [--design-table] [--coverage-seeds 30]
    .venv/bin/python benchmarks/bench_adaptive.py --judgments results/judgments/gpt-4o
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from polyrag.arena.adaptive import AdaptiveSettings, exhaustive_units, parse_budget, run_rounds
from polyrag.arena.bradley_terry import bradley_terry, fit_logits
from polyrag.arena.games import read_games, win_matrix
from polyrag.config import model_pairs
from polyrag.seeds import rng_for

SHARES = (0.10, 0.25, 0.50)
SCENARIOS = ("spread", "close", "ties")
ALPHA = 0.01  # the config's default arena.regularization


def true_strengths(scenario: str, n_models: int, rng: np.random.Generator) -> pd.Series:
    if scenario == "spread":
        levels = np.linspace(-2, 2, n_models)
    elif scenario == "close":
        levels = np.linspace(-0.5, 0.5, n_models)
    elif scenario == "ties":
        levels = np.sort(np.resize(np.linspace(-1.5, 1.5, 7), n_models))
    else:
        raise ValueError(scenario)
    models = [f"model-{i:02d}" for i in range(n_models)]
    return pd.Series(rng.permutation(levels), index=models)


def simulate(truth: pd.Series, n_questions: int, tie_prob: float, rng: np.random.Generator) -> pd.DataFrame:
    """The exhaustive design's games: every sorted pair on every question in both orders."""
    pairs = model_pairs(list(truth.index))
    a = np.repeat([p[0] for p in pairs], 2 * n_questions)
    b = np.repeat([p[1] for p in pairs], 2 * n_questions)
    query = np.tile(np.repeat([f"q{k:03d}" for k in range(n_questions)], 2), len(pairs))
    shown_first = np.where(np.tile([True, False], len(pairs) * n_questions), a, b)
    p_a = 1 / (1 + np.exp(truth[b].to_numpy() - truth[a].to_numpy()))
    a_wins = rng.random(len(a)) < p_a
    tie = rng.random(len(a)) < tie_prob
    verdict = np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))
    return pd.DataFrame({"query_id": query, "model_a": a, "model_b": b, "shown_first": shown_first,
                         "verdict": verdict})


class Lookup:
    """Judges units by looking up existing verdicts (both orders of each unit)."""

    def __init__(self, games: pd.DataFrame):
        a, b = games["model_a"].to_numpy(str), games["model_b"].to_numpy(str)
        self.games = games.assign(model_a=np.where(a < b, a, b), model_b=np.where(a < b, b, a))
        self.games = self.games.set_index(["model_a", "model_b", "query_id"]).sort_index()

    def __call__(self, units: pd.DataFrame) -> pd.DataFrame:
        keys = pd.MultiIndex.from_frame(units[["model_a", "model_b", "query_id"]])
        return self.games.loc[self.games.index.isin(keys)].reset_index()


def prefix_games(games: pd.DataFrame, rounds: list[pd.DataFrame], n_units: int) -> pd.DataFrame:
    """The games of the first ``n_units`` units chosen, in the order they were chosen."""
    units = pd.concat(rounds, ignore_index=True).iloc[:n_units][["model_a", "model_b", "query_id"]]
    return games.merge(units, on=["model_a", "model_b", "query_id"])


def design_games(exhaustive: pd.DataFrame, models: list[str], questions: list[str], shares: tuple[float, ...],
                 settings: AdaptiveSettings, seed: int, lang: str) -> dict[float, pd.DataFrame]:
    """One run to the largest share; the games at each share are its prefixes."""
    budgets = {share: parse_budget({"share": share}, len(models), len(questions)) for share in shares}
    games, rounds, _ = run_rounds(models, questions, Lookup(exhaustive), max(budgets.values()), settings, seed, lang)
    return {share: prefix_games(games, rounds, units) for share, units in budgets.items()}


def logits(games: pd.DataFrame, models: list[str]) -> np.ndarray:
    return fit_logits(win_matrix(games, models), ALPHA)


def tau(x, y) -> float:
    return kendalltau(x, y).statistic


def designs(criterion_settings: dict[str, AdaptiveSettings]) -> dict[str, AdaptiveSettings]:
    return criterion_settings


def ranking_table(args, settings_by_design: dict[str, AdaptiveSettings], scenarios=SCENARIOS) -> pd.DataFrame:
    rows = []
    for scenario in scenarios:
        for seed in range(args.seeds):
            rng = rng_for(seed, "bench_adaptive", scenario)
            truth = true_strengths(scenario, args.models, rng)
            models = list(truth.index)
            exhaustive = simulate(truth, args.questions, args.tie_prob, rng)
            questions = sorted(exhaustive["query_id"].unique())
            full = logits(exhaustive, models)
            rows.append({"scenario": scenario, "design": "exhaustive", "share": 1.0, "seed": seed,
                         "tau_truth": tau(full, truth), "tau_exhaustive": 1.0})
            for name, settings in settings_by_design.items():
                for share, games in design_games(exhaustive, models, questions, SHARES, settings, seed,
                                                 scenario).items():
                    fitted = logits(games, models)
                    rows.append({"scenario": scenario, "design": name, "share": share, "seed": seed,
                                 "tau_truth": tau(fitted, truth), "tau_exhaustive": tau(fitted, full)})
    return pd.DataFrame(rows)


def summarise(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    table = rows.groupby(keys, sort=False).agg(
        tau_truth=("tau_truth", "mean"), tau_truth_sd=("tau_truth", "std"),
        tau_exhaustive=("tau_exhaustive", "mean"), tau_exhaustive_sd=("tau_exhaustive", "std"),
        seeds=("seed", "nunique")).reset_index()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=19)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--tie-prob", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--design-table", action="store_true")
    parser.add_argument("--coverage-seeds", type=int, default=30)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--judgments", help="a judge's judgments folder: {lang}/{model_a}__{model_b}.parquet")
    parser.add_argument("--write-simulated", help="write one simulated exhaustive arena into this folder and exit")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = ranking_table(args, {"random": AdaptiveSettings(criterion="random", bootstrap=0),
                                "adaptive": AdaptiveSettings(bootstrap=0)})
    print(summarise(rows, ["scenario", "design", "share"]).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
