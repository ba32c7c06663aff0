"""Judge diagnostics and panels, each statistic checked against an
independent computation or a simulation with a known answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from scipy.stats import t as student_t
from sklearn.metrics import cohen_kappa_score

from polyrag.arena.bradley_terry import bradley_terry, fit_logits
from polyrag.arena.diagnostics import judge_agreement, judge_diagnostics, self_preference
from polyrag.arena.games import position_bias, win_matrix
from polyrag.arena.panel import panel_agreement, panel_coverage, panel_games
from polyrag.errors import DataError
from tests.helpers.arena import STRENGTHS, maximum_likelihood, sigmoid, simulate_games, wilson


def pair_verdicts(games: pd.DataFrame) -> dict:
    """{(question, model_a, model_b): {shown_first: verdict}} by a plain loop."""
    pairs: dict = {}
    for row in games.itertuples():
        pairs.setdefault((row.query_id, row.model_a, row.model_b), {})[row.shown_first] = row.verdict
    return pairs


# --- one judge ------------------------------------------------------------------------------

def test_position_consistency_of_a_position_biased_judge_is_its_known_probability():
    """Bias b added to the first answer's logit: the two orders of (i, j) agree with probability
    s(d + b) s(d - b) + (1 - s(d + b)) (1 - s(d - b)), d = strength_i - strength_j."""
    bias = 1.2
    games = simulate_games(STRENGTHS, 150, np.random.default_rng(0), first_position_bias=bias)
    models = sorted(STRENGTHS)
    expected = np.mean([sigmoid(d + bias) * sigmoid(d - bias) + (1 - sigmoid(d + bias)) * (1 - sigmoid(d - bias))
                        for i, a in enumerate(models) for b in models[i + 1:]
                        for d in [STRENGTHS[a] - STRENGTHS[b]]])
    result = judge_diagnostics(games)
    pairs = pair_verdicts(games)
    consistent = sum(len(set(orders.values())) == 1 for orders in pairs.values())
    assert result["pairs_both_orders"] == len(pairs) == 900 and result["consistent_pairs"] == consistent
    independent = wilson(consistent, 900)
    assert result["position_consistency_ci_low"] <= independent[0] + 1e-8
    assert result["position_consistency_ci_high"] >= independent[1] - 1e-8
    assert abs(result["position_consistency"] - expected) < 3 * np.sqrt(expected * (1 - expected) / 900)
    assert result["position_consistency_ci_low"] <= expected <= result["position_consistency_ci_high"]
    # Chance level without ties: a judge that does not read the answers agrees with itself at most
    # half the time; this one favours the first answer, and falls below.
    assert result["position_consistency_chance"] == 0.5
    assert result["position_consistency"] < result["position_consistency_chance"]


def test_a_judge_that_always_picks_the_first_answer_is_never_consistent_and_below_chance():
    games = simulate_games(STRENGTHS, 20, np.random.default_rng(1))
    games["verdict"] = np.where(games["shown_first"] == games["model_a"], "model_a", "model_b")
    result = judge_diagnostics(games)
    assert result["position_consistency"] == 0 and result["first_position_win_rate"] == 1
    assert result["position_consistency_chance"] == 0.5  # no ties
    assert result["position_consistency_ci_high"] == pytest.approx(wilson(0, result["pairs_both_orders"])[1])


def test_an_unbiased_judge_is_consistent_above_chance_and_rates_count_ties_and_invalid_verdicts():
    games = simulate_games({"a": 2.0, "b": -2.0, "c": 0.0}, 80, np.random.default_rng(2), tie_rate=0.1)
    games.loc[[0, 5, 6], "verdict"] = "invalid"  # 0 and 5 or 6 may share a pair: counted by hand below
    result = judge_diagnostics(games)
    pairs = pair_verdicts(games[games["verdict"] != "invalid"])
    both = [orders for orders in pairs.values() if len(orders) == 2]
    assert result["pairs_both_orders"] == len(both)
    assert result["consistent_pairs"] == sum(len(set(orders.values())) == 1 for orders in both)
    assert result["invalid_rate"] == 3 / len(games) and result["games"] == len(games)
    assert result["questions"] == 80  # simulate_games' questions, every one judged
    assert result["tie_rate"] == pytest.approx((games["verdict"] == "tie").sum() / (len(games) - 3))
    assert result["position_consistency_ci_low"] > result["position_consistency_chance"]
    # The first-position statistics are position_bias's, unchanged.
    assert {k: result[k] for k in position_bias(games)} == position_bias(games)


def first_position_truth(bias: float, question_sd: float, differences: list[float]) -> float:
    """P(the first answer wins) with the question's bias normal(bias, question_sd), by
    Gauss-Hermite quadrature over the question."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    return float(np.mean([weights @ ((sigmoid(d + bias + question_sd * nodes) + sigmoid(-d + bias + question_sd * nodes))
                                     / 2) for d in differences]))


