"""Arena statistics checked against simulations with known answers and independent computations."""

from __future__ import annotations

import choix
import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, kendalltau, norm
from scipy.stats import t as student_t

from polyrag.arena.bradley_terry import bradley_terry, fit_logits, intervals_and_ranks
from polyrag.arena.games import gather_games, position_bias, read_games, tally, win_matrix
from polyrag.arena.leaderboard import language_table, leaderboard
from polyrag.errors import DataError
from tests.helpers.arena import maximum_likelihood, simulate_games, wilson


STRENGTHS = {"m0": 1.5, "m1": 0.9, "m2": 0.4, "m3": 0.0, "m4": -0.5, "m5": -1.1, "m6": -1.6}


def centred(values):
    values = np.array(values, float)
    return values - values.mean()


def test_fit_matches_independent_maximum_likelihood_with_ties_as_half_wins():
    games = simulate_games(STRENGTHS, 40, np.random.default_rng(0), tie_rate=0.2)
    models = sorted(STRENGTHS)
    assert (games["verdict"] == "tie").mean() == pytest.approx(0.2, abs=0.03)
    choix_logits = fit_logits(win_matrix(games, models), regularization=1e-6)
    np.testing.assert_allclose(choix_logits, maximum_likelihood(games, models), atol=1e-3)


def test_recovers_known_strengths_from_simulated_games():
    games = simulate_games(STRENGTHS, 200, np.random.default_rng(1))
    models = sorted(STRENGTHS)
    logits = fit_logits(win_matrix(games, models), regularization=0.01)
    assert kendalltau(logits, [STRENGTHS[m] for m in models]).statistic == 1.0
    np.testing.assert_allclose(logits, centred([STRENGTHS[m] for m in models]), atol=0.12)


def test_batched_newton_fit_equals_scikit_learns_penalised_logistic_regression():
    """The same objective through scikit-learn (the pairs as rows, no intercept, C = 1 / (2 regularization)),
    including a model that wins every game and a pair never played, for a stack of tournaments."""
    from sklearn.linear_model import LogisticRegression

    from polyrag.arena.bradley_terry import fit_logits_batch

    rng = np.random.default_rng(9)
    stack = rng.integers(0, 6, (5, 4, 4)).astype(float)
    stack[:, np.arange(4), np.arange(4)] = 0
    stack[0, 0, 1:], stack[0, 1:, 0] = 7, 0  # model 0 wins everything
    stack[1, 2, 3] = stack[1, 3, 2] = 0  # a pair never played
    first, second = np.triu_indices(4, k=1)
    design = np.zeros((len(first), 4))
    design[np.arange(len(first)), first], design[np.arange(len(first)), second] = 1.0, -1.0
    for wins, fitted in zip(stack, fit_logits_batch(stack, 0.05)):
        regression = LogisticRegression(C=1 / (2 * 0.05), fit_intercept=False, tol=1e-12, max_iter=10_000).fit(
            np.vstack([design, design]), np.r_[np.ones(len(first)), np.zeros(len(first))],
            sample_weight=np.r_[wins[first, second], wins[second, first]])
        expected = regression.coef_[0] - regression.coef_[0].mean()
        np.testing.assert_allclose(fitted, expected, atol=1e-6)
        np.testing.assert_allclose(fit_logits(wins, 0.05), fitted, atol=1e-12)


def test_fit_is_the_l2_penalised_maximum_likelihood_of_choix_opt_pairwise():
    """A penalty strong enough to matter: the fit is the penalised ML (scipy, game by game) and
    choix's opt_pairwise with the same penalty (whole games, so choix needs no tie handling)."""
    games = simulate_games(STRENGTHS, 8, np.random.default_rng(4))
    models = sorted(STRENGTHS)
    fitted = fit_logits(win_matrix(games, models), regularization=0.5)
    np.testing.assert_allclose(fitted, maximum_likelihood(games, models, penalty=0.5), atol=1e-5)
    index = {m: i for i, m in enumerate(models)}
    winners = games["model_a"].where(games["verdict"] == "model_a", games["model_b"])
    losers = games["model_b"].where(games["verdict"] == "model_a", games["model_a"])
    reference = choix.opt_pairwise(len(models), list(zip(winners.map(index), losers.map(index))), alpha=0.5)
    np.testing.assert_allclose(fitted, reference - reference.mean(), atol=1e-4)
    assert np.abs(fitted).max() < np.abs(maximum_likelihood(games, models)).max()  # shrunk towards 0


