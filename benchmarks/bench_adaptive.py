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

- ``random``: round 0 (the same connected cycle as the others), then units drawn uniformly from
  the unjudged ones, round after round (``criterion="random"``);
- ``information``: ``polyrag.arena.adaptive`` with ``criterion="information"`` (A-optimal);
- ``ranking``: its defaults (pairs weighted by the probability that their order is wrong, plus
  a floor of 0.1); the coverage table adds it with ``floor=0``;
- ``ranking, true strengths``: the same rounds told the true strengths instead of fitting the
  games so far: the ceiling of pair selection by this criterion (an oracle no real run has).

Random selection is also read at more shares (5% to 75%), so that for each design and share the
"calls saved" table gives the share random selection needs for the same mean tau with the
exhaustive ranking (linear between measured shares) and ``1 - share / that share``.

A run to 50% records its games at each smaller budget: a run with a smaller budget judges exactly
the first units of a larger one (rounds are fixed sizes and each round's picks are ordered; the
test suite checks this), so one run per seed serves every budget. Kendall tau (scipy, tau-b)
of the BT logits with the true strengths and with the exhaustive BT logits, mean and standard
deviation over ``--seeds`` seeds (20).

``--design-table`` adds the design choices on the ``spread`` and ``close`` scenarios
(``--design-seeds``): criterion, block size (questions per pick; ``block = questions`` is whole
pairs), round growth, round 0.

