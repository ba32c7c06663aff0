"""Arena statistics checked against simulations with known answers and independent computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.stats import kendalltau

from polyrag.arena.bradley_terry import bradley_terry, fit_logits, games_list, rank_ranges
from polyrag.arena.games import read_games, tally, win_matrix
from polyrag.arena.leaderboard import language_table, leaderboard
from polyrag.arena.surrogate import surrogate
from polyrag.errors import DataError


def simulate_games(strengths: dict[str, float], n_questions: int, rng, tie_rate: float = 0.0) -> pd.DataFrame:
    """Every pair of models on every question, in both orders, won as a known BT model says."""
    models = sorted(strengths)
    rows = []
    for q in range(n_questions):
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                for shown_first in (a, b):
                    p_a = 1 / (1 + np.exp(strengths[b] - strengths[a]))
                    if rng.random() < tie_rate:
                        verdict = "tie"
                    else:
                        verdict = "model_a" if rng.random() < p_a else "model_b"
                    rows.append({"query_id": f"q{q}", "model_a": a, "model_b": b, "shown_first": shown_first,
                                 "verdict": verdict})
    return pd.DataFrame(rows)


def maximum_likelihood(games: pd.DataFrame, models: list[str]) -> np.ndarray:
    """BT by direct maximum likelihood (scipy), ties as half a win each: independent of choix."""
    index = {m: i for i, m in enumerate(models)}
    valid = games[games["verdict"] != "invalid"]
    a = valid["model_a"].map(index).to_numpy()
    b = valid["model_b"].map(index).to_numpy()
    share = valid["verdict"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()

    def negative_log_likelihood(theta):
        diff = theta[a] - theta[b]
        return -(share * -np.logaddexp(0, -diff) + (1 - share) * -np.logaddexp(0, diff)).sum()

    theta = minimize(negative_log_likelihood, np.zeros(len(models)), method="BFGS").x
    return theta - theta.mean()


STRENGTHS = {"m0": 1.5, "m1": 0.9, "m2": 0.4, "m3": 0.0, "m4": -0.5, "m5": -1.1, "m6": -1.6}


def centred(values):
    values = np.array(values, float)
    return values - values.mean()


def test_fit_matches_independent_maximum_likelihood_with_ties_as_half_wins():
    games = simulate_games(STRENGTHS, 40, np.random.default_rng(0), tie_rate=0.2)
    models = sorted(STRENGTHS)
    assert (games["verdict"] == "tie").mean() == pytest.approx(0.2, abs=0.03)
    choix_logits = fit_logits(win_matrix(games, models), alpha=1e-6)
    np.testing.assert_allclose(choix_logits, maximum_likelihood(games, models), atol=1e-3)


def test_recovers_known_strengths_from_simulated_games():
    games = simulate_games(STRENGTHS, 200, np.random.default_rng(1))
    models = sorted(STRENGTHS)
    logits = fit_logits(win_matrix(games, models), alpha=0.01)
    assert kendalltau(logits, [STRENGTHS[m] for m in models]).statistic == 1.0
    np.testing.assert_allclose(logits, centred([STRENGTHS[m] for m in models]), atol=0.12)


def test_a_model_that_wins_every_game_gets_a_finite_logit():
    games = simulate_games({"a": 50.0, "b": 0.0, "c": -50.0}, 10, np.random.default_rng(2))
    assert set(games.loc[games["model_a"] == "a", "verdict"]) == {"model_a"}
    table, _, _ = bradley_terry(games, ["a", "b", "c"], 0.01, 50, np.random.default_rng(3))
    assert np.isfinite(table[["logit", "ci_low", "ci_high"]].to_numpy()).all()
    assert table["model"].tolist() == ["a", "b", "c"]
    assert table["logit"].sum() == pytest.approx(0, abs=1e-9)


def test_opt_pairwise_fallback_agrees_with_ilsr():
    games = simulate_games(STRENGTHS, 30, np.random.default_rng(4), tie_rate=0.1)
    wins = win_matrix(games, sorted(STRENGTHS))
    import choix

    fallback = choix.opt_pairwise(len(wins), games_list(wins), alpha=1e-6)
    np.testing.assert_allclose(fallback - fallback.mean(), fit_logits(wins, alpha=1e-6), atol=2e-3)


def test_bootstrap_interval_covers_the_true_value_at_about_the_nominal_rate():
    strengths = {"a": 0.8, "b": 0.3, "c": -0.2, "d": -0.9}
    truth = pd.Series(centred(list(strengths.values())), index=list(strengths))
    covered = []
    for simulation in range(60):
        rng = np.random.default_rng(100 + simulation)
        games = simulate_games(strengths, 40, rng)
        table = bradley_terry(games, sorted(strengths), 0.01, 200, rng)[0].set_index("model")
        covered += list((table["ci_low"] <= truth[table.index]) & (truth[table.index] <= table["ci_high"]))
    # 240 intervals at a nominal 95%: a binomial 99.9% range is about [0.90, 0.99].
    assert 0.89 <= np.mean(covered) <= 0.995


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


def test_rank_ranges_follow_interval_overlap():
    logit = np.array([2.0, 1.0, 0.9, -3.0])
    low = np.array([1.5, 0.5, 0.4, -3.5])
    high = np.array([2.5, 1.4, 1.3, -2.5])
    best, worst = rank_ranges(logit, low, high)
    assert best.tolist() == [1, 2, 2, 4] and worst.tolist() == [1, 3, 3, 4]


def test_unreadable_verdicts_name_the_file_and_row(tmp_path):
    path = tmp_path / "a__b.parquet"
    pd.DataFrame([{"query_id": "q1", "model_a": "a", "model_b": "b", "shown_first": "a", "verdict": "A"}]).to_parquet(path)
    with pytest.raises(DataError, match=r"a__b.parquet: row 0: verdict 'A'"):
        read_games([path])


def test_a_model_with_no_valid_game_stops_the_fit():
    games = simulate_games({"a": 0.5, "b": 0.0, "c": 0.1}, 3, np.random.default_rng(8))
    games.loc[(games["model_a"] == "c") | (games["model_b"] == "c"), "verdict"] = "invalid"
    with pytest.raises(DataError, match=r"no valid game for \['c'\]"):
        bradley_terry(games, ["a", "b", "c"], 0.01, 10, np.random.default_rng(0))


# --- surrogate ------------------------------------------------------------------------------

def known_function_arena(n_models: int = 8, n_questions: int = 30, seed: int = 0):
    """Models whose BT logit in every tournament is exactly 2 x their mean `quality` feature over
    that tournament's questions; `noise` is unrelated. One extra model is never judged."""
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
    return features, bt, bootstrap, pd.concat(tournaments, ignore_index=True), questions, level


