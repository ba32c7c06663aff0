"""Adaptive pair selection: round 0, the selector, budgets, stopping, placement, and simulations
with a known answer (small arenas so that the whole file runs in seconds)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import kendalltau

from polyrag.arena.adaptive import (AdaptiveSettings, expected_discordant, exhaustive_units, fisher_covariance,
                                    next_round, parse_budget, placement, planned_rounds, played_units,
                                    questions_by_pair, ranking_settled, relevance, round_zero, run_rounds,
                                    select_round)
from polyrag.arena.bradley_terry import fit_logits
from polyrag.arena.games import win_matrix
from polyrag.config.queries import model_pairs
from polyrag.errors import ConfigError

QUESTIONS = [f"q{k:02d}" for k in range(40)]


def models_named(n: int) -> list[str]:
    return [f"m{i:02d}" for i in range(n)]


def simulate_exhaustive(strengths: dict[str, float], questions: list[str], rng, tie_rate: float = 0.1) -> pd.DataFrame:
    """Every sorted pair on every question in both orders, verdicts drawn from the BT model."""
    rows = []
    for a, b in model_pairs(list(strengths)):
        p_a = 1 / (1 + np.exp(strengths[b] - strengths[a]))
        for q in questions:
            for shown_first in (a, b):
                tie = rng.random() < tie_rate
                verdict = "tie" if tie else ("model_a" if rng.random() < p_a else "model_b")
                rows.append((q, a, b, shown_first, verdict))
    return pd.DataFrame(rows, columns=["query_id", "model_a", "model_b", "shown_first", "verdict"])


def lookup(exhaustive: pd.DataFrame):
    """A judge that returns the existing verdicts of the chosen units."""
    def judge(units: pd.DataFrame) -> pd.DataFrame:
        return exhaustive.merge(units[["model_a", "model_b", "query_id"]], on=["model_a", "model_b", "query_id"])
    return judge


def expected_games(strengths: dict[str, float], pairs: list[tuple[str, str]], questions: list[str]) -> pd.DataFrame:
    """Deterministic games: on each pair, model a wins the share of games BT says (rounded)."""
    rows = []
    for a, b in pairs:
        p_a = 1 / (1 + np.exp(strengths[b] - strengths[a]))
        n_games = 2 * len(questions)
        a_wins = round(p_a * n_games)
        for k in range(n_games):
            rows.append((questions[k // 2], a, b, a if k % 2 == 0 else b, "model_a" if k < a_wins else "model_b"))
    return pd.DataFrame(rows, columns=["query_id", "model_a", "model_b", "shown_first", "verdict"])


def connected(units: pd.DataFrame, models: list[str]) -> bool:
    index = {m: i for i, m in enumerate(models)}
    graph = coo_matrix((np.ones(len(units)), (units["model_a"].map(index), units["model_b"].map(index))),
                       shape=(len(models), len(models)))
    return connected_components(graph, directed=False)[0] == 1


def test_round_zero_connects_every_model_and_is_seeded():
    models = models_named(19)
    settings = AdaptiveSettings(block=5)
    units = round_zero(models, QUESTIONS, settings, seed=7, lang="fr")
    assert connected(units, models)
    # one cycle: every model in exactly two pairs, each pair on `block` distinct questions
    pair_count = units.drop_duplicates(["model_a", "model_b"])
    assert len(pair_count) == 19
    assert (pd.concat([pair_count["model_a"], pair_count["model_b"]]).value_counts() == 2).all()
    by_pair = questions_by_pair(units)
    assert len(by_pair) == 19 and all(len(set(questions)) == 5 for questions in by_pair.values())
    pd.testing.assert_frame_equal(units, round_zero(models, QUESTIONS, settings, seed=7, lang="fr"))
    other = round_zero(models, QUESTIONS, settings, seed=8, lang="fr")
    pairs_of = lambda frame: set(zip(frame["model_a"], frame["model_b"]))  # noqa: E731
    assert pairs_of(other) != pairs_of(units)
    two = round_zero(models, QUESTIONS, AdaptiveSettings(block=5, cycles=2), seed=7, lang="fr")
    assert connected(two, models) and len(two.drop_duplicates(["model_a", "model_b"])) > 19


def test_round_zero_shrinks_its_blocks_to_the_budget():
    units = round_zero(models_named(10), QUESTIONS, AdaptiveSettings(block=10), seed=1, lang="fr", budget_units=25)
    assert len(units) == 20 and connected(units, models_named(10))


def test_parse_budget():
    assert parse_budget("exhaustive", 19, 100) == exhaustive_units(19, 100) == 17100
    assert parse_budget({"share": 0.5}, 19, 100) == 8550
    assert parse_budget({"share": 1}, 19, 100) == 17100
    assert parse_budget({"games": 1001}, 19, 100) == 500  # two calls per unit, rounded down
    assert parse_budget({"games": 10**9}, 19, 100) == 17100


@pytest.mark.parametrize("spec, message", [
    ({"share": 1.5}, r"arena\.budget\.fr\.share: 1\.5 is not in \(0, 1\]"),
    ({"share": 0}, r"arena\.budget\.fr\.share"),
    ({"share": "half"}, r"arena\.budget\.fr\.share: 'half' is not a number"),
    ({"games": 10.5}, r"arena\.budget\.fr\.games: 10\.5 is not a positive whole number"),
    ({"games": 30}, r"arena\.budget\.fr: .* 15 units .* fewer than the 19 \(38 calls\) that connect 19 models"),
    ({"share": 0.5, "games": 100}, r"arena\.budget\.fr: .* is not 'exhaustive'"),
    ("all", r"arena\.budget\.fr: 'all' is not 'exhaustive'"),
])
def test_parse_budget_errors_name_the_key(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_budget(spec, 19, 100, key="arena.budget.fr")


def test_settings_errors_name_the_key():
    with pytest.raises(ConfigError, match="arena.adaptive.criterion"):
        AdaptiveSettings(criterion="greedy")
    with pytest.raises(ConfigError, match="arena.adaptive.block"):
        AdaptiveSettings(block=0)
    with pytest.raises(ConfigError, match=r"arena.adaptive.floor: 1.5 is not in \[0, 1\]"):
        AdaptiveSettings(floor=1.5)


def test_fisher_covariance_is_the_inverse_hessian_of_the_penalised_likelihood():
    rng = np.random.default_rng(3)
    strengths = {m: s for m, s in zip(models_named(5), [1.0, 0.5, 0.0, -0.3, -1.2])}
    games = simulate_exhaustive(strengths, QUESTIONS[:10], rng)
    models = list(strengths)
    wins = win_matrix(games, models)
    regularization = 0.01
    theta = fit_logits(wins, regularization)

    def gradient(t):  # of the penalised negative log-likelihood; p[i, j]: P(i beats j)
        p = 1 / (1 + np.exp(t[None, :] - t[:, None]))
        return -(wins * (1 - p)).sum(axis=1) + (wins.T * p).sum(axis=1) + 2 * regularization * t

    # the Hessian by central differences of the gradient, column by column
    hessian = np.array([(gradient(theta + 1e-5 * e) - gradient(theta - 1e-5 * e)) / 2e-5 for e in np.eye(5)])
    np.testing.assert_allclose(fisher_covariance(wins, theta, regularization), np.linalg.inv((hessian + hessian.T) / 2),
                               rtol=1e-5)


def test_pick_score_is_the_drop_of_the_weighted_variance():
    """The first pick's score equals trace(R C) - trace(R C') with C' the inverse of the Hessian
    plus that pick's information, computed by explicit inversion."""
    strengths = {"a": 1.0, "b": 0.9, "c": 0.0, "d": -1.5}
    questions = QUESTIONS[:10]
    games = expected_games(strengths, [("a", "b"), ("b", "c"), ("c", "d")], questions[:4])
    models = list(strengths)
    settings = AdaptiveSettings(block=3)
    units = select_round(games, models, questions, 3, settings, seed=0, lang="fr", round_index=1)
    wins = win_matrix(games, models)
    theta = fit_logits(wins, settings.regularization)
    first = (models.index(units["model_a"].iloc[0]), models.index(units["model_b"].iloc[0]))
    assert units["score"].iloc[0] == pytest.approx(trace_drop(wins, theta, settings, *first, 3), rel=1e-6)


