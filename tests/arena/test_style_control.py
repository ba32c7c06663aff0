"""Style-controlled Bradley-Terry (polyrag.arena.style_control): the fit against the penalised maximum
likelihood on the same design matrix and statsmodels, and simulated judges that prefer long answers or
accurate citations, with intervals checked for coverage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.stats import binom, kendalltau
from scipy.stats import t as student_t
from sklearn.linear_model import LogisticRegression

from polyrag.arena.bradley_terry import fit_logits
from polyrag.arena.games import win_matrix
from polyrag.arena.style_control import (STYLE_COVARIATES, answer_style, style_controlled_bt, style_controlled_ranks,
                                         style_differences)
from polyrag.errors import DataError
from tests.helpers.arena import STRENGTHS, sigmoid, simulate_games


def styled_arena(strengths: dict, mean_length: dict, n_questions: int, rng, length_bias: float):
    """Answers whose length varies around each model's mean (lognormal, sd 0.6 on the log scale),
    with citations unrelated to the verdicts; the judge adds length_bias x (la - lb) / (la + lb + 1)
    to the logit of model_a's answer. Both orders of a pair are judged independently."""
    models = sorted(strengths)
    questions = [f"q{i}" for i in range(n_questions)]
    style = {}
    for model in models:
        cites = rng.poisson(2, n_questions)
        style[model] = pd.DataFrame({
            "query_id": questions,
            "length_tokens": np.round(np.exp(rng.normal(np.log(mean_length[model]), 0.6, n_questions))),
            "citations": cites, "markdown_elements": rng.poisson(1, n_questions),
            "citation_precision": np.where(cites > 0, rng.binomial(cites, 0.7) / np.maximum(cites, 1), np.nan)})
    rows = []
    for k, query_id in enumerate(questions):
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                la, lb = style[a]["length_tokens"][k], style[b]["length_tokens"][k]
                p_a = sigmoid(strengths[a] - strengths[b] + length_bias * (la - lb) / (la + lb + 1))
                for shown_first in (a, b):
                    rows.append({"query_id": query_id, "model_a": a, "model_b": b, "shown_first": shown_first,
                                 "verdict": "model_a" if rng.random() < p_a else "model_b"})
    return pd.DataFrame(rows), style


TRUE_ORDER = {"a": 0.6, "b": 0.2, "c": -0.2, "d": -0.6}
LONGER_WHEN_WORSE = {"a": 80, "b": 120, "c": 200, "d": 400}


def test_style_control_sees_through_a_judge_that_prefers_long_answers():
    models = sorted(TRUE_ORDER)
    games, style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, 100, np.random.default_rng(20), length_bias=4.0)
    raw = fit_logits(win_matrix(games, models), 0.01)
    truth = [TRUE_ORDER[m] for m in models]
    assert kendalltau(raw, truth).statistic < 0  # the raw leaderboard is fooled: long answers first
    table, coefficients, _ = style_controlled_bt(games, style, models, 0.01, 100, np.random.default_rng(21))
    table = table.set_index("model").loc[models]
    assert kendalltau(table["logit"], truth).statistic == 1.0
    assert ((table["ci_low"] <= truth) & (truth <= table["ci_high"])).all()
    coefficients = coefficients.set_index("covariate")
    per_ratio = coefficients[["coefficient", "ci_low", "ci_high"]].div(coefficients["scale"], axis=0)
    assert per_ratio.loc["length_tokens", "ci_low"] <= 4.0 <= per_ratio.loc["length_tokens", "ci_high"]
    # Citations do not move this judge: their coefficients are small beside length's.
    assert (coefficients.loc[["citations", "markdown_elements"], "coefficient"].abs()
            < coefficients.loc["length_tokens", "coefficient"] / 10).all()


def test_style_control_keeps_what_a_judge_of_citation_accuracy_rewards():
    """A judge that rewards only correct citations (the log-odds of a win rise with the answer's
    citation precision, the models differing in how precisely they cite): style control must
    leave its ranking as it is, since citation accuracy is what is judged, not presentation.
    The mean citation precision is reported per model beside the fit."""
    models = sorted(TRUE_ORDER)
    precision_of = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.3}
    rng = np.random.default_rng(27)
    questions = [f"q{i}" for i in range(80)]
    style = {}
    for model in models:
        cites = rng.integers(1, 4, len(questions))
        style[model] = pd.DataFrame({"query_id": questions, "length_tokens": rng.integers(40, 200, len(questions)),
                                     "citations": cites, "markdown_elements": rng.poisson(1, len(questions)),
                                     "citation_precision": rng.binomial(cites, precision_of[model]) / cites})
    rows = []
    for k, query_id in enumerate(questions):
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                p_a = sigmoid(3.0 * (style[a]["citation_precision"][k] - style[b]["citation_precision"][k]))
                rows += [{"query_id": query_id, "model_a": a, "model_b": b, "shown_first": first,
                          "verdict": "model_a" if rng.random() < p_a else "model_b"} for first in (a, b)]
    games = pd.DataFrame(rows)
    raw = fit_logits(win_matrix(games, models), 0.01)
    table, coefficients, _ = style_controlled_bt(games, style, models, 0.01, 50, np.random.default_rng(28))
    table = table.set_index("model").loc[models]
    assert table["rank"].tolist() == [1, 2, 3, 4] and kendalltau(raw, -np.arange(4)).statistic == 1.0
    np.testing.assert_allclose(table["logit"], raw, atol=0.15)  # not controlled away
    assert set(coefficients["covariate"]) == {"length_tokens", "citations", "markdown_elements"}
    np.testing.assert_allclose(table["citation_precision"],
                               [style[m]["citation_precision"].mean() for m in models])