@pytest.mark.parametrize("regressor", ["random_forest", "linear", "gradient_boosting", "svr", "mlp"])
def test_surrogate_reproduces_a_ranking_that_is_a_known_function_of_the_features(regressor):
    features, bt, bootstrap, tournaments, questions, level = known_function_arena()
    table, samples, metrics, model_features = surrogate(
        features, bt, bootstrap, tournaments, questions, regressor, {}, holdout=2, repeats=10, seed=0)
    assert table.loc[table["model"] == "new", "judged"].item() is False
    # The unjudged model is ranked where its quality puts it (4th of 9).
    assert table["model"].tolist() == sorted(level, key=level.get, reverse=True)
    assert metrics["held_out"]["kendall_tau"]["mean"] > 0.9
    assert metrics["held_out"]["r2"]["mean"] > 0.5
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


def test_surrogate_leaves_out_features_undefined_for_a_model_and_skips_null_answers():
    features, bt, bootstrap, tournaments, questions, _ = known_function_arena()
    features["m1"]["noise"] = np.nan  # never computable for m1
    features["m2"].loc[:4, "quality"] = np.nan  # five unanswered questions
    features["m2"].loc[:4, "noise"] = np.nan
    _, _, metrics, model_features = surrogate(features, bt, bootstrap, tournaments, questions,
                                              "random_forest", {}, holdout=2, repeats=2, seed=0)
    assert "noise" not in metrics["features"]
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
    boot = pd.DataFrame([{"tournament": t, "model": m, "logit": v + rng.normal(0, 0.1)}
                         for t in range(n) for m, v in lang_logits.items()])
    everything = {**lang_logits, **unjudged}
    sur = pd.DataFrame({"model": list(everything), "predicted_logit": [v + 0.01 for v in everything.values()]})
    sur_boot = pd.DataFrame([{"tournament": t, "model": m, "predicted_logit": v + rng.normal(0, 0.1)}
                             for t in range(n) for m, v in everything.items()])
    return bt, boot, sur, sur_boot


def test_leaderboard_ranks_by_mean_language_rank_and_scores_by_mean_logit():
    en = language_table("en", *arena_tables({"a": 1.0, "b": 0.0, "c": -1.0}, {"x": 0.5}))
    de = language_table("de", *arena_tables({"a": -0.2, "b": 0.6, "c": -0.6}, {"x": 0.1}))
    table, by_language = leaderboard({"en": en, "de": de})
    rows = table.set_index("model")
    # en: a 1, x 2, b 3, c 4; de: b 1, x 2, a 3, c 4. a, x and b tie on mean rank 2: by score.
    assert rows.loc["a", ["rank_en", "rank_de"]].tolist() == [1, 3]
    assert rows.loc["x", "mean_rank"] == 2.0 and rows.loc["a", "mean_rank"] == 2.0
    assert rows.loc["a", "score"] == pytest.approx(0.4) and rows.loc["x", "score"] == pytest.approx(0.31)
    assert rows.loc["b", "score"] == pytest.approx(0.3)
    assert table["model"].tolist() == ["a", "x", "b", "c"] and table["rank"].tolist() == [1, 2, 3, 4]
    assert not rows.loc["x", "judged"] and rows.loc["a", "judged"]
    assert rows.loc["a", "ci_low"] < 0.4 < rows.loc["a", "ci_high"]
    x = by_language[by_language["model"] == "x"]
    assert x["bt_logit"].isna().all() and (x["arena_logit"] == x["surrogate_logit"]).all()