def trace_drop(wins: np.ndarray, theta: np.ndarray, settings: AdaptiveSettings, i: int, j: int, m: int) -> float:
    """trace(R C) - trace(R C') at logits ``theta``, C' the inverse of the Hessian plus m questions
    of pair (i, j) in both orders, by explicit inversion."""
    covariance = fisher_covariance(wins, theta, settings.regularization)
    weights = relevance(theta, covariance, settings.criterion, settings.floor)
    p = 1 / (1 + np.exp(theta[j] - theta[i]))
    d = np.zeros(len(theta))
    d[i], d[j] = 1, -1
    after = np.linalg.inv(np.linalg.inv(covariance) + 2 * m * p * (1 - p) * np.outer(d, d))
    return np.trace(weights @ covariance) - np.trace(weights @ after)


def test_selector_prefers_an_uncertain_close_pair_over_settled_ones():
    """a and b are close and have met on 2 questions; every other pair is far apart or has met on
    all 40: the first picks go to (a, b), none to a settled pair."""
    strengths = {"a": 1.0, "b": 0.95, "c": -0.5, "d": -2.0}
    pairs = model_pairs(list(strengths))
    games = pd.concat([expected_games(strengths, [pair], QUESTIONS[:2] if pair == ("a", "b") else QUESTIONS)
                       for pair in pairs], ignore_index=True)
    for criterion in ("ranking", "information"):
        units = select_round(games, list(strengths), QUESTIONS, 20, AdaptiveSettings(block=10, criterion=criterion),
                             seed=0, lang="fr", round_index=1)
        assert (units["model_a"] + units["model_b"]).eq("ab").all(), criterion
        assert not set(units["query_id"]) & set(QUESTIONS[:2])  # questions the pair already played