def design_by_hand(games: pd.DataFrame, style: dict, models: list[str], scale=None):
    """One row per valid game (not per matchup): +1/-1 model columns and the style differences,
    ratios for counts, divided by ``scale`` (default: their root mean square over these games);
    the share of a win that goes to model_a; and the scale."""
    valid = games[games["verdict"] != "invalid"]
    rows = []
    for game in valid.itertuples():
        a = style[game.model_a].set_index("query_id").loc[game.query_id]
        b = style[game.model_b].set_index("query_id").loc[game.query_id]
        row = [float(m == game.model_a) - float(m == game.model_b) for m in models]
        row += [(a[c] - b[c]) / (a[c] + b[c] + 1) for c in ("length_tokens", "citations", "markdown_elements")]
        rows.append(row)
    X = np.array(rows)
    if scale is None:
        scale = np.sqrt((X[:, len(models):] ** 2).mean(axis=0))
    X[:, len(models):] /= scale
    share = valid["verdict"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()
    return X, share, scale


def test_style_controlled_fit_is_the_penalised_maximum_likelihood_on_the_same_design_matrix():
    models = sorted(TRUE_ORDER)
    rng = np.random.default_rng(22)
    games, style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, 30, rng, length_bias=2.0)
    games.loc[rng.choice(len(games), 40, replace=False), "verdict"] = "tie"
    games.loc[[3, 7], "verdict"] = "invalid"
    X, share, _ = design_by_hand(games, style, models)
    regularization = 0.05
    table, coefficients, _ = style_controlled_bt(games, style, models, regularization, 20, np.random.default_rng(0))
    fitted = np.r_[table.set_index("model").loc[models, "logit"], coefficients["coefficient"]]

    def objective(params):  # game by game, ties as half a win each (scipy, no scikit-learn)
        margin = X @ params
        return (share * np.logaddexp(0, -margin) + (1 - share) * np.logaddexp(0, margin)).sum() + regularization * params @ params

    direct = minimize(objective, np.zeros(X.shape[1]), method="BFGS", options={"gtol": 1e-9}).x
    direct[:len(models)] -= direct[:len(models)].mean()
    np.testing.assert_allclose(fitted, direct, atol=1e-4)
    # scikit-learn on the per-game matrix, another solver: the same C = 1 / (2 regularization).
    regression = LogisticRegression(C=1 / (2 * regularization), fit_intercept=False, solver="lbfgs", tol=1e-12, max_iter=10000)
    regression.fit(np.vstack([X, X]), np.r_[np.ones(len(X)), np.zeros(len(X))], sample_weight=np.r_[share, 1 - share])
    reference = regression.coef_[0]
    reference[:len(models)] -= reference[:len(models)].mean()
    np.testing.assert_allclose(fitted, reference, atol=1e-4)


def test_style_controlled_fit_matches_statsmodels_logit_without_penalty():
    """statsmodels' unpenalised maximum likelihood, one model left out as the reference (its
    logit 0): the same differences between logits and the same coefficients as a nearly
    unpenalised fit. Ties are avoided (statsmodels' Logit wants 0/1 outcomes)."""
    sm = pytest.importorskip("statsmodels.api")
    models = sorted(TRUE_ORDER)
    games, style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, 60, np.random.default_rng(23), length_bias=3.0)
    X, share, _ = design_by_hand(games, style, models)
    result = sm.Logit(share, X[:, 1:]).fit(disp=0, method="newton", tol=1e-12)
    table, coefficients, _ = style_controlled_bt(games, style, models, 1e-7, 20, np.random.default_rng(0))
    logits = table.set_index("model").loc[models, "logit"].to_numpy()
    np.testing.assert_allclose(logits[1:] - logits[0], result.params[:len(models) - 1], atol=1e-4)
    np.testing.assert_allclose(coefficients["coefficient"], result.params[len(models) - 1:], atol=1e-4)


