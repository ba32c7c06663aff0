"""Arena statistics checked against simulations with known answers and independent computations."""

from __future__ import annotations

import choix
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.stats import binom, kendalltau, norm
from scipy.stats import t as student_t

from polyrag.arena.bradley_terry import bradley_terry, fit_logits, intervals_and_ranks
from polyrag.arena.games import gather_games, position_bias, read_games, tally, win_matrix
from polyrag.arena.leaderboard import (language_table, leaderboard, short_leaderboard, with_mars_scores, with_retrieval,
                                       with_systems)
from polyrag.arena.surrogate import surrogate
from polyrag.errors import DataError


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
    only (-7.607e-17 against -7.649e-17 in one language), which ranked them 2 and 3."""
    from polyrag.arena.bradley_terry import rank_by

    assert rank_by([0.5, -7.607e-17, -7.649e-17, -0.5]).tolist() == [1.0, 2.0, 2.0, 4.0]
    assert rank_by([1.0, np.nan, 0.0]).isna().tolist() == [False, True, False]
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
    samples = np.array([[0.0, 0.0, 0.0]]) + np.random.default_rng(0).normal(0, 1, (4000, 3))
    point = np.array([0.0, 7.0, 7.0 - 5.2])  # difference sd about 1.41
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
    Bonferroni t critical value times its SD (computed here by hand), and the ranks follow."""
    rng = np.random.default_rng(3)
    point = np.array([2.0, 1.0, 0.9, -3.0])
    samples = point + rng.normal(0, 0.2, (4000, 4))
    low, high, best, worst = intervals_and_ranks(point, samples, 100)
    critical = student_t.ppf(1 - 0.025 / 6, 99) * np.sqrt(100 / 99)  # 6 pairs
    sd = (samples[:, 0] - samples[:, 1]).std(ddof=1)
    assert point[0] - point[1] > critical * sd  # 1.0 apart: ordered
    assert best.tolist() == [1, 2, 2, 4] and worst.tolist() == [1, 3, 3, 4]  # 1.0 vs 0.9: not ordered
    factor = np.sqrt(100 / 99) * student_t.ppf(0.975, 99) / norm.ppf(0.975)
    assert high - low == pytest.approx(2 * factor * norm.ppf(0.975) * samples.std(axis=0, ddof=1))


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


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval written out (independent of scipy)."""
    p = k / n
    centre, half = p + z**2 / (2 * n), z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return (centre - half) / (1 + z**2 / n), (centre + half) / (1 + z**2 / n)


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


# --- surrogate ------------------------------------------------------------------------------

def known_function_arena(n_models: int = 8, n_questions: int = 30, seed: int = 0, signal: bool = True):
    """Models whose BT logit in every tournament is exactly 2 x their mean `quality` feature over
    that tournament's questions; `noise` is unrelated. One extra model is never judged. Without
    ``signal``, `quality` is then redrawn independently of the logits (a level per model)."""
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(n_models)]
    level = dict(zip(models + ["new"], np.linspace(1, 0, n_models + 1)[np.r_[0:3, 4:n_models + 1, 3]]))
    questions = [f"q{i}" for i in range(n_questions)]
    features = {m: pd.DataFrame({"query_id": questions,
                                 "quality": level[m] + rng.normal(0, 0.05, n_questions),
                                 "noise": rng.normal(0, 1, n_questions)}) for m in models + ["new"]}
    tournaments, bootstrap = [], []
    for t in range(60):
        counts = pd.Series(np.bincount(rng.choice(n_questions, n_questions), minlength=n_questions),
                           index=questions)
        counts = counts[counts > 0]
        tournaments.append(pd.DataFrame({"tournament": t, "query_id": counts.index, "count": counts.to_numpy()}))
        for m in models:
            quality = features[m].set_index("query_id").loc[counts.index, "quality"]
            bootstrap.append({"tournament": t, "model": m, "logit": 2 * np.average(quality, weights=counts)})
    bootstrap = pd.DataFrame(bootstrap)
    point = {m: 2 * features[m]["quality"].mean() for m in models}
    bt = pd.DataFrame({"model": models, "logit": [point[m] for m in models]})
    if not signal:
        for m in models + ["new"]:
            features[m]["quality"] = rng.uniform(0, 1) + rng.normal(0, 0.05, n_questions)
    return features, bt, bootstrap, pd.concat(tournaments, ignore_index=True), questions, level


@pytest.mark.parametrize("regressor", ["random_forest", "linear", "gradient_boosting", "svr", "mlp"])
def test_surrogate_reproduces_a_ranking_that_is_a_known_function_of_the_features(regressor):
    features, bt, bootstrap, tournaments, questions, level = known_function_arena()
    table, samples, metrics, model_features = surrogate(
        features, bt, bootstrap, tournaments, questions, regressor, {}, holdout=2, repeats=10, seed=0)
    assert table.loc[table["model"] == "new", "judged"].item() is False
    # The unjudged model is ranked where its quality puts it (4th of 9).
    assert table["model"].tolist() == sorted(level, key=level.get, reverse=True)
    held_out = metrics["held_out"]
    # MIRAGE-BENCH's measure, against the constant predictor's (at most 0 by construction).
    assert held_out["held_out_r2"]["value"] > 0.85 and held_out["held_out_r2"]["constant_baseline"] <= 0
    # The leaderboard with the left-out models inserted: the constant predictor scores high too
    # (about 0.7 here), so the surrogate must beat its whole interval.
    for measure in ("kendall_tau", "r2"):
        assert held_out[measure]["constant_baseline"]["mean"] > 0.5
        assert held_out[measure]["mean"] > held_out[measure]["constant_baseline"]["ci_high"]
    assert set(metrics["feature_importances"]) == {"quality", "noise", "answered"}
    assert len(samples) == 60 * 9 and set(model_features["model"]) == set(level)
    if regressor == "random_forest":
        importances = metrics["feature_importances"]
        assert importances["quality"] > 0.8 > importances["noise"]


def test_surrogate_is_seeded():
    arena = known_function_arena()
    first = surrogate(*arena[:5], "random_forest", {}, holdout=2, repeats=2, seed=3)
    second = surrogate(*arena[:5], "random_forest", {}, holdout=2, repeats=2, seed=3)
    pd.testing.assert_frame_equal(first[0], second[0])
    assert first[2] == second[2]


def test_a_forest_fitted_on_several_threads_predicts_the_bits_of_one_fitted_on_one_thread():
    """The trees are the same whatever the thread count; only the order of adding their outputs
    could differ, and prediction adds them in tree order (a threaded predict adds them in the order
    threads finish, so the surrogate's last bits changed between two runs of one config)."""
    from polyrag.arena.surrogate import fit_regressor

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 6)), rng.normal(size=300)
    params = {"n_estimators": 64}
    one_thread = fit_regressor("random_forest", params, 5, 1, X, y)
    four_threads = fit_regressor("random_forest", params, 5, 4, X, y)
    assert four_threads.get_params()["n_jobs"] == 1
    expected = one_thread.predict(X).tobytes()
    assert all(four_threads.predict(X).tobytes() == expected for _ in range(5))