def test_two_models_with_the_same_games_share_their_rank():
    """A system copied from another plays its games; their logits then differ by solver noise
    only (-7.607e-17 against -7.649e-17 in one language), which ranked them 2 and 3
    (``rank_by`` alone: tests/stats/test_bootstrap.py)."""
    games = simulate_games({"a": 1.0, "b": 0.0, "c": -1.0}, 12, np.random.default_rng(4))
    copy = games[(games["model_a"] == "b") | (games["model_b"] == "b")].replace("b", "b2")
    copy = copy.assign(model_a=copy[["model_a", "model_b"]].min(axis=1), model_b=copy[["model_a", "model_b"]].max(axis=1),
                       verdict=np.where(copy["model_a"] <= copy["model_b"], copy["verdict"],
                                        copy["verdict"].map({"model_a": "model_b", "model_b": "model_a", "tie": "tie"})))
    ties = pd.DataFrame([{"query_id": f"q{q}", "model_a": "b", "model_b": "b2", "shown_first": first, "verdict": "tie"}
                         for q in range(12) for first in ("b", "b2")])
    table = bradley_terry(pd.concat([games, copy, ties], ignore_index=True), ["a", "b", "b2", "c"], 0.01, 20,
                          np.random.default_rng(5))[0].set_index("model")
    assert table.loc["b", "rank"] == table.loc["b2", "rank"] == 2 and table.loc["c", "rank"] == 4


def test_a_model_that_wins_every_game_gets_the_same_finite_penalised_fit_in_every_tournament():
    games = simulate_games({"a": 50.0, "b": 0.0, "c": -50.0}, 10, np.random.default_rng(2))
    models = ["a", "b", "c"]
    assert set(games.loc[games["model_a"] == "a", "verdict"]) == {"model_a"}
    table, bootstrap, tournaments = bradley_terry(games, models, 0.01, 50, np.random.default_rng(3))
    assert np.isfinite(table[["logit", "ci_low", "ci_high"]].to_numpy()).all()
    assert table["model"].tolist() == models
    np.testing.assert_allclose(table["logit"], maximum_likelihood(games, models, penalty=0.01), atol=1e-4)
    # Every bootstrap tournament is the same estimator on its replayed questions.
    for tournament in (0, 17, 49):
        drawn = tournaments[tournaments["tournament"] == tournament]
        replayed = pd.concat([games[games["query_id"] == q] for q, c in zip(drawn["query_id"], drawn["count"])
                              for _ in range(c)])
        np.testing.assert_allclose(bootstrap.query(f"tournament == {tournament}")["logit"],
                                   maximum_likelihood(replayed, models, penalty=0.01), atol=1e-4)


@pytest.mark.slow  # 150 simulated arenas x 301 fits: about 40 s
def test_bootstrap_interval_covers_the_true_value_with_few_questions():
    """12 questions, the size of a small language's arena: percentile intervals of 200 tournaments
    (MIRAGE-BENCH's) covered about 0.91 here; the t-corrected interval covers 0.95."""
    strengths = {"a": 0.8, "b": 0.3, "c": -0.2, "d": -0.9}
    truth = pd.Series(centred(list(strengths.values())), index=list(strengths))
    covered = []
    for simulation in range(150):
        rng = np.random.default_rng(100 + simulation)
        games = simulate_games(strengths, 12, rng)
        table = bradley_terry(games, sorted(strengths), 0.01, 300, rng)[0].set_index("model")
        covered += list((table["ci_low"] <= truth[table.index]) & (truth[table.index] <= table["ci_high"]))
    # 600 intervals at a nominal 95%: within the binomial 99.9% range of the count, both sides.
    low, high = binom.interval(0.999, len(covered), 0.95)
    assert low <= np.sum(covered) <= high