def test_without_style_differences_the_fit_is_the_plain_bradley_terry_fit():
    models = sorted(STRENGTHS)
    games = simulate_games(STRENGTHS, 20, np.random.default_rng(24), tie_rate=0.2)
    same = pd.DataFrame({"query_id": games["query_id"].unique(), "length_tokens": 50, "citations": 2,
                         "markdown_elements": 0, "citation_precision": 1.0})
    table, coefficients, _ = style_controlled_bt(games, {m: same for m in models}, models, 0.01, 20,
                                                 np.random.default_rng(0))
    np.testing.assert_allclose(table.set_index("model").loc[models, "logit"],
                               fit_logits(win_matrix(games, models), 0.01), atol=1e-8)
    assert coefficients["coefficient"].isna().all() and (coefficients["scale"] == 0).all()


def test_style_bootstrap_refits_the_resampled_questions_and_is_seeded():
    models = sorted(TRUE_ORDER)
    games, style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, 15, np.random.default_rng(25), length_bias=2.0)
    first = style_controlled_bt(games, style, models, 0.01, 10, np.random.default_rng(26))
    second = style_controlled_bt(games, style, models, 0.01, 10, np.random.default_rng(26))
    pd.testing.assert_frame_equal(first[2], second[2])
    # Tournament 0 by hand: the drawn questions' games repeated, the scales of all games kept.
    questions = sorted(games["query_id"].unique())
    drawn = np.random.default_rng(26).choice(len(questions), size=(10, len(questions)), replace=True)[0]
    replayed = pd.concat([games[games["query_id"] == questions[k]] for k in drawn])
    X, share, _ = design_by_hand(replayed, style, models, scale=design_by_hand(games, style, models)[2])
    regression = LogisticRegression(C=1 / 0.02, fit_intercept=False, solver="lbfgs", tol=1e-12, max_iter=10000)
    regression.fit(np.vstack([X, X]), np.r_[np.ones(len(X)), np.zeros(len(X))], sample_weight=np.r_[share, 1 - share])
    expected = regression.coef_[0][:4] - regression.coef_[0][:4].mean()
    np.testing.assert_allclose(first[2].query("tournament == 0")["logit"], expected, atol=1e-4)


@pytest.mark.slow
def test_style_intervals_cover_the_true_logits_and_length_bias_at_about_the_nominal_rate():
    """Simulated arenas of 4 models and 80 questions, 100 tournaments each. Percentile intervals
    undercover somewhat on arenas this small (benchmarks/bench_judge_statistics.py measures
    larger ones), so the bound is the binomial 99.9% range around 0.92, not 0.95."""
    models = sorted(TRUE_ORDER)
    truth = pd.Series(TRUE_ORDER)[models]
    logits_covered, bias_covered = [], []
    for simulation in range(25):
        rng = np.random.default_rng(2000 + simulation)
        games, style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, 80, rng, length_bias=4.0)
        table, coefficients, _ = style_controlled_bt(games, style, models, 0.01, 100, rng)
        table = table.set_index("model").loc[models]
        logits_covered += list((table["ci_low"] <= truth) & (truth <= table["ci_high"]))
        length = coefficients.set_index("covariate").loc["length_tokens"]
        bias_covered.append(length["ci_low"] / length["scale"] <= 4.0 <= length["ci_high"] / length["scale"])
    for covered in (logits_covered, bias_covered):
        low, high = binom.interval(0.999, len(covered), 0.92)
        assert low <= np.sum(covered) <= high, (np.sum(covered), len(covered))


def test_answer_style_counts_what_the_judge_read():
    """Presentation (length, citations, markup) as covariates; citation precision apart, empty
    where it is undefined (nothing cited, or no relevance labels)."""
    questions = pd.DataFrame({
        "query_id": ["q1", "q2", "q3", "q4"],
        "passages": [[{"docid": "d1#0", "text": "a"}, {"docid": "d2#0", "text": "b"}, {"docid": "d3#0", "text": "c"}]] * 4,
        "relevant_docids": [["d1#0"], ["d1#0", "d2#0"], [], ["d1#0"]]})
    answers = pd.DataFrame({
        "query_id": ["q1", "q2", "q3", "q4"],
        "raw_output": ["##Answer: x", "Paris is big [d2#0] and old [d3#0, d1#0].", "Rome [d3#0].", ""],
        "answer": ["Paris is the capital [d1#0][d2#0] of France [d3#0].", None, "Rome [d3#0].",
                   "## Cities\n- **Paris** is big\n1. Rome"],
        "cited_docids": [["d1#0", "d2#0", "d3#0"], [], ["d3#0"], []]})
    style = answer_style(questions, answers, count_tokens=lambda text: len(text.split())).set_index("query_id")
    assert style.loc["q1"].tolist() == [6, 3, 0, 1 / 3]  # "Paris is the capital of France."
    assert style.loc["q2"].tolist() == [5, 3, 0, 2 / 3]  # unparsed: the raw output is what the judge read
    assert style.loc["q3", STYLE_COVARIATES].tolist() == [1, 1, 0] and np.isnan(style.loc["q3", "citation_precision"])
    # A header, two list items and a bold span; nothing cited.
    assert style.loc["q4", STYLE_COVARIATES].tolist() == [8, 0, 4] and np.isnan(style.loc["q4", "citation_precision"])