def test_tournament_averages_are_the_weighted_means_of_each_models_answers():
    """Checked against pandas' own weighted means, null answers skipped per feature."""
    from polyrag.arena.surrogate import aligned_values, averaged

    features, _, _, tournaments, questions, _ = known_function_arena()
    features = {m: frame.assign(quality=frame["quality"].mask(frame.index % 7 == 0)) for m, frame in features.items()}
    drawn = tournaments[tournaments["tournament"] == 5].set_index("query_id")["count"].astype(float)
    aligned = aligned_values(features, ["quality", "noise"], pd.Index(questions))
    table = averaged(features, ["quality", "noise"], drawn, aligned)
    for model, frame in features.items():
        rows = frame.set_index("query_id").loc[drawn.index]
        for column in ("quality", "noise"):
            kept = rows[column].notna()
            expected = (rows.loc[kept, column] * drawn[kept]).sum() / drawn[kept].sum()
            assert table.at[model, column] == pytest.approx(expected, rel=1e-12)
        assert table.at[model, "answered"] == 1.0
    pd.testing.assert_frame_equal(table, averaged(features, ["quality", "noise"], drawn))  # aligned or not
    with pytest.raises(DataError, match="lack arena questions"):
        averaged(features, ["quality"], pd.Series(1.0, index=["elsewhere"]), aligned)