def test_position_intervals_cover_when_the_games_of_a_question_share_its_position_bias():
    """A judge whose position bias varies by question: the games of one question are not
    independent trials. The clustered intervals cover at the nominal rate; intervals treating
    every game as independent (the earlier code) would cover far less."""
    equal = {m: 0.0 for m in "abcd"}
    bias, question_sd, questions, simulations = 0.4, 1.5, 30, 200
    truth = first_position_truth(bias, question_sd, [0.0])
    covered, naive = [], []
    for seed in range(simulations):
        games = simulate_games(equal, questions, np.random.default_rng(seed), first_position_bias=bias,
                               question_bias_sd=question_sd)
        result = position_bias(games)
        covered.append(result["first_position_ci_low"] <= truth <= result["first_position_ci_high"])
        low, high = wilson(result["first_position_wins"], result["decisive_games"])
        naive.append(low <= truth <= high)
    assert binom.cdf(sum(covered), simulations, 0.95) > 0.001  # consistent with 0.95 (99.9% band, lower side)
    assert np.mean(covered) <= 0.99
    assert np.mean(naive) < 0.7  # 0.615 here


def test_the_guessers_consistency_is_the_best_a_judge_blind_to_the_answers_reaches():
    """A judge that never reads the answers, picking the first with f, the second with g and a tie
    with t, at every f/g split: simulated consistency 2fg + t**2, never above the chance level;
    a judge that reads them (BT verdicts, the stronger model named model_a every time, where the
    squared verdict shares would call it a guesser) is above."""
    rng = np.random.default_rng(5)
    for first, tie in ((0.45, 0.1), (0.7, 0.1), (0.3, 0.4)):
        games = simulate_games({m: 0.0 for m in "abcd"}, 300, rng)
        draw = rng.random(len(games))
        first_wins = np.where(games["shown_first"] == games["model_a"], "model_a", "model_b")
        second_wins = np.where(games["shown_first"] == games["model_a"], "model_b", "model_a")
        games["verdict"] = np.where(draw < tie, "tie", np.where(draw < tie + first, first_wins, second_wins))
        result = judge_diagnostics(games)
        second = 1 - first - tie
        assert abs(result["position_consistency"] - (2 * first * second + tie**2)) < 0.03
        assert result["position_consistency_ci_low"] < result["position_consistency_chance"]
    reader = judge_diagnostics(simulate_games(STRENGTHS, 150, np.random.default_rng(6)))
    assert reader["position_consistency_ci_low"] > reader["position_consistency_chance"] == 0.5


def test_a_game_judged_twice_in_the_same_order_is_an_error():
    games = simulate_games(STRENGTHS, 2, np.random.default_rng(3))
    with pytest.raises(DataError, match="judged once"):
        judge_diagnostics(pd.concat([games, games.iloc[[4]]]))


# --- two judges: Cohen's kappa --------------------------------------------------------------

LABELS = np.array(["model_a", "model_b", "tie"])