def test_invalid_verdicts_are_excluded_and_counted():
    games = simulate_games({"a": 0.5, "b": 0.0}, 6, np.random.default_rng(5))
    games.loc[[0, 3], "verdict"] = "invalid"
    games.loc[[1], "verdict"] = "tie"
    counts = tally(games, ["a", "b"]).set_index("model")
    assert counts.loc["a", "invalid"] == 2 and counts.loc["a", "games"] == len(games) - 2
    assert counts.loc["a", "ties"] == 1
    assert counts.loc["a", "wins"] + counts.loc["a", "losses"] + counts.loc["a", "ties"] == len(games) - 2
    assert win_matrix(games, ["a", "b"]).sum() == len(games) - 2


def test_bootstrap_resamples_questions_with_all_their_games_and_is_seeded():
    games = simulate_games(STRENGTHS, 12, np.random.default_rng(6))
    models = sorted(STRENGTHS)
    first = bradley_terry(games, models, 0.01, 30, np.random.default_rng(7))
    second = bradley_terry(games, models, 0.01, 30, np.random.default_rng(7))
    pd.testing.assert_frame_equal(first[0], second[0])
    tournaments = first[2]
    assert (tournaments.groupby("tournament")["count"].sum() == 12).all()
    # Tournament 0 refitted by hand from its drawn questions, each repeated `count` times.
    drawn = tournaments[tournaments["tournament"] == 0]
    replayed = pd.concat([games[games["query_id"] == q] for q, c in zip(drawn["query_id"], drawn["count"])
                          for _ in range(c)])
    expected = fit_logits(win_matrix(replayed, models), 0.01)
    np.testing.assert_allclose(first[1].query("tournament == 0")["logit"], expected, atol=1e-9)


def test_a_model_that_played_few_questions_gets_the_critical_value_of_its_own_questions(caplog):
    """m6 plays on 4 of 12 questions (it joined late; one of its verdicts on a fifth is invalid):
    its interval is t(3) sqrt(4/3) bootstrap sds wide, not t(11) sqrt(12/11), and so are the
    pairs it is in; the warning of too few questions names it and no other model; the
    leaderboard of this one language keeps the same interval."""
    games = simulate_games(STRENGTHS, 12, np.random.default_rng(11))
    models = sorted(STRENGTHS)
    late = games["model_a"].eq("m6") | games["model_b"].eq("m6")
    games = games[~late | games["query_id"].isin(["q0", "q3", "q7", "q9", "q10"])].copy()
    games.loc[late & games["query_id"].eq("q10"), "verdict"] = "invalid"
    table, bootstrap, _ = bradley_terry(games, models, 0.01, 200, np.random.default_rng(12))
    table = table.set_index("model").loc[models]
    assert table["model_questions"].tolist() == [12] * 6 + [4] and (table["n_questions"] == 12).all()
    sd = bootstrap.pivot(index="tournament", columns="model", values="logit")[models].std(ddof=1)
    own = student_t.ppf(0.975, 3) * np.sqrt(4 / 3)
    assert (table["ci_high"] - table["ci_low"])["m6"] == pytest.approx(2 * own * sd["m6"])
    arena = student_t.ppf(0.975, 11) * np.sqrt(12 / 11)
    assert (table["ci_high"] - table["ci_low"])["m0"] == pytest.approx(2 * arena * sd["m0"])
    # a pair takes the fewer of its two models' questions
    point = np.array([0.0, 7.0, 7.0 - 5.2])  # difference sd about 1.41
    samples = point + np.random.default_rng(0).normal(0, 1, (4000, 3))
    sd_1_2 = (samples[:, 1] - samples[:, 2]).std(ddof=1)
    critical_4 = student_t.ppf(1 - 0.025 / 3, 3) * np.sqrt(4 / 3)
    assert 5.2 < critical_4 * sd_1_2 and 5.2 > student_t.ppf(1 - 0.025 / 3, 99) * np.sqrt(100 / 99) * sd_1_2
    _, _, best, worst = intervals_and_ranks(point, samples, np.array([100, 100, 4]))
    assert best[1] == 1 and worst[1] == 2 and best[2] == 1  # 1 vs 2: not ordered at 4 questions
    _, _, best, _ = intervals_and_ranks(point, samples, 100)
    assert best[2] == 2  # ordered at 100
    from polyrag.arena.bradley_terry import few_questions_warnings
    warnings = few_questions_warnings(table.reset_index(), "j", "en")
    assert len(warnings) == 1 and "m6 has games on only 4 questions" in warnings[0]
    rows = table.reset_index()
    surrogate_rows = rows[["model"]].assign(predicted_logit=rows["logit"])
    one = language_table("en", rows, bootstrap, surrogate_rows, bootstrap.rename(columns={"logit": "predicted_logit"}))
    overall, by_language = leaderboard({"en": one})
    overall = overall.set_index("model").loc[models]
    assert overall["ci_low"].to_numpy() == pytest.approx(table["ci_low"].to_numpy())
    assert by_language.set_index("model").loc["m6", "model_questions"] == 4