def test_adding_an_unjudged_model_reads_the_held_out_evaluation_from_the_store(tmp_path, monkeypatch):
    """The 50 held-out refits depend on the judged models only: a model added with judged: false
    reuses them (same metrics as computed afresh), a change in the judged models' logits does not."""
    from polyrag.arena import surrogate as module

    features, bt, bootstrap, tournaments, questions, _ = known_function_arena()
    before = {m: f for m, f in features.items() if m != "new"}
    store = module.HeldOutStore(tmp_path)
    first = surrogate(before, bt, bootstrap, tournaments, questions, "random_forest", {}, holdout=2, repeats=4, seed=3,
                      store=store)
    assert len(list(tmp_path.glob("*.json"))) == 1
    fresh = surrogate(features, bt, bootstrap, tournaments, questions, "random_forest", {}, holdout=2, repeats=4, seed=3)
    calls = []
    real = module.held_out_evaluation
    monkeypatch.setattr(module, "held_out_evaluation", lambda *args: calls.append(args) or real(*args))
    added = surrogate(features, bt, bootstrap, tournaments, questions, "random_forest", {}, holdout=2, repeats=4, seed=3,
                      store=store)
    assert calls == [] and added[2] == fresh[2] == {**first[2]}
    pd.testing.assert_frame_equal(added[0], fresh[0])
    moved = bt.assign(logit=bt["logit"] + np.arange(len(bt)) * 0.01)
    surrogate(features, moved, bootstrap, tournaments, questions, "random_forest", {}, holdout=2, repeats=4, seed=3,
              store=store)
    assert len(calls) == 1 and len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize("regressor", ["random_forest", "linear"])
def test_surrogate_without_signal_in_its_features_does_not_beat_the_constant_predictor(regressor):
    features, bt, bootstrap, tournaments, questions, _ = known_function_arena(n_models=16, signal=False)
    _, _, metrics, _ = surrogate(features, bt, bootstrap, tournaments, questions, regressor, {},
                                 holdout=2, repeats=20, seed=0)
    held_out = metrics["held_out"]
    assert held_out["held_out_r2"]["value"] < 0.3
    for measure in ("kendall_tau", "r2"):
        baseline = held_out[measure]["constant_baseline"]
        assert baseline["ci_low"] <= held_out[measure]["mean"] <= baseline["ci_high"]


def citing_arena(seed: int = 0):
    """Judged models cite a share of their answers (the rest cite nothing, so their support is
    null) and their logit is 3 x that share; `support_entailment` where they cite is about 0.8
    for all. The unjudged `new` cites 8 answers of 30 (between the two lowest-ranked judged
    models' shares), with the best support of all."""
    features, bt, bootstrap, tournaments, questions, _ = known_function_arena(seed=seed)
    rng = np.random.default_rng(seed)
    shares = dict(zip(bt["model"], np.linspace(1.0, 0.05, len(bt))))
    shares["new"], support_level = 8 / 30, {m: 0.8 + rng.uniform(-0.05, 0.05) for m in features}
    support_level["new"] = 0.97
    for model, frame in features.items():
        cites = np.arange(len(frame)) < round(shares[model] * len(frame))
        frame["quality"] = 0.5  # carries no information here
        frame["support_entailment"] = np.where(cites, support_level[model] + rng.normal(0, 0.01, len(frame)), np.nan)
    logit = {m: 3 * shares[m] for m in bt["model"]}
    bt = bt.assign(logit=bt["model"].map(logit))
    bootstrap = bootstrap.assign(logit=bootstrap["model"].map(logit) + rng.normal(0, 0.05, len(bootstrap)))
    return features, bt, bootstrap, tournaments, questions, shares