def test_ranking_settled_on_constructed_tables():
    settled = pd.DataFrame({"model": list("abc"), "rank_best": [1, 2, 3], "rank_worst": [1, 2, 3]})
    overlapping = pd.DataFrame({"model": list("abc"), "rank_best": [1, 1, 3], "rank_worst": [2, 2, 3]})
    assert ranking_settled(settled)
    assert not ranking_settled(overlapping)


# a wins every game of the far-apart arena: scikit-learn's Newton solver falls back to lbfgs there
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_next_round_stops_when_settled_spent_or_exhausted():
    models = ["a", "b", "c", "d"]
    far = {"a": 6.0, "b": 2.0, "c": -2.0, "d": -6.0}
    pairs = model_pairs(models)
    settings = AdaptiveSettings(block=5, bootstrap=50)
    half = pd.concat([expected_games(far, [pair], QUESTIONS[:10]) for pair in pairs], ignore_index=True)
    assert next_round(half, models, QUESTIONS, 200, settings, 0, "fr", 3)[1] == "ranking settled"
    assert next_round(half, models, QUESTIONS, 60, settings, 0, "fr", 3)[1] == "budget spent"
    close = {m: 0.0 for m in models}
    undecided = pd.concat([expected_games(close, [pair], QUESTIONS[:10]) for pair in pairs], ignore_index=True)
    units, reason = next_round(undecided, models, QUESTIONS, 200, settings, 0, "fr", 3)
    # round 3 of a 4-model arena: round 0's 4 pairs x 5 questions x 1.5**3 = 67.5 units
    assert reason == settings.criterion and len(units) == 68
    assert len(next_round(undecided, models, QUESTIONS, 100, settings, 0, "fr", 3)[0]) == 40  # the budget left
    full = pd.concat([expected_games(close, [pair], QUESTIONS) for pair in pairs], ignore_index=True)
    assert next_round(full, models, QUESTIONS, 10**6, settings, 0, "fr", 3)[1] == "design exhausted"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_no_stop_while_neighbours_have_not_met():
    """A cycle a-b-d-c-a of far-apart models: b and c are neighbours in the order and never met,
    so the ranking is not settled however separated the bootstrap intervals; once they meet it is."""
    far = {"a": 6.0, "b": 2.0, "c": -2.0, "d": -6.0}
    models, settings = list(far), AdaptiveSettings(block=5, bootstrap=50)
    cycle = [("a", "b"), ("b", "d"), ("c", "d"), ("a", "c")]
    games = pd.concat([expected_games(far, [pair], QUESTIONS[:10]) for pair in cycle], ignore_index=True)
    units, reason = next_round(games, models, QUESTIONS, 200, settings, 0, "fr", 1)
    assert reason == settings.criterion and len(units) > 0
    met = pd.concat([games, expected_games(far, [("b", "c")], QUESTIONS[:10])], ignore_index=True)
    assert next_round(met, models, QUESTIONS, 200, settings, 0, "fr", 1)[1] == "ranking settled"