def test_rank_ranges_come_from_simultaneous_intervals_of_the_differences():
    """Bootstrap samples with known spreads: a pair is ordered when its difference exceeds the
    max-|t| critical value of all pairs times its SD (stepdown; polyrag.stats.rank_ranges, whose
    tests check the critical values), not Bonferroni's; the ranks follow."""
    rng = np.random.default_rng(3)
    point = np.array([2.0, 1.0, 0.9, -3.0])
    samples = point + rng.normal(0, 0.2, (4000, 4))
    low, high, best, worst = intervals_and_ranks(point, samples, 100)
    bonferroni = student_t.ppf(1 - 0.025 / 6, 99) * np.sqrt(100 / 99)  # 6 pairs
    sd = (samples[:, 0] - samples[:, 1]).std(ddof=1)
    assert point[0] - point[1] > bonferroni * sd  # 1.0 apart: ordered
    assert best.tolist() == [1, 2, 2, 4] and worst.tolist() == [1, 3, 3, 4]  # 1.0 vs 0.9: not ordered
    factor = np.sqrt(100 / 99) * student_t.ppf(0.975, 99) / norm.ppf(0.975)
    assert high - low == pytest.approx(2 * factor * norm.ppf(0.975) * samples.std(axis=0, ddof=1))
    # 0.75 apart at sd 0.28: inside Bonferroni's 2.9 sds, outside the max-|t| stepdown's
    point = np.array([0.75, 0.0, 10.0, 20.0])
    samples = point + rng.normal(0, 0.2, (4000, 4))
    sd = (samples[:, 0] - samples[:, 1]).std(ddof=1)
    assert 0.75 < bonferroni * sd
    assert intervals_and_ranks(point, samples, 100)[2].tolist() == [3, 4, 2, 1]
    assert intervals_and_ranks(point, samples, 100, method="bonferroni")[2].tolist() == [3, 3, 2, 1]


@pytest.mark.slow  # 200 arenas x 301 fits: about 45 s
def test_rank_ranges_hold_jointly():
    """Every model's true rank inside its range at once, in 95% of arenas (6 models, 30 questions);
    ranges from overlapping marginal intervals make no joint promise."""
    strengths = dict(zip("abcdef", [1.2, 0.7, 0.3, 0.0, -0.6, -1.6]))
    true_rank = pd.Series(strengths).rank(ascending=False).astype(int)
    joint = []
    for simulation in range(200):
        rng = np.random.default_rng(500 + simulation)
        table = bradley_terry(simulate_games(strengths, 30, rng), sorted(strengths), 0.01, 300, rng)[0]
        table = table.set_index("model").loc[true_rank.index]
        joint.append(bool(((table["rank_best"] <= true_rank) & (true_rank <= table["rank_worst"])).all()))
    assert np.sum(joint) >= binom.interval(0.999, len(joint), 0.95)[0]


def test_unreadable_verdicts_name_the_file_and_row(tmp_path):
    path = tmp_path / "a__b.parquet"
    pd.DataFrame([{"query_id": "q1", "model_a": "a", "model_b": "b", "shown_first": "a", "verdict": "A"}]).to_parquet(path)
    with pytest.raises(DataError, match=r"a__b.parquet: row 0: verdict 'A'"):
        read_games([path])