def test_a_judged_answer_without_style_names_the_model_and_question():
    games = simulate_games({"a": 0.0, "b": 0.0}, 2, np.random.default_rng(27))
    style = pd.DataFrame({"query_id": ["q0"], "length_tokens": [3], "citations": [1], "markdown_elements": [0]})
    with pytest.raises(DataError, match=r"no answer style for model 'a' on question 'q1'"):
        style_differences(games[["query_id", "model_a", "model_b"]], {"a": style, "b": style})


def test_style_differences_are_ratios_of_the_counts():
    pairs = pd.DataFrame({"query_id": ["q"], "model_a": ["a"], "model_b": ["b"]})
    style = {"a": pd.DataFrame({"query_id": ["q"], "length_tokens": [300], "citations": [3], "markdown_elements": [0]}),
             "b": pd.DataFrame({"query_id": ["q"], "length_tokens": [99], "citations": [0], "markdown_elements": [2]})}
    differences = style_differences(pairs, style)
    assert differences[STYLE_COVARIATES].iloc[0].tolist() == pytest.approx([201 / 400, 3 / 4, -2 / 3])


def test_style_controlled_ranks_average_languages_like_the_leaderboard():
    models = sorted(TRUE_ORDER)
    per_language = {}
    for k, lang in enumerate(["en", "de"]):
        games, style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, 20, np.random.default_rng(30 + k), 2.0)
        table, _, bootstrap = style_controlled_bt(games, style, models, 0.01, 20, np.random.default_rng(40 + k))
        per_language[lang] = (table, bootstrap)
    ranks = style_controlled_ranks(per_language).set_index("model")
    score = (per_language["en"][0].set_index("model")["logit"] + per_language["de"][0].set_index("model")["logit"]) / 2
    np.testing.assert_allclose(ranks["score_style_controlled"], score[ranks.index])
    assert ranks["rank_style_controlled"].to_dict() == score.rank(ascending=False).astype(int).to_dict()
    mean = (per_language["en"][1].query("model == 'a'")["logit"].to_numpy()
            + per_language["de"][1].query("model == 'a'")["logit"].to_numpy()) / 2
    half = student_t.ppf(0.975, 19) * np.sqrt(20 / 19) * mean.std(ddof=1)  # 20 questions per language
    np.testing.assert_allclose(ranks.loc["a", ["ci_low_style_controlled", "ci_high_style_controlled"]].to_numpy(float),
                               [ranks.loc["a", "score_style_controlled"] - half, ranks.loc["a", "score_style_controlled"] + half])


def test_a_model_judged_in_some_languages_is_ranked_over_those():
    """A model that answers English only (``languages:``) is in English's table alone: its
    style-controlled score is its English logit with its English interval, not a missing row."""
    per_language = {}
    for k, lang in enumerate(["en", "de"]):
        order = TRUE_ORDER if lang == "en" else {m: s for m, s in TRUE_ORDER.items() if m != "a"}
        lengths = {m: LONGER_WHEN_WORSE[m] for m in order}
        games, style = styled_arena(order, lengths, 20, np.random.default_rng(30 + k), 2.0)
        table, _, bootstrap = style_controlled_bt(games, style, sorted(order), 0.01, 20, np.random.default_rng(40 + k))
        per_language[lang] = (table, bootstrap)
    ranks = style_controlled_ranks(per_language).set_index("model")
    en, de = (per_language[lang][0].set_index("model")["logit"] for lang in ("en", "de"))
    assert sorted(ranks.index) == ["a", "b", "c", "d"]
    assert ranks.loc["a", "score_style_controlled"] == pytest.approx(en["a"])
    np.testing.assert_allclose(ranks.loc[["b", "c", "d"], "score_style_controlled"], ((en + de) / 2)[["b", "c", "d"]])
    samples = per_language["en"][1].query("model == 'a'")["logit"].to_numpy()
    half = student_t.ppf(0.975, 19) * np.sqrt(20 / 19) * samples.std(ddof=1)
    np.testing.assert_allclose(ranks.loc["a", ["ci_low_style_controlled", "ci_high_style_controlled"]].to_numpy(float),
                               [en["a"] - half, en["a"] + half])
