"""The surrogate judge (polyrag.arena.surrogate): a ranking that is a known function of the features is
reproduced, the fit is seeded and thread-independent, and features a model lacks are left out with a
warning; its held-out evaluation against the constant predictor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from polyrag.arena.surrogate import surrogate
from polyrag.errors import DataError


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


@pytest.mark.slow
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