def test_placement_plays_the_predicted_neighbours():
    models = models_named(8)
    rng = np.random.default_rng(0)
    old = dict(zip(models, np.linspace(2, -2, 8)))
    games = simulate_exhaustive(old, QUESTIONS[:5], rng)
    predicted = {**old, "new": 0.1}  # between m03 (0.29) and m04 (-0.29)
    settings = AdaptiveSettings(block=4, neighbours=4)
    units = placement(["new"], predicted, games, [*models, "new"], QUESTIONS, settings, 0, "fr", 5)
    opponents = set(units["model_a"]) | set(units["model_b"])
    assert opponents - {"new"} == {"m02", "m03", "m04", "m05"}
    assert len(units) == 16 and (units["round"] == 5).all()
    top = placement(["new"], {**old, "new": 9.0}, games, [*models, "new"], QUESTIONS, settings, 0, "fr", 5)
    assert set(top["model_a"]) | set(top["model_b"]) == {"new", "m00", "m01", "m02", "m03"}
    units_again, reason = next_round(games, [*models, "new"], QUESTIONS, 10**6, settings, 0, "fr", 5, predicted)
    assert reason == "placement"
    pd.testing.assert_frame_equal(units, units_again)
    with pytest.raises(ConfigError, match="surrogate"):
        next_round(games, [*models, "new"], QUESTIONS, 10**6, settings, 0, "fr", 5)


def arena(n_models: int, spread: float, seed: int) -> tuple[dict[str, float], pd.DataFrame]:
    rng = np.random.default_rng(seed)
    names = models_named(n_models)
    strengths = dict(zip(names, rng.permutation(np.linspace(-spread, spread, n_models))))
    return strengths, simulate_exhaustive(strengths, QUESTIONS, rng)