Coverage (``--coverage-seeds``, 0 to skip), on verdicts simulated without ties (with ties as
half wins the fit estimates strengths compressed towards 0, so no design covers the simulated
ones): share of models whose centred true strength lies in the 95% bootstrap interval of
``bradley_terry`` (the leaderboard's intervals, ``--bootstrap`` tournaments), and of adjacent
true-order pairs whose true difference lies in the percentile interval of the bootstrap
differences, for the exhaustive design and each design at 25% and 50%.

Placement (``--placement-seeds``, 0 to skip): a 20th model joins 19 judged at 50%; its
placement games go against the neighbours a simulated surrogate predicts (logit error sd 0.25,
1.0, or a random ranking), then the rounds spend the grown budget; rank error of the new model
after 80, 400, 1000 and 1900 added calls, and the cost of recomputing the design from scratch.

Stopping (``--stopping-seeds``, 0 to skip): the default design with its stopping rule and the
whole exhaustive design as budget: the share spent when it stops, and Kendall tau there.

Verdicts mode (``--judgments DIR``): the exhaustive verdicts that exist in
``DIR/{lang}/*.parquet`` (``results/judgments/{judge}``) are subsampled by each design: tau with
the exhaustive ranking per language (there is no truth). ``--write-simulated DIR`` writes one
simulated exhaustive arena in that layout, to try the mode.

    .venv/bin/python benchmarks/bench_adaptive.py [--seeds 20] [--coverage-seeds 10] [--design-table] [--jobs 2]
    .venv/bin/python benchmarks/bench_adaptive.py --judgments results/judgments/gpt-4o [--block 3]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from bench_arena import exhaustive_games  # noqa: E402 - a sibling script
from polyrag.arena import adaptive
from polyrag.arena.adaptive import (AdaptiveSettings, exhaustive_units, parse_budget, planned_rounds, played_units,
                                    run_rounds)
from polyrag.arena.bradley_terry import bradley_terry, fit_logits
from polyrag.arena.games import read_games, win_matrix
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


def tau_untied(fitted, truth) -> float:
    """Kendall's tau with the true strengths over the pairs of models whose true strengths
    differ (a fitted tie counts 0): the order of truly tied models is noise, in the exhaustive
    ranking as in any design, and tau-b would score it."""
    fitted, truth = np.asarray(fitted, float), np.asarray(truth, float)
    i, j = np.triu_indices(len(truth), 1)
    differ = truth[i] != truth[j]
    return float(np.mean(np.sign(fitted[i] - fitted[j])[differ] * np.sign(truth[i] - truth[j])[differ]))


DESIGNS = {"random": AdaptiveSettings(criterion="random", bootstrap=0),
           "information": AdaptiveSettings(criterion="information", bootstrap=0),
           "ranking": AdaptiveSettings(bootstrap=0)}  # the default: ranking with floor 0.1
# The default design told the true strengths instead of fitting the games so far: what its criterion
# does with everything a fit can only estimate (simulated scenarios only).
ORACLE = "ranking, true strengths"
# Random selection is also read at these shares, to find the share it needs for an adaptive design's tau.
RANDOM_SHARES = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.50, 0.60, 0.75)
# the coverage table adds the ranking criterion without its floor, which biases the intervals
COVERAGE_DESIGNS = {**DESIGNS, "ranking, floor 0": AdaptiveSettings(floor=0.0, bootstrap=0)}


@contextlib.contextmanager
def known_strengths(truth: pd.Series, models: list[str]):
    """Rounds choose with the true (centred) strengths in place of the fit of the games so far."""
    centred = (truth[models] - truth[models].mean()).to_numpy()
    original = adaptive.fit_logits
    adaptive.fit_logits = lambda wins, regularization: centred.copy()
    try:
        yield
    finally:
        adaptive.fit_logits = original


def coverage(games: pd.DataFrame, models: list[str], truth: pd.Series, n_bootstrap: int, seed: int) -> dict:
    """Coverage of the leaderboard's 95% bootstrap intervals (``bradley_terry``): per model, of
    the centred true strength (the fit's logits have mean 0); per adjacent pair of the true
    order, of the true difference by the percentile interval of the bootstrap differences."""
    table, bootstrap, _ = bradley_terry(games, models, ALPHA, n_bootstrap, rng_for(seed, "bench_adaptive_bootstrap"))
    table = table.set_index("model").loc[models]
    centred = truth[models] - truth[models].mean()
    covered = (table["ci_low"] <= centred) & (centred <= table["ci_high"])
    samples = bootstrap.pivot(index="tournament", columns="model", values="logit")
    order = truth.sort_values(ascending=False).index
    differences = samples[order[:-1]].to_numpy() - samples[order[1:]].to_numpy()
    low, high = np.percentile(differences, [2.5, 97.5], axis=0)
    true_difference = truth[order[:-1]].to_numpy() - truth[order[1:]].to_numpy()
    pair_covered = (low <= true_difference) & (true_difference <= high)
    return {"model_coverage": covered.mean(), "pair_coverage": pair_covered.mean(),
            "ci_width": (table["ci_high"] - table["ci_low"]).mean()}


def simulated_arena(scenario: str, seed: int, args, extra_model: bool = False, tie_prob: float | None = None):
    rng = rng_for(seed, "bench_adaptive", scenario)
    truth = true_strengths(scenario, args.models, rng)
    if extra_model:
        truth["new"] = rng.uniform(truth.min(), truth.max())
    exhaustive = exhaustive_games(truth, args.questions, args.tie_prob if tie_prob is None else tie_prob, rng)
    return truth, exhaustive, sorted(exhaustive["query_id"].unique())


def scenario_seed(task: tuple) -> list[dict]:
    """Tau rows for one scenario and seed: every design at every share."""
    scenario, seed, args, designs = task
    truth, exhaustive, questions = simulated_arena(scenario, seed, args)
    models = list(truth.index)
    full = logits(exhaustive, models)
    rows = [{"scenario": scenario, "design": "exhaustive", "share": 1.0, "seed": seed,
             "tau_truth": tau_untied(full, truth), "tau_exhaustive": 1.0}]
    for name, settings in designs.items():
        shares = RANDOM_SHARES if name == "random" else SHARES
        with known_strengths(truth, models) if name == ORACLE else contextlib.nullcontext():
            samples = design_games(exhaustive, models, questions, shares, settings, seed, scenario)
        for share, games in samples.items():
            fitted = logits(games, models)
            rows.append({"scenario": scenario, "design": name, "share": share, "seed": seed,
                         "tau_truth": tau_untied(fitted, truth), "tau_exhaustive": tau(fitted, full)})
    return rows


COVERAGE_SHARES = (0.25, 0.50)


def coverage_seed(task: tuple) -> list[dict]:
    """Coverage rows for one scenario and seed, verdicts without ties: with ties as half wins the
    fit estimates strengths compressed towards 0, not the simulated ones (``--tie-prob``)."""
    scenario, seed, args = task
    truth, exhaustive, questions = simulated_arena(scenario, seed, args, tie_prob=0.0)
    models = list(truth.index)
    rows = [{"scenario": scenario, "design": "exhaustive", "share": 1.0, "seed": seed,
             **coverage(exhaustive, models, truth, args.bootstrap, seed)}]
    for name, settings in COVERAGE_DESIGNS.items():
        for share, games in design_games(exhaustive, models, questions, COVERAGE_SHARES, settings, seed,
                                         scenario).items():
            rows.append({"scenario": scenario, "design": name, "share": share, "seed": seed,
                         **coverage(games, models, truth, args.bootstrap, seed)})
    return rows


def parallel(function, tasks: list, jobs: int) -> list:
    if jobs == 1:
        return [function(task) for task in tasks]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(function, tasks))


def summarise(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean and standard deviation over seeds, as ``mean ± sd``."""
    grouped = rows.groupby(keys, sort=False)
    table = grouped.size().rename("seeds").reset_index()
    for column in ("tau_truth", "tau_exhaustive"):
        mean, sd = grouped[column].mean().to_numpy(), grouped[column].std().fillna(0).to_numpy()
        table[column] = [f"{m:.3f} ± {s:.3f}" for m, s in zip(mean, sd)]
    return table


def random_share_for(tau_target: float, curve: pd.Series) -> float:
    """The share of calls at which random selection's mean tau (``curve``: share -> tau, 1 at the
    whole design) reaches ``tau_target``, linear between the measured shares; a target below the
    whole curve gives its smallest share (random may need less: then "calls saved" is an upper bound)."""
    curve = curve.sort_index()
    above = curve[curve >= tau_target]
    if above.empty:
        return 1.0
    upper = above.index[0]
    below = curve[curve.index < upper]
    if below.empty:
        return float(upper)
    lower = below.index[-1]  # every share before ``upper`` is below the target, so t0 < target <= t1
    t0, t1 = curve[lower], curve[upper]
    return float(lower + (upper - lower) * (tau_target - t0) / (t1 - t0))


SATURATED = 0.002  # random within this of the whole design's tau: no calls left to save (0.999 vs 1.000)


def calls_saved(means: pd.Series, scenario: str) -> list[dict]:
    """From mean tau with the truth per (scenario, design, share): for each adaptive design and
    share, the share random selection needs for the same tau (its curve ends at the exhaustive
    design's tau, at share 1) and ``1 - share / that share``. Where random selection at that share
    already reaches the exhaustive design's tau (within ``SATURATED``), both are at the ceiling and
    calls saved cannot be read from the curve: it is left empty (NaN), never a number."""
    curve = pd.concat([means[scenario, "random"], pd.Series({1.0: means[scenario, "exhaustive", 1.0]})])
    out = []
    for design in [d for d in means[scenario].index.get_level_values(0).unique() if d not in ("random", "exhaustive")]:
        for share, value in means[scenario, design].items():
            random_share = random_share_for(value, curve)
            saturated = curve.get(share, -np.inf) >= curve[1.0] - SATURATED
            out.append({"scenario": scenario, "design": design, "share": share, "tau_truth": value,
                        "random_share_for_same_tau": random_share,
                        "calls_saved": np.nan if saturated else 1 - share / random_share})
    return out


def equivalent_random_shares(rows: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """``calls_saved`` per scenario, with a 95% percentile interval from resampling the seeds
    (with replacement, the same seeds for every design: the designs of a seed share its arena).
    An interval reaching past the shares where random was measured, or a target random never
    reaches before the exhaustive design, makes the figure an extrapolation: read it as such."""
    rng = np.random.default_rng(seed)
    table = []
    for scenario in rows["scenario"].unique():
        part = rows[rows["scenario"] == scenario]
        by_seed = part.pivot_table(index="seed", columns=["design", "share"], values="tau_truth")
        point = pd.DataFrame(calls_saved(part.groupby(["scenario", "design", "share"])["tau_truth"].mean(), scenario))
        draws = []
        for _ in range(resamples):
            drawn = by_seed.iloc[rng.integers(0, len(by_seed), len(by_seed))].mean()
            means = pd.concat({scenario: drawn}, names=["scenario"])
            draws.append([row["calls_saved"] for row in calls_saved(means, scenario)])
        with warnings.catch_warnings():  # a saturated cell's draws are all NaN: its interval stays empty
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(np.array(draws, dtype=float), [2.5, 97.5], axis=0)
        saturated = point["calls_saved"].isna()  # at the ceiling: no interval either
        table.append(point.assign(calls_saved_ci_low=np.where(saturated, np.nan, low),
                                  calls_saved_ci_high=np.where(saturated, np.nan, high)))
    return pd.concat(table, ignore_index=True)


def ranking_tables(args) -> None:
    designs = {**DESIGNS, ORACLE: DESIGNS["ranking"]}
    tasks = [(scenario, seed, args, designs) for scenario in SCENARIOS for seed in range(args.seeds)]
    rows = pd.DataFrame([row for rows in parallel(scenario_seed, tasks, args.jobs) for row in rows])
    rows["calls"] = (rows["share"] * 2 * exhaustive_units(args.models, args.questions)).round().astype(int)
    print(f"\nKendall tau of the BT ranking with the true strengths and with the exhaustive design's BT ranking "
          f"(same verdicts): {args.models} models, {args.questions} questions, {args.tie_prob:.0%} ties, "
          f"mean ± sd over {args.seeds} seeds; calls = judge calls per language")
    shown = rows[rows["share"].isin((*SHARES, 1.0))]
    table = summarise(shown, ["scenario", "share", "calls", "design"])
    print(table.to_string(index=False))
    print("\nCalls saved: the share of calls random selection needs for the same mean tau with the true "
          f"strengths (random measured at {', '.join(f'{s:.0%}' for s in RANDOM_SHARES)}, and the exhaustive design "
          "at 100%, linear between), 1 - share / that share, and its 95% interval over seed resamples")
    print(equivalent_random_shares(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    paired = shown[shown["design"] != "exhaustive"].pivot_table(index=["scenario", "share", "seed"], columns="design",
                                                                values="tau_truth")
    print("\nAdaptive minus random, tau with the true strengths (truly tied pairs left out), paired by seed: mean, "
          "standard error, seeds where adaptive is ahead / behind")
    gains = []
    for criterion in ("information", "ranking", ORACLE):
        gain = (paired[criterion] - paired["random"]).groupby(level=[0, 1], sort=False)
        gains.append(pd.DataFrame({"criterion": criterion, "mean": gain.mean(), "se": gain.std() / np.sqrt(gain.size()),
                                   "ahead": gain.apply(lambda d: int((d > 0).sum())),
                                   "behind": gain.apply(lambda d: int((d < 0).sum()))}).reset_index())
    print(pd.concat(gains).to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def coverage_table(args) -> None:
    tasks = [(scenario, seed, args) for scenario in SCENARIOS for seed in range(args.coverage_seeds)]
    cover = pd.DataFrame([row for rows in parallel(coverage_seed, tasks, args.jobs) for row in rows])
    print(f"\nCoverage of the 95% bootstrap intervals ({args.bootstrap} tournaments resampling questions, as "
          f"the leaderboard) on verdicts without ties (where BT is the true model), {args.coverage_seeds} seeds x "
          f"{args.models} models: model = centred true strength in the model's interval; adjacent pair = true "
          "difference of adjacent models (true order) in the interval of the bootstrap differences")
    summary = cover.groupby(["scenario", "share", "design"], sort=False).agg(
        model_coverage=("model_coverage", "mean"), adjacent_pair_coverage=("pair_coverage", "mean"),
        mean_ci_width=("ci_width", "mean")).reset_index()
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def design_table(args) -> None:
    """The design choices on the close and spread scenarios."""
    variants = {"random": AdaptiveSettings(criterion="random", bootstrap=0),
                "default (ranking, floor 0.1, block 10, growth 1.5, 1 cycle)": AdaptiveSettings(bootstrap=0),
                "information (floor 1)": AdaptiveSettings(criterion="information", bootstrap=0),
                "floor 0": AdaptiveSettings(floor=0.0, bootstrap=0),
                "floor 0.3": AdaptiveSettings(floor=0.3, bootstrap=0),
                "block 5": AdaptiveSettings(block=5, bootstrap=0),
                "block 25": AdaptiveSettings(block=25, bootstrap=0),
                "whole pairs (block 100)": AdaptiveSettings(block=args.questions, bootstrap=0),
                "growth 1.2": AdaptiveSettings(growth=1.2, bootstrap=0),
                "growth 2": AdaptiveSettings(growth=2.0, bootstrap=0),
                "2 cycles in round 0": AdaptiveSettings(cycles=2, bootstrap=0)}
    tasks = [(scenario, seed, args, variants) for scenario in ("spread", "close") for seed in range(args.design_seeds)]
    rows = pd.DataFrame([row for rows in parallel(scenario_seed, tasks, args.jobs) for row in rows])
    rows = rows[rows["design"] != "exhaustive"]
    means = rows.pivot_table(index=["scenario", "design"], columns="share", values="tau_exhaustive", sort=False)
    rounds = {name: planned_rounds(parse_budget({"share": 0.5}, args.models, args.questions), args.models, settings)
              for name, settings in variants.items()}
    means["rounds to 50%"] = [rounds[name] for _, name in means.index]
    print(f"\nDesign choices: tau with the exhaustive ranking, mean over {args.design_seeds} seeds, by share of calls")
    print(means.reset_index().to_string(index=False, float_format=lambda x: f"{x:.3f}"))


PLACEMENT_CALLS = (400, 1000)  # checkpoints between the placement games and the whole added budget


def placement_seed(task: tuple) -> list[dict]:
    """A 20th model joins an arena of 19 judged at ``share`` of their exhaustive design; the
    budget grows to ``share`` of the 20-model design. Its placement games go against the
    neighbours predicted by a surrogate with ``noise`` (sd of its logit error; ``None``: a
    no-skill surrogate whose ranking is random)."""
    scenario, seed, args, share, noises = task
    truth, exhaustive, questions = simulated_arena(scenario, seed, args, extra_model=True)
    models = list(truth.index)
    old = [m for m in models if m != "new"]
    judge, settings = Lookup(exhaustive), AdaptiveSettings(bootstrap=0)
    old_budget = parse_budget({"share": share}, len(old), len(questions))
    before, rounds_before, _ = run_rounds(old, questions, judge, old_budget, settings, seed, scenario)
    budget = parse_budget({"share": share}, len(models), len(questions))
    full = logits(exhaustive, models)
    true_rank = truth.rank(ascending=False)["new"]

    def rank_error(games: pd.DataFrame) -> float:
        return abs(pd.Series(logits(games, models), index=models).rank(ascending=False)["new"] - true_rank)

    # a rerun from scratch with 20 models: the units it shares with the 19-model run are cached
    scratch, _, _ = run_rounds(models, questions, judge, budget, settings, seed, scenario)
    rerun_calls = 2 * len(played_units(scratch) - played_units(before))
    rows = []
    for noise in noises:
        rng = rng_for(seed, "bench_adaptive_surrogate", scenario, noise)
        predicted = dict(zip(models, rng.permutation(truth.to_numpy()) if noise is None
                             else truth.to_numpy() + rng.normal(0, noise, len(models))))
        after, rounds, _ = run_rounds(models, questions, judge, budget, settings, seed, scenario, games=before,
                                      predicted=predicted, first_round=len(rounds_before))
        added = after.iloc[len(before):]
        placement_units = len(rounds[0])  # a smaller budget spends a prefix of these rounds
        errors = {f"rank_error@{2 * units}": rank_error(pd.concat([before, prefix_games(added, rounds, units)]))
                  for units in (placement_units, *(calls // 2 for calls in PLACEMENT_CALLS))}
        of_new = (added["model_a"] == "new") | (added["model_b"] == "new")
        rows.append({"scenario": scenario, "surrogate": "no skill (random)" if noise is None else f"noise sd {noise}",
                     "seed": seed, **errors, f"rank_error@{len(added)}": rank_error(after),
                     "calls_on_new": int(of_new.sum()), "tau_exhaustive": tau(logits(after, models), full),
                     "rerun_calls": rerun_calls, "exhaustive_calls": 2 * len(old) * len(questions)})
    return rows


def placement_table(args) -> None:
    share = 0.5
    tasks = [(scenario, seed, args, share, (0.25, 1.0, None)) for scenario in ("spread", "close")
             for seed in range(args.placement_seeds)]
    rows = pd.DataFrame([row for rows in parallel(placement_seed, tasks, args.jobs) for row in rows])
    print(f"\nAdding a model under a {share:.0%} budget: 19 models judged adaptively, then a 20th (true strength "
          f"uniform in their range); the budget grows to {share:.0%} of the 20-model design. Placement: "
          f"{AdaptiveSettings().neighbours} predicted neighbours x {AdaptiveSettings().block} questions, then the "
          "rounds. rank_error@C: |fitted - true rank| of the new model after C added calls; calls_on_new: of "
          f"all added calls; mean over {args.placement_seeds} seeds. rerun_calls: calls not judged before if the "
          "20-model design is instead recomputed from scratch (the LLM cache answers the rest); exhaustive_calls: "
          "2 x 19 x questions")
    table = rows.groupby(["scenario", "surrogate"], sort=False).mean(numeric_only=True).drop(columns="seed")
    print(table.reset_index().to_string(index=False, float_format=lambda x: f"{x:.2f}"))


def stopping_seed(task: tuple) -> dict:
    """The default design with its stopping rule (``--bootstrap`` tournaments each round) and
    the whole exhaustive design as its budget: where does it stop, and with what ranking?"""
    scenario, seed, args = task
    truth, exhaustive, questions = simulated_arena(scenario, seed, args)
    models = list(truth.index)
    settings = AdaptiveSettings(bootstrap=args.bootstrap)
    games, rounds, reason = run_rounds(models, questions, Lookup(exhaustive), len(played_units(exhaustive)), settings,
                                       seed, scenario)
    fitted = logits(games, models)
    return {"scenario": scenario, "seed": seed, "stopped": reason == "ranking settled", "rounds": len(rounds),
            "share_spent": len(played_units(games)) / exhaustive_units(len(models), len(questions)),
            "tau_truth": tau(fitted, truth), "tau_exhaustive": tau(fitted, logits(exhaustive, models))}


def stopping_table(args) -> None:
    tasks = [(scenario, seed, args) for scenario in SCENARIOS for seed in range(args.stopping_seeds)]
    rows = pd.DataFrame(parallel(stopping_seed, tasks, args.jobs))
    print(f"\nStopping rule (adjacent 95% intervals all separated, or fewer than "
          f"{AdaptiveSettings().tolerance} pairs expected out of order over {args.bootstrap} bootstrap tournaments), "
          f"default design, budget = the exhaustive design; mean over {args.stopping_seeds} seeds")
    table = rows.groupby("scenario", sort=False).agg(
        stopped=("stopped", "mean"), rounds=("rounds", "mean"), share_spent=("share_spent", "mean"),
        share_min=("share_spent", "min"), share_max=("share_spent", "max"), tau_truth=("tau_truth", "mean"),
        tau_exhaustive=("tau_exhaustive", "mean"))
    print(table.reset_index().to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def verdicts_mode(args) -> None:
    """Subsample the exhaustive verdicts that exist, per language, with each design."""
    folders = sorted(d for d in Path(args.judgments).iterdir() if d.is_dir())
    if not folders:
        raise SystemExit(f"{args.judgments}: no language folders ({{lang}}/*.parquet)")
    rows, notes = [], []
    for folder in folders:
        games = read_games(sorted(folder.glob("*.parquet")))
        models = sorted(set(games["model_a"]) | set(games["model_b"]))
        questions = sorted(games["query_id"].unique())
        existing, total = len(played_units(games)), exhaustive_units(len(models), len(questions))
        notes.append(f"{folder.name}: {len(models)} models, {len(questions)} questions, {len(games)} games, "
                     f"{existing}/{total} units judged")
        full = logits(games, models)
        for seed in range(args.seeds):
            for name, settings in DESIGNS.items():
                if args.block:
                    settings = dataclasses.replace(settings, block=args.block)
                samples = design_games(games, models, questions, SHARES, settings, seed, folder.name)
                for share, sample in samples.items():
                    rows.append({"lang": folder.name, "share": share, "design": name, "seed": seed,
                                 "tau_truth": np.nan, "tau_exhaustive": tau(logits(sample, models), full)})
    print("\n".join(["", *notes, "units a design chooses that have no verdict count as spent, with no game", ""]))
    print(f"Kendall tau with the BT ranking of all verdicts, mean ± sd over {args.seeds} design seeds")
    rows = pd.DataFrame(rows)
    table = summarise(rows, ["lang", "share", "design"]).drop(columns="tau_truth")
    # the share of design seeds whose order is the exhaustive one exactly
    table["same_order"] = rows.groupby(["lang", "share", "design"], sort=False)["tau_exhaustive"].apply(
        lambda taus: (taus > 1 - 1e-12).mean()).to_numpy()
    print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}"))


def write_simulated(folder: Path, args) -> None:
    """Two languages of simulated exhaustive judgments in the layout of results/judgments/{judge}."""
    from bench_arena import write_judgments  # the layout rule judge_pair writes

    for lang, scenario in (("xx", "spread"), ("yy", "close")):
        _, games, _ = simulated_arena(scenario, 0, args)
        write_judgments(games, folder / lang)
    print(f"wrote {folder}/xx (spread scenario) and {folder}/yy (close scenario)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=19)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--tie-prob", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--coverage-seeds", type=int, default=10, help="seeds of the coverage table; 0: none")
    parser.add_argument("--bootstrap", type=int, default=100, help="tournaments of the intervals and the stopping rule")
    parser.add_argument("--placement-seeds", type=int, default=10, help="0: no placement table")
    parser.add_argument("--stopping-seeds", type=int, default=5, help="0: no stopping-rule table")
    parser.add_argument("--design-table", action="store_true")
    parser.add_argument("--design-seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    parser.add_argument("--judgments", help="a judge's judgments folder: {lang}/{model_a}__{model_b}.parquet")
    parser.add_argument("--block", type=int, help="questions per pick in --judgments mode (default: the design's, 10)")
    parser.add_argument("--write-simulated", help="write simulated exhaustive judgments into this folder and exit")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.write_simulated:
        write_simulated(Path(args.write_simulated), args)
        return
    if args.judgments:
        verdicts_mode(args)
    else:
        if args.seeds:
            ranking_tables(args)
        if args.coverage_seeds:
            coverage_table(args)
        if args.placement_seeds:
            placement_table(args)
        if args.stopping_seeds:
            stopping_table(args)
        if args.design_table:
            design_table(args)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