def noisy_judges(n_questions: int, rng, latent_share=(0.5, 0.3, 0.2), reliability=(0.8, 0.5)):
    """Two judges over the same games: each reports a latent verdict with its reliability, else a
    label drawn uniformly. Population kappa follows from the shares (below)."""
    games = simulate_games(STRENGTHS, n_questions, rng)
    latent = rng.choice(3, size=len(games), p=latent_share)
    judged = []
    for r in reliability:
        keep = rng.random(len(games)) < r
        judged.append(games.assign(verdict=LABELS[np.where(keep, latent, rng.integers(0, 3, len(games)))]))
    return judged


def population_kappa(latent_share=(0.5, 0.3, 0.2), reliability=(0.8, 0.5)) -> float:
    p = np.array(latent_share)
    (r1, r2) = reliability
    marginal_1, marginal_2 = r1 * p + (1 - r1) / 3, r2 * p + (1 - r2) / 3
    # Same label k: latent k and both report k, or latent not k and both draw k at random.
    agree = sum(p[k] * (r1 + (1 - r1) / 3) * (r2 + (1 - r2) / 3) + (1 - p[k]) * (1 - r1) / 3 * (1 - r2) / 3
                for k in range(3))
    chance = marginal_1 @ marginal_2
    return (agree - chance) / (1 - chance)


def test_kappa_equals_sklearn_on_the_common_valid_games_and_its_bootstrap_replays_questions():
    first, second = noisy_judges(60, np.random.default_rng(4))
    first.loc[[1, 2], "verdict"] = "invalid"
    second = second.drop(index=[10, 11, 12])  # games the second judge did not judge
    result = judge_agreement(first, second, 50, np.random.default_rng(5))
    common = first.merge(second, on=["query_id", "model_a", "model_b", "shown_first"])
    valid = common[(common["verdict_x"] != "invalid") & (common["verdict_y"] != "invalid")]
    assert result["games_common"] == len(first) - 3 and result["games_both_valid"] == len(first) - 5 == len(valid)
    assert result["kappa"] == pytest.approx(cohen_kappa_score(valid["verdict_x"], valid["verdict_y"]), abs=1e-12)
    assert result["observed_agreement"] == pytest.approx((valid["verdict_x"] == valid["verdict_y"]).mean())
    # Every tournament by hand: its questions redrawn with the same generator, as sample weights.
    questions = sorted(valid["query_id"].unique())
    draws = np.random.default_rng(5).choice(len(questions), size=(50, len(questions)), replace=True)
    replayed = [cohen_kappa_score(valid["verdict_x"], valid["verdict_y"], sample_weight=valid["query_id"].map(
        dict(zip(questions, np.bincount(draw, minlength=len(questions)))))) for draw in draws]
    # The interval: kappa +- t(Q-1) sqrt(Q/(Q-1)) sd of the tournaments (as the BT intervals).
    q = len(questions)
    half = student_t.ppf(0.975, q - 1) * np.sqrt(q / (q - 1)) * np.std(replayed, ddof=1)
    assert [result["kappa_ci_low"], result["kappa_ci_high"]] == pytest.approx([result["kappa"] - half,
                                                                               result["kappa"] + half])


def test_kappa_interval_covers_the_population_kappa_at_about_the_nominal_rate():
    truth = population_kappa()
    covered, estimates = [], []
    for simulation in range(150):
        rng = np.random.default_rng(1000 + simulation)
        result = judge_agreement(*noisy_judges(40, rng), 200, rng)
        covered.append(result["kappa_ci_low"] <= truth <= result["kappa_ci_high"])
        estimates.append(result["kappa"])
    assert abs(np.mean(estimates) - truth) < 0.01  # kappa of 480 games is nearly unbiased
    low, high = binom.interval(0.999, len(covered), 0.95)
    assert low <= np.sum(covered) <= high


# --- self-preference ------------------------------------------------------------------------