def test_runs_are_seeded_and_a_smaller_budget_is_a_prefix_of_a_larger_one():
    strengths, exhaustive = arena(8, 1.0, seed=1)
    models = list(strengths)
    settings = AdaptiveSettings(block=5, bootstrap=0)
    total = exhaustive_units(8, 40)
    small_games, small, reason = run_rounds(models, QUESTIONS, lookup(exhaustive), total // 5, settings, 4, "fr")
    large_games, large, _ = run_rounds(models, QUESTIONS, lookup(exhaustive), total // 2, settings, 4, "fr")
    assert reason == "budget spent"
    small, large = pd.concat(small, ignore_index=True), pd.concat(large, ignore_index=True)
    assert len(small) == total // 5 and len(large) == total // 2
    assert not large.duplicated(["model_a", "model_b", "query_id"]).any()
    pd.testing.assert_frame_equal(small.drop(columns="score"), large.iloc[:len(small)].drop(columns="score"))
    assert len(small) == len(played_units(small_games))
    rounds = small["round"].nunique()
    assert rounds == planned_rounds(total // 5, 8, settings)
    again = pd.concat(run_rounds(models, QUESTIONS, lookup(exhaustive), total // 5, settings, 4, "fr")[1],
                      ignore_index=True)
    pd.testing.assert_frame_equal(small, again)


def test_adaptive_recovers_the_true_order_at_half_the_budget():
    strengths, exhaustive = arena(8, 2.0, seed=2)
    models = list(strengths)
    games, _, _ = run_rounds(models, QUESTIONS, lookup(exhaustive), exhaustive_units(8, 40) // 2,
                             AdaptiveSettings(block=5, bootstrap=0), 0, "fr")
    fitted = fit_logits(win_matrix(games, models), 0.01)
    assert sorted(models, key=lambda m: -fitted[models.index(m)]) == sorted(models, key=lambda m: -strengths[m])


def design_errors(n_models: int, spread: float, share: float, criteria: tuple[str, ...], seeds: range) -> dict:
    """Per criterion and seed: Kendall tau with the true order and RMSE of the centred logits."""
    errors = {criterion: {"tau": [], "rmse": []} for criterion in criteria}
    for seed in seeds:
        strengths, exhaustive = arena(n_models, spread, seed=seed)
        models = list(strengths)
        truth = np.array([strengths[m] for m in models])
        budget = int(share * exhaustive_units(n_models, len(QUESTIONS)))
        for criterion in criteria:
            games, _, _ = run_rounds(models, QUESTIONS, lookup(exhaustive), budget,
                                     AdaptiveSettings(block=5, criterion=criterion, bootstrap=0), seed, "fr")
            fitted = fit_logits(win_matrix(games, models), 0.01)
            errors[criterion]["tau"].append(kendalltau(fitted, truth).statistic)
            errors[criterion]["rmse"].append(np.sqrt(np.mean((fitted - (truth - truth.mean())) ** 2)))
    return errors


def test_adaptive_beats_random_selection_on_average():
    """10% of the calls, 8 seeds: with 12 models over [-2, 2] the ranking criterion orders them
    better than random units (Kendall tau); with 12 models over [-3, 3], where most pairs are
    foregone conclusions, the information criterion (the default) estimates the logits better
    (RMSE)."""
    close = design_errors(12, 2.0, 0.1, ("ranking", "random"), range(100, 108))
    assert np.mean(close["ranking"]["tau"]) > np.mean(close["random"]["tau"])
    wide = design_errors(12, 3.0, 0.1, ("information", "random"), range(100, 108))
    assert np.mean(wide["information"]["rmse"]) < np.mean(wide["random"]["rmse"])


def test_ranking_weights_run_from_the_misorder_probability_to_uniform():
    logit = np.array([1.0, 0.9, -1.0])
    covariance = np.diag([0.01, 0.01, 0.01])
    uniform = relevance(logit, covariance, "information", 0.1)
    np.testing.assert_allclose(relevance(logit, covariance, "ranking", 1.0), uniform)
    pure = relevance(logit, covariance, "ranking", 0.0)
    # a and b: gap 0.1 with sd 0.14, order wrong with probability Phi(-0.707) = 0.24; a and c: ~0
    assert -pure[0, 1] == pytest.approx(0.2398, abs=1e-3) and -pure[0, 2] < 1e-9
    assert -relevance(logit, covariance, "ranking", 0.1)[0, 2] == pytest.approx(0.1)


def test_expected_discordant_counts_pairs_out_of_order_per_tournament():
    """Against scipy: with no tied logits, the discordant pairs of a tournament are
    (1 - tau) / 2 x C(n, 2)."""
    rng = np.random.default_rng(5)
    models = models_named(6)
    point = rng.normal(size=6)
    samples = point + rng.normal(scale=0.5, size=(40, 6))
    table = pd.DataFrame({"model": models, "logit": point})
    bootstrap = pd.DataFrame({"tournament": np.repeat(np.arange(40), 6), "model": np.tile(models, 40),
                              "logit": samples.ravel()})
    by_scipy = np.mean([(1 - kendalltau(row, point).statistic) / 2 * 15 for row in samples])
    assert expected_discordant(table, bootstrap) == pytest.approx(by_scipy)
    assert expected_discordant(table, bootstrap.assign(logit=np.tile(point, 40))) == 0


# --- the benchmark's oracle design and "calls saved" (benchmarks/bench_adaptive.py) ------------

def bench_adaptive():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_adaptive

    return bench_adaptive


def test_random_share_for_interpolates_random_selections_curve():
    random_share_for = bench_adaptive().random_share_for
    curve = pd.Series({0.10: 0.80, 0.25: 0.90, 0.50: 0.95, 1.0: 1.0})
    assert random_share_for(0.85, curve) == pytest.approx(0.10 + 0.15 * 0.5)  # halfway from 0.80 to 0.90
    assert random_share_for(0.96, curve) == pytest.approx(0.50 + 0.50 * 0.2)
    assert random_share_for(0.90, curve) == pytest.approx(0.25)  # measured exactly
    assert random_share_for(0.70, curve) == pytest.approx(0.10)  # below the curve: its smallest share
    # Calls saved are read against the truth, random's curve ending at the exhaustive design's tau.
    rows = pd.DataFrame({"scenario": "s", "design": ["random"] * 3 + ["ranking", "exhaustive"],
                         "share": [0.10, 0.25, 0.50, 0.10, 1.0], "seed": 0, "tau_truth": [0.80, 0.90, 0.95, 0.85, 0.97]})
    saved = bench_adaptive().equivalent_random_shares(rows, resamples=20).iloc[0]
    assert saved["random_share_for_same_tau"] == pytest.approx(0.175) and saved["calls_saved"] == pytest.approx(1 - 0.1 / 0.175)
    # One seed: every resample is that seed, and the interval is the point.
    assert saved["calls_saved_ci_low"] == pytest.approx(saved["calls_saved"]) == pytest.approx(saved["calls_saved_ci_high"])


def test_calls_saved_is_empty_where_random_selection_is_already_at_the_ceiling():
    """Both at tau 1 (random reaches it at 10%): a design at 25% did not "spend 150% more", and
    one at 10% did not save calls on a 0.001 difference; neither figure can be read."""
    rows = pd.DataFrame({"scenario": "s", "design": ["random"] * 3 + ["ranking"] * 2 + ["exhaustive"],
                         "share": [0.10, 0.25, 0.50, 0.10, 0.25, 1.0], "seed": 0,
                         "tau_truth": [0.9995, 1.0, 1.0, 1.0, 1.0, 1.0]})
    saved = bench_adaptive().equivalent_random_shares(rows, resamples=20)
    assert saved[["calls_saved", "calls_saved_ci_low", "calls_saved_ci_high"]].isna().all().all()


def test_calls_saved_interval_resamples_seeds_and_widens_with_their_spread():
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(30):
        noise = rng.normal(0, 0.01)
        rows += [{"scenario": "s", "design": "random", "share": share, "seed": seed, "tau_truth": tau + noise}
                 for share, tau in ((0.10, 0.80), (0.25, 0.90), (0.50, 0.95))]
        rows += [{"scenario": "s", "design": "ranking", "share": 0.10, "seed": seed, "tau_truth": 0.85 + rng.normal(0, 0.02)},
                 {"scenario": "s", "design": "exhaustive", "share": 1.0, "seed": seed, "tau_truth": 0.97}]
    saved = bench_adaptive().equivalent_random_shares(pd.DataFrame(rows), resamples=200).iloc[0]
    assert saved["calls_saved_ci_low"] < saved["calls_saved"] < saved["calls_saved_ci_high"]
    assert saved["calls_saved_ci_high"] - saved["calls_saved_ci_low"] > 0.02


def test_tau_with_the_truth_leaves_truly_tied_pairs_out():
    """Truly tied models in any order: a perfect ranking of the others scores 1 (tau-b would not)."""
    tau_untied = bench_adaptive().tau_untied
    truth = np.array([2.0, 1.0, 1.0, 0.0])
    assert tau_untied([3.0, 1.5, 1.6, 0.0], truth) == 1.0 and tau_untied([3.0, 1.6, 1.5, 0.0], truth) == 1.0
    assert tau_untied([0.0, 1.5, 1.6, 3.0], truth) == -1.0
    assert kendalltau([3.0, 1.5, 1.6, 0.0], truth).statistic < 1


def test_oracle_design_steers_by_the_true_strengths():
    """Round 0's games all tied: the fit sees four equal models. Told the truth, the design's first
    pick is the pair whose block most lowers trace(R C) at the true strengths (explicit inversion)."""
    from polyrag.arena import adaptive

    bench = bench_adaptive()
    models = ["a", "b", "c", "d"]
    truth = pd.Series({"a": 2.0, "b": 1.9, "c": -1.0, "d": -3.0})
    settings = AdaptiveSettings(block=5, bootstrap=0)
    units = round_zero(models, QUESTIONS, settings, seed=3, lang="xx")
    games = pd.DataFrame([(u.query_id, u.model_a, u.model_b, first, "tie") for u in units.itertuples()
                          for first in (u.model_a, u.model_b)],
                         columns=["query_id", "model_a", "model_b", "shown_first", "verdict"])
    fitted = select_round(games, models, QUESTIONS, 5, settings, 3, "xx", 1)
    with bench.known_strengths(truth, models):
        told = select_round(games, models, QUESTIONS, 5, settings, 3, "xx", 1)
    assert adaptive.fit_logits is fit_logits  # restored
    theta, wins = (truth - truth.mean()).to_numpy(), win_matrix(games, models)
    best = max(model_pairs(models),
               key=lambda pair: trace_drop(wins, theta, settings, models.index(pair[0]), models.index(pair[1]), 5))
    assert set(zip(told["model_a"], told["model_b"])) == {best}
    # (The fit of all-tied games is four equal logits; its pick is a tie-break among equal pairs,
    # which here happens to be the same pair, so it is not compared.)
    assert len(fitted) == 5