def test_gathered_games_read_as_the_pairs_files_read(tmp_path):
    """One games file per judge and language instead of one per pair: the same games, columns and
    types as reading the pairs' files (a pair without arena games included); a file of other
    columns is named."""
    from polyrag.judge.play import write_games

    games = simulate_games({"a": 0.5, "b": 0.0, "c": -0.3}, 4, np.random.default_rng(5))
    games["raw_output"], games["judge_calls"], games["judge_tokens"] = "[[A]] é", 1, 12
    paths = []
    for (a, b), pair in games.groupby(["model_a", "model_b"], sort=True):
        paths.append(tmp_path / f"{a}__{b}.parquet")
        write_games(pair.to_dict("records"), paths[-1])
    paths.append(tmp_path / "c__d.parquet")
    write_games([], paths[-1])
    assert gather_games(paths, tmp_path / "games.parquet") == len(games)
    columns = ("raw_output", "judge_calls", "judge_tokens")
    gathered, separate = read_games([tmp_path / "games.parquet"], columns), read_games(paths, columns)
    pd.testing.assert_frame_equal(gathered, separate)
    assert gathered[["query_id", "model_a", "model_b", "verdict"]].values.tolist() == \
        games.sort_values(["model_a", "model_b"], kind="stable")[["query_id", "model_a", "model_b", "verdict"]].values.tolist()
    pd.DataFrame({"query_id": ["q1"], "verdict": ["tie"]}).to_parquet(tmp_path / "odd.parquet")
    with pytest.raises(DataError, match=r"odd.parquet: its columns \(\['query_id', 'verdict'\]"):
        gather_games([paths[0], tmp_path / "odd.parquet"], tmp_path / "games.parquet")


def test_position_bias_recovers_a_judge_that_favours_the_first_answer():
    equal = {m: 0.0 for m in "abcd"}
    true_rate = 0.7  # the judge's first-position win probability between equal models
    games = simulate_games(equal, 150, np.random.default_rng(9), first_position_bias=np.log(true_rate / (1 - true_rate)))
    bias = position_bias(games)
    winners = [row.model_a if row.verdict == "model_a" else row.model_b for row in games.itertuples()]
    first_wins = sum(w == row.shown_first for w, row in zip(winners, games.itertuples()))
    assert bias["decisive_games"] == len(games) == 1800 and bias["first_position_wins"] == first_wins
    # Clustered by question, never narrower than the interval treating every game as independent.
    independent = wilson(first_wins, 1800)
    assert bias["first_position_ci_low"] <= independent[0] + 1e-8 and bias["first_position_ci_high"] >= independent[1] - 1e-8
    standard_error = np.sqrt(true_rate * (1 - true_rate) / 1800)
    assert abs(bias["first_position_win_rate"] - true_rate) < 3 * standard_error
    assert bias["first_position_ci_low"] <= true_rate <= bias["first_position_ci_high"]
    assert bias["first_position_ci_low"] > 0.5


def test_position_bias_of_an_unbiased_judge_covers_one_half_and_counts_lone_orders():
    games = simulate_games(STRENGTHS, 40, np.random.default_rng(10), tie_rate=0.1)
    # Three questions lose one order of a pair to an invalid verdict: the other order counts alone.
    lone = games.groupby(["query_id", "model_a", "model_b"]).head(1).index[:3]
    games.loc[lone, "verdict"] = "invalid"
    bias = position_bias(games)
    assert bias["games_without_other_order"] == 3 and bias["invalid"] == 3
    assert bias["ties"] == (games["verdict"] == "tie").sum()
    assert bias["decisive_games"] == len(games) - 3 - bias["ties"]
    assert bias["first_position_ci_low"] <= 0.5 <= bias["first_position_ci_high"]


def test_shown_first_must_be_one_of_the_pair(tmp_path):
    path = tmp_path / "a__b.parquet"
    pd.DataFrame([{"query_id": "q1", "model_a": "a", "model_b": "b", "shown_first": "c", "verdict": "tie"}]).to_parquet(path)
    with pytest.raises(DataError, match=r"a__b.parquet: row 0: shown_first 'c'"):
        read_games([path])


def test_a_model_with_no_valid_game_stops_the_fit():
    games = simulate_games({"a": 0.5, "b": 0.0, "c": 0.1}, 3, np.random.default_rng(8))
    games.loc[(games["model_a"] == "c") | (games["model_b"] == "c"), "verdict"] = "invalid"
    with pytest.raises(DataError, match=r"no valid game for \['c'\]"):
        bradley_terry(games, ["a", "b", "c"], 0.01, 10, np.random.default_rng(0))