def test_self_preference_recovers_a_judge_that_favours_its_own_family():
    """Judge `gemma-judge` adds delta to the logit of gemma-model (its family) in every game; the
    other judges are fair. Centred over M models, the favoured logit rises by delta (1 - 1/M)."""
    delta, models = 1.0, sorted(STRENGTHS)
    favoured = {**STRENGTHS, "m2": STRENGTHS["m2"] + delta}
    games_by_judge = {"gemma-judge": simulate_games(favoured, 120, np.random.default_rng(6)),
                      "llama-judge": simulate_games(STRENGTHS, 120, np.random.default_rng(7)),
                      "qwen-judge": simulate_games(STRENGTHS, 120, np.random.default_rng(8))}
    model_family = {"m2": "gemma", "m1": "llama"}
    judge_family = {"gemma-judge": "gemma", "llama-judge": "llama", "qwen-judge": "qwen"}
    table = self_preference(games_by_judge, models, model_family, judge_family, 0.01, 200,
                            np.random.default_rng(9)).set_index(["judge", "model"])
    assert set(table.index) == {("gemma-judge", "m2"), ("llama-judge", "m1")}
    gemma = table.loc[("gemma-judge", "m2")]
    # Independently: each judge's penalised ML (scipy, game by game), centred over the same models.
    logits = {judge: dict(zip(models, maximum_likelihood(games, models, penalty=0.01)))
              for judge, games in games_by_judge.items()}
    expected = logits["gemma-judge"]["m2"] - (logits["llama-judge"]["m2"] + logits["qwen-judge"]["m2"]) / 2
    assert gemma["self_preference"] == pytest.approx(expected, abs=1e-4)
    assert gemma["other_judges"] == "llama-judge,qwen-judge"
    truth = delta * (1 - 1 / len(models))
    assert gemma["ci_low"] <= truth <= gemma["ci_high"] and gemma["ci_low"] > 0
    fair = table.loc[("llama-judge", "m1")]  # a fair judge of its own family: no preference
    assert fair["ci_low"] <= 0 <= fair["ci_high"]


def test_self_preference_resamples_the_same_questions_for_every_judge():
    """Two judges with identical verdicts: every tournament gives both the same logits, so the
    gap and its whole interval are 0 (resampling each judge apart would spread it)."""
    games = simulate_games(STRENGTHS, 30, np.random.default_rng(31))
    table = self_preference({"own": games, "copy": games.copy()}, sorted(STRENGTHS), {"m1": "f"},
                            {"own": "f", "copy": "g"}, 0.01, 50, np.random.default_rng(32))
    assert table[["self_preference", "ci_low", "ci_high"]].iloc[0].tolist() == pytest.approx([0, 0, 0], abs=1e-9)


SPREAD = {model: 2 * strength for model, strength in STRENGTHS.items()}  # judges that clearly discriminate


def test_self_preference_compares_judges_on_the_models_all_of_them_played():
    models = sorted(SPREAD)
    subset = simulate_games({m: SPREAD[m] for m in models[:3]}, 60, np.random.default_rng(10))
    games_by_judge = {"j1": simulate_games(SPREAD, 60, np.random.default_rng(11)), "j2": subset}
    table = self_preference(games_by_judge, models, {"m0": "f"}, {"j1": "f", "j2": "g"}, 0.01, 30,
                            np.random.default_rng(12))
    row = table.iloc[0]
    assert row["models_compared"] == 3
    j1_three = games_by_judge["j1"].query("model_a != 'm3' and model_b != 'm3'")
    expected = maximum_likelihood(j1_three, models[:3], 0.01)[0] - maximum_likelihood(subset, models[:3], 0.01)[0]
    assert row["self_preference"] == pytest.approx(expected, abs=1e-4)