def test_cited_share_stands_beside_features_that_need_a_citation():
    features, bt, bootstrap, tournaments, questions, shares = citing_arena()
    table, _, metrics, model_features = surrogate(features, bt, bootstrap, tournaments, questions,
                                                  "random_forest", {}, holdout=2, repeats=2, seed=0)
    rows = model_features.set_index("model")
    for model, frame in features.items():  # independent count: answers with a support value
        assert rows.loc[model, "cited_share"] == pytest.approx(frame["support_entailment"].notna().mean())
    # Averaged over the answers that cite: highest, as documented; cited_share says how rare.
    assert rows.loc["new", "support_entailment"] > rows["support_entailment"].drop("new").max()
    assert "cited_share" in metrics["features"]
    # The surrogate sees the share: the rare citer is ranked where its share puts it.
    assert table["model"].tolist() == sorted(shares, key=shares.get, reverse=True)


def test_a_model_that_never_cites_drops_citation_features_with_a_warning(caplog):
    features, bt, bootstrap, tournaments, questions, _ = citing_arena()
    features["m7"]["support_entailment"] = np.nan
    with caplog.at_level("WARNING", logger="polyrag.arena.surrogate"):
        _, _, metrics, model_features = surrogate(features, bt, bootstrap, tournaments, questions,
                                                  "linear", {}, holdout=2, repeats=2, seed=0)
    assert "support_entailment" not in metrics["features"] and "cited_share" in metrics["features"]
    assert "['m7']" in metrics["features_left_out"]["support_entailment"]
    assert model_features.set_index("model").loc["m7", "cited_share"] == 0
    assert any(r.levelname == "WARNING" and "support_entailment" in r.getMessage() and "m7" in r.getMessage()
               for r in caplog.records)


def test_surrogate_leaves_out_features_undefined_for_a_model_with_a_warning_and_skips_null_answers(caplog):
    features, bt, bootstrap, tournaments, questions, _ = known_function_arena()
    features["m1"]["noise"] = np.nan  # never computable for m1
    features["m2"].loc[:4, "quality"] = np.nan  # five unanswered questions
    features["m2"].loc[:4, "noise"] = np.nan
    with caplog.at_level("WARNING", logger="polyrag.arena.surrogate"):
        _, _, metrics, model_features = surrogate(features, bt, bootstrap, tournaments, questions,
                                                  "random_forest", {}, holdout=2, repeats=2, seed=0)
    assert "noise" not in metrics["features"] and "m1" in metrics["features_left_out"]["noise"]
    assert any("noise" in r.getMessage() and "m1" in r.getMessage() for r in caplog.records)
    row = model_features.set_index("model").loc["m2"]
    assert row["answered"] == pytest.approx(25 / 30)
    assert row["quality"] == pytest.approx(features["m2"]["quality"].iloc[5:].mean())


def test_held_out_evaluation_is_skipped_with_a_reason_when_too_few_models_are_judged():
    features, bt, bootstrap, tournaments, questions, _ = known_function_arena(n_models=3)
    _, _, metrics, _ = surrogate(features, bt, bootstrap, tournaments, questions, "linear", {},
                                 holdout=2, repeats=2, seed=0)
    assert "at least 4" in metrics["held_out"]["skipped"]


# --- leaderboard ----------------------------------------------------------------------------