def davidson_negative_log_likelihood(parameters: np.ndarray, games: pd.DataFrame, models: list[str],
                                     penalty: float) -> float:
    """Davidson's penalised negative log-likelihood written from its definition, game by game."""
    logit, nu = parameters[:-1], np.exp(parameters[-1])
    index = {model: i for i, model in enumerate(models)}
    valid = games[games["verdict"] != "invalid"]
    a = np.exp(logit[valid["model_a"].map(index).to_numpy()])
    b = np.exp(logit[valid["model_b"].map(index).to_numpy()])
    denominator = a + b + nu * np.sqrt(a * b)
    p = np.select([valid["verdict"].eq("model_a"), valid["verdict"].eq("model_b")], [a, b], nu * np.sqrt(a * b))
    return -(np.log(p / denominator).sum() - penalty * (logit**2).sum())


def test_davidson_fit_is_the_direct_maximum_of_davidsons_likelihood_and_recovers_known_parameters():
    """Games simulated from Davidson's model with known logits and tie parameter (nu 0.8: about a
    quarter of games tied): the batched Newton fit equals scipy's BFGS maximisation of the
    likelihood written above, and recovers the truth; counting ties as half a win instead shrinks
    every logit toward 0."""
    from scipy.optimize import minimize

    from polyrag.arena.bradley_terry import fit_davidson_batch
    from polyrag.arena.games import question_outcome_matrices
    from tests.helpers.arena import simulate_davidson_games

    strengths = {"a": 1.0, "b": 0.4, "c": 0.0, "d": -0.5, "e": -0.9}
    models = sorted(strengths)
    games = simulate_davidson_games(strengths, 0.8, 400, np.random.default_rng(21))
    _, decisive, ties = question_outcome_matrices(games, models)
    (logit,), (log_nu,) = fit_davidson_batch(decisive.sum(axis=0)[None], ties.sum(axis=0)[None], 0.01)
    direct = minimize(davidson_negative_log_likelihood, np.zeros(len(models) + 1), args=(games, models, 0.01),
                      method="BFGS", options={"gtol": 1e-8})
    assert logit == pytest.approx(direct.x[:-1] - direct.x[:-1].mean(), abs=1e-5)
    assert log_nu == pytest.approx(direct.x[-1], abs=1e-5)
    truth = np.array([strengths[m] for m in models])
    assert logit == pytest.approx(truth - truth.mean(), abs=0.08) and np.exp(log_nu) == pytest.approx(0.8, abs=0.05)
    table = bradley_terry(games, models, 0.01, 50, np.random.default_rng(1), ties="davidson")[0].set_index("model")
    assert table.loc[models, "logit"].to_numpy() == pytest.approx(logit, abs=1e-9)
    assert table["tie_parameter"].iloc[0] == pytest.approx(np.exp(log_nu))
    assert table["tie_parameter_ci_low"].iloc[0] < 0.8 < table["tie_parameter_ci_high"].iloc[0]
    half = bradley_terry(games, models, 0.01, 50, np.random.default_rng(1))[0].set_index("model")
    assert (np.abs(half.loc[models, "logit"]) < np.abs(table.loc[models, "logit"])).all()
    assert "tie_parameter" not in half


def test_davidson_without_ties_is_bradley_terry_and_an_unknown_tie_model_is_refused():
    games = simulate_games({"a": 0.5, "b": 0.0, "c": -0.5}, 30, np.random.default_rng(4))
    models = ["a", "b", "c"]
    davidson = bradley_terry(games, models, 0.01, 20, np.random.default_rng(2), ties="davidson")[0]
    half = bradley_terry(games, models, 0.01, 20, np.random.default_rng(2))[0]
    assert davidson["logit"].to_numpy() == pytest.approx(half["logit"].to_numpy(), abs=1e-7)
    assert davidson["tie_parameter"].iloc[0] < 1e-12
    with pytest.raises(ValueError, match="arena.ties 'thirds'"):
        bradley_terry(games, models, 0.01, 20, np.random.default_rng(2), ties="thirds")