def test_self_preference_compares_judges_on_the_questions_all_of_them_judged():
    """A judge run on a few questions (max_questions): the other judge is refitted on those
    questions only, and no bootstrap tournament leaves a judge without games. Below 10 questions
    the gap has no interval."""
    models = sorted(SPREAD)
    full = simulate_games(SPREAD, 40, np.random.default_rng(14))
    for count in (12, 3):
        few_questions = sorted(full["query_id"].unique())[:count]
        few = simulate_games(SPREAD, 40, np.random.default_rng(15)).query("query_id in @few_questions")
        table = self_preference({"j1": full, "j2": few}, models, {"m0": "f"}, {"j1": "f", "j2": "g"}, 0.01, 200,
                                np.random.default_rng(16))
        row = table.iloc[0]
        assert row["questions_compared"] == count
        expected = (maximum_likelihood(full.query("query_id in @few_questions"), models, 0.01)[0]
                    - maximum_likelihood(few, models, 0.01)[0])
        if count == 3:  # too few questions to tell whether the judges discriminate: no comparison at all
            assert np.isnan(row["self_preference"]) and "does not discriminate" in row["note"]
            continue
        assert row["self_preference"] == pytest.approx(expected, abs=1e-4)
        assert row["ci_low"] <= row["self_preference"] <= row["ci_high"]


def test_self_preference_of_a_judge_that_answers_by_position_is_not_computed():
    """The demo's Gemma judge picks the first answer every time: every model gets the same
    logit under it, and its 'self-preference' would only be the other judge's gap."""
    models = sorted(SPREAD)
    first = simulate_games(SPREAD, 30, np.random.default_rng(17))
    first["verdict"] = np.where(first["shown_first"] == first["model_a"], "model_a", "model_b")
    table = self_preference({"first": first, "fair": simulate_games(SPREAD, 30, np.random.default_rng(18))}, models,
                            {"m3": "f"}, {"first": "f", "fair": "g"}, 0.01, 50, np.random.default_rng(19))
    row = table.iloc[0]
    assert not row["discriminates"] and row["position_consistency"] == 0 and np.isnan(row["self_preference"])
    assert row["note"].startswith("first does not discriminate: position consistency 0.00")


def test_self_preference_without_a_judge_of_another_family_is_nan_and_says_why():
    games = simulate_games(SPREAD, 30, np.random.default_rng(13))
    table = self_preference({"j1": games, "j2": games}, sorted(SPREAD), {"m0": "f"}, {"j1": "f", "j2": "f"},
                            0.01, 20, np.random.default_rng(0))
    assert len(table) == 2 and table["self_preference"].isna().all()
    assert (table["other_judges"] == "none").all() and table["note"].str.startswith("no judge of another family").all()


# --- panel ----------------------------------------------------------------------------------

def one_game(verdict, query_id="q1", shown_first="a"):
    return {"query_id": query_id, "model_a": "a", "model_b": "b", "shown_first": shown_first, "verdict": verdict}


def test_panel_votes_by_plurality_on_the_games_every_member_judged():
    rows = {  # game: verdicts of judges x, y, z (None: not judged by that member)
        ("q1", "a"): ("model_a", "model_a", "model_b"),  # 2-1: model_a
        ("q1", "b"): ("model_a", "model_b", "tie"),  # three-way split: tie
        ("q2", "a"): ("invalid", "model_b", "invalid"),  # two abstentions: model_b alone
        ("q2", "b"): ("invalid", "invalid", "invalid"),  # no valid vote: invalid
        ("q3", "a"): ("tie", "model_b", "model_b"),
        ("q3", "b"): ("model_a", "model_b", None),  # z did not judge it: outside the panel
    }
    games_by_judge = {judge: pd.DataFrame([one_game(v[k], q, first) for (q, first), v in rows.items() if v[k]])
                      for k, judge in enumerate("xyz")}
    panel = panel_games(games_by_judge).set_index(["query_id", "shown_first"])
    assert panel["verdict"].to_dict() == {("q1", "a"): "model_a", ("q1", "b"): "tie", ("q2", "a"): "model_b",
                                          ("q2", "b"): "invalid", ("q3", "a"): "model_b"}
    assert panel["votes"].tolist() == [3, 3, 1, 0, 3]
    np.testing.assert_allclose(panel["agreement"], [2 / 3, 1 / 3, 1.0, np.nan, 2 / 3])
    judged = [game for game in rows if None not in rows[game]]
    assert [panel.loc[game, ["verdict_x", "verdict_y", "verdict_z"]].tolist() for game in judged] == \
        [list(rows[game]) for game in judged]
    # Agreement over the games with two or more votes only: a lone vote agrees with itself.
    assert panel_agreement(panel.reset_index()) == {"panel_multi_vote_games": 3, "panel_agreement": pytest.approx(5 / 9),
                                                    "panel_unanimous_rate": 0.0}
    coverage = panel_coverage(games_by_judge, panel).set_index("member")
    assert coverage["games_judged"].to_dict() == {"x": 6, "y": 6, "z": 5}
    assert coverage.loc["x", "share_in_panel"] == 5 / 6 and coverage["valid_votes_in_panel"].to_dict() == {
        "x": 3, "y": 4, "z": 3}