def arena_tables(lang_logits: dict[str, float], unjudged: dict[str, float], n: int = 50, seed: int = 0):
    rng = np.random.default_rng(seed)
    bt = pd.DataFrame({"model": list(lang_logits), "logit": list(lang_logits.values())})
    bt["ci_low"], bt["ci_high"] = bt["logit"] - 0.5, bt["logit"] + 0.5
    bt["n_questions"] = 30
    boot = pd.DataFrame([{"tournament": t, "model": m, "logit": v + rng.normal(0, 0.1)}
                         for t in range(n) for m, v in lang_logits.items()])
    everything = {**lang_logits, **unjudged}
    sur = pd.DataFrame({"model": list(everything), "predicted_logit": [v + 0.01 for v in everything.values()]})
    sur_boot = pd.DataFrame([{"tournament": t, "model": m, "predicted_logit": v + rng.normal(0, 0.1)}
                             for t in range(n) for m, v in everything.items()])
    return bt, boot, sur, sur_boot


EN_LOGITS, DE_LOGITS = {"a": 1.0, "b": 0.0, "c": -1.0}, {"a": -0.2, "b": 0.6, "c": -0.6}


def test_leaderboard_ranks_by_mean_logit_and_its_interval_is_that_of_the_mean():
    en = language_table("en", *arena_tables(EN_LOGITS, {"x": 0.5}))
    de = language_table("de", *arena_tables(DE_LOGITS, {"x": 0.1}))
    table, by_language = leaderboard({"en": en, "de": de})
    rows = table.set_index("model")
    # en: a 1, x 2, b 3, c 4; de: b 1, x 2, a 3, c 4.
    assert rows.loc["a", ["rank_en", "rank_de"]].tolist() == [1, 3]
    assert rows.loc["x", "mean_rank"] == 2.0 and rows.loc["a", "mean_rank"] == 2.0
    assert rows.loc["a", "score"] == pytest.approx(0.4) and rows.loc["x", "score"] == pytest.approx(0.31)
    assert rows.loc["b", "score"] == pytest.approx(0.3)
    assert table["model"].tolist() == ["a", "x", "b", "c"] and table["rank"].tolist() == [1, 2, 3, 4]
    assert not rows.loc["x", "judged"] and rows.loc["a", "judged"]
    # The interval: from the spread of the per-tournament mean over languages, computed here by
    # hand (BT bootstrap for judged models, surrogate samples for x), t-corrected for 30 questions.
    for model, column, tables in (("a", "logit", (1, 1)), ("x", "predicted_logit", (3, 3))):
        draws = [arena_tables(*arguments)[table] for arguments, table in
                 zip(((EN_LOGITS, {"x": 0.5}), (DE_LOGITS, {"x": 0.1})), tables)]
        mean = (draws[0].query("model == @model")[column].to_numpy() + draws[1].query("model == @model")[column].to_numpy()) / 2
        half = student_t.ppf(0.975, 29) * np.sqrt(30 / 29) * mean.std(ddof=1)
        np.testing.assert_allclose(rows.loc[model, ["ci_low", "ci_high"]].to_numpy(float),
                                   [rows.loc[model, "score"] - half, rows.loc[model, "score"] + half])
    x = by_language[by_language["model"] == "x"]
    assert x["bt_logit"].isna().all() and (x["arena_logit"] == x["surrogate_logit"]).all()


def test_the_short_leaderboard_is_what_a_reader_needs_first_and_mars_columns_name_their_languages():
    table, _ = leaderboard({"en": language_table("en", *arena_tables(EN_LOGITS, {"x": 0.5})),
                            "de": language_table("de", *arena_tables(DE_LOGITS, {"x": 0.1}))})
    # MARS scored en only: its pooled ("all") score covers en, which the column says.
    scores = pd.DataFrame([{"model": m, "lang": lang, "metric": "af", "score": 0.8, "ci_low": 0.7, "ci_high": 0.9}
                           for m in ("a", "b", "c", "x") for lang in ("en", "all")])
    detailed = with_mars_scores(table, scores)
    assert set(detailed["mars_languages"]) == {"en"} and detailed["mars_af"].eq(0.8).all()
    short = short_leaderboard(detailed)
    assert list(short.columns) == ["rank", "model", "score", "ci_low", "ci_high", "rank_best", "rank_worst", "judged"]
    assert short.equals(detailed[short.columns]) and len(detailed.columns) == 15


def test_leaderboard_rank_never_contradicts_the_interval():
    """`a` wins three languages narrowly and loses the fourth by far: the best mean rank, but its
    interval lies wholly below `b`'s. Ranking by mean rank put it first."""
    narrow = ({"a": 0.1, "b": 0.0, "c": -0.1}, {})
    languages = {"en": narrow, "de": narrow, "es": narrow, "fr": ({"a": -3.0, "b": 3.0, "c": 0.0}, {})}
    table, _ = leaderboard({lang: language_table(lang, *arena_tables(logits, unjudged, seed=k))
                            for k, (lang, (logits, unjudged)) in enumerate(languages.items())})
    rows = table.set_index("model")
    assert rows.loc["a", "mean_rank"] < rows.loc["b", "mean_rank"]  # 1.5 against 1.75
    assert rows.loc["b", "ci_low"] > rows.loc["a", "ci_high"]
    assert rows.loc["b", "rank"] == 1 and rows.loc["a", "rank"] > 1
    # For every pair: an interval wholly above another's means a better rank; the rank lies in its range.
    for i in rows.index:
        assert rows.loc[i, "rank_best"] <= rows.loc[i, "rank"] <= rows.loc[i, "rank_worst"]
        for j in rows.index:
            if rows.loc[i, "ci_low"] > rows.loc[j, "ci_high"]:
                assert rows.loc[i, "rank"] < rows.loc[j, "rank"]


def test_with_systems_names_each_systems_parts_and_the_share_of_unjudged_citations():
    table = pd.DataFrame({"model": ["b", "a", "c"], "rank": [1, 2, 3]})
    components = {"a": {"generator": "a", "passages": "question"}, "b": {"generator": "a", "passages": "file"},
                  "c": {"generator": "c", "passages": "closed_book"}}
    # b: answers whose citations are 1/2 and 0 unjudged, one answer citing nothing (null); c cites nothing
    features = pd.DataFrame({"model": ["a", "a", "b", "b", "b", "c"],
                             "unjudged_citations": [0.0, 0.0, 0.5, 0.0, None, None]})
    out = with_systems(table, components, features)
    assert out["model"].tolist() == ["b", "a", "c"] and out["rank"].tolist() == [1, 2, 3]
    assert out["generator"].tolist() == ["a", "a", "c"] and out["passages"].tolist() == ["file", "question", "closed_book"]
    assert out["unjudged_citations"].iloc[0] == 0.25 and out["unjudged_citations"].iloc[1] == 0.0
    assert pd.isna(out["unjudged_citations"].iloc[2])  # nothing cited: no share, not 0


def test_with_retrieval_puts_each_retrieved_systems_run_measures_beside_it():
    table = pd.DataFrame({"model": ["s1", "s2", "g"], "retriever": ["bm25", "bm25", None], "reranker": [None, "ce", None]})
    retrieval = pd.DataFrame({"system": ["bm25", "bm25", "bm25", "bm25+ce", "bm25+ce", "bm25+ce"],
                              "lang": ["en", "de", "all"] * 2,
                              "nDCG@10": [0.5, 0.3, 0.4, 0.7, 0.5, 0.6], "nDCG@10_lower": [0.1] * 6, "nDCG@10_upper": [0.9] * 6,
                              "Recall@5": [0.6, 0.4, 0.5, 0.8, 0.6, 0.7], "Recall@5_lower": [0.2] * 6, "Recall@5_upper": [1.0] * 6})
    out = with_retrieval(table, retrieval)
    assert out["retrieval_nDCG@10"].tolist()[:2] == [0.4, 0.6] and pd.isna(out["retrieval_nDCG@10"].iloc[2])
    assert out["retrieval_Recall@5"].tolist()[:2] == [0.5, 0.7] and out["model"].tolist() == ["s1", "s2", "g"]
    one_language = with_retrieval(table, retrieval[retrieval["lang"] == "de"])
    assert one_language["retrieval_nDCG@10"].tolist()[:2] == [0.3, 0.5]