def test_a_member_judging_some_models_does_not_move_the_others_in_the_panel():
    """A full judge and a judge of two of four models that disagrees with it: voting on every
    game any member judged would turn their splits into ties for those two models only, moving
    them against the other two; the panel of the common games leaves the others out."""
    full = simulate_games(STRENGTHS, 40, np.random.default_rng(31))
    subset = full[(full["model_a"] == "m0") & (full["model_b"] == "m3")].copy()
    subset["verdict"] = np.where(subset["verdict"] == "model_a", "model_b", "model_a")  # always disagrees
    panel = panel_games({"full": full, "subset": subset})
    assert set(zip(panel["model_a"], panel["model_b"])) == {("m0", "m3")} and len(panel) == len(subset)
    assert (panel["verdict"] == "tie").all() and panel_agreement(panel)["panel_agreement"] == 0.5
    with pytest.raises(DataError, match="no game in common"):
        panel_games({"full": full, "other": full.assign(query_id=full["query_id"] + "-elsewhere")})


def test_a_panel_of_two_judges_is_their_pooled_games_at_half_the_penalty():
    """The documented equivalence for members that never call a tie: a split of two is a tie, as
    pooling counts it (half a win each), and pooled games are twice as many, so the penalty weighs
    half."""
    models = sorted(STRENGTHS)
    first = simulate_games(STRENGTHS, 30, np.random.default_rng(14))
    second = simulate_games(STRENGTHS, 30, np.random.default_rng(15), first_position_bias=0.8)
    panel = panel_games({"first": first, "second": second})
    pooled = pd.concat([first, second])
    # A penalty strong enough to matter: the pooled fit at 1.0 is the panel's at 0.5.
    np.testing.assert_allclose(fit_logits(win_matrix(panel, models), 0.5),
                               maximum_likelihood(pooled, models, penalty=1.0), atol=1e-5)


def test_a_majority_outvotes_a_position_biased_member_and_the_panel_table_fits_like_any_judge():
    models = sorted(STRENGTHS)
    fair = [simulate_games(STRENGTHS, 100, np.random.default_rng(seed)) for seed in (16, 17)]
    biased = simulate_games(STRENGTHS, 100, np.random.default_rng(18))
    biased["verdict"] = np.where(biased["shown_first"] == biased["model_a"], "model_a", "model_b")
    panel = panel_games({"fair-1": fair[0], "fair-2": fair[1], "first-picker": biased})
    table = bradley_terry(panel, models, 0.01, 30, np.random.default_rng(19))[0]
    assert table["model"].tolist() == models  # the true order
    assert judge_diagnostics(biased)["position_consistency"] == 0
    assert judge_diagnostics(panel)["position_consistency"] > 0.5
    # Unanimous games exactly where the three agree.
    unanimous = (fair[0]["verdict"].to_numpy() == fair[1]["verdict"].to_numpy()) & (
        fair[0]["verdict"].to_numpy() == biased["verdict"].to_numpy())
    merged = panel.merge(fair[0][["query_id", "model_a", "model_b", "shown_first"]].assign(unanimous=unanimous))
    assert ((merged["agreement"] == 1) == merged["unanimous"]).all()
