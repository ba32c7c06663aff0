"""The label-anchored arena: the PPI++ Bradley-Terry estimator against ppi_py and against a plain
BT fit, its coverage on simulated arenas, units from games, and the annotation round trip."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest
from scipy.stats import norm, studentized_range

from polyrag.arena.bradley_terry import fit_logits
from polyrag.arena.active import active_fit, active_inclusion_probabilities
from polyrag.arena.label_anchored import effective_labels, label_anchored_fits, label_anchored_table, rank_sets
from polyrag.arena.label_agreement import agreement_over_languages, judge_label_agreement
from polyrag.arena.ppi_fit import anchored_fit, design
from polyrag.arena.human_labels import (labelled_units, read_filled, sample_units, stand_in_labels, task_rows,
                                       write_tasks)
from polyrag.arena.units import judge_units
from polyrag.errors import DataError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_label_anchored  # noqa: E402

MODELS = 5


def simulated(seed: int, n_units: int = 3000, ties: bool = False):
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, MODELS)
    pairs = np.array([rng.choice(MODELS, 2, replace=False) for _ in range(n_units)])
    p = 1 / (1 + np.exp(strength[pairs[:, 1]] - strength[pairs[:, 0]]))
    y = (rng.random(n_units) < p).astype(float)
    if ties:
        y[rng.random(n_units) < 0.1] = 0.5
    yhat = np.where(rng.random(n_units) < 0.7, y, rng.random(n_units) < 0.5).astype(float)
    return pairs, y, yhat


@pytest.mark.slow
@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0, None])
def test_tie_free_intervals_equal_ppi_py(lam):
    pairs, y, yhat = simulated(0)
    n = 300
    x = design(pairs, MODELS)
    theta, covariance, lam_used, converged = anchored_fit(x[:n], y[:n], yhat[:n], x[n:], yhat[n:], lam)
    low, high = ppi_py.ppi_logistic_ci(x[:n], y[:n], yhat[:n], x[n:], yhat[n:], alpha=0.05, lam=lam)
    half = norm.ppf(0.975) * np.sqrt(np.diag(covariance))
    assert converged
    assert theta - half == pytest.approx(low, abs=1e-6)
    assert theta + half == pytest.approx(high, abs=1e-6)
    if lam is None:
        assert 0 < lam_used < 1  # a judge right 85% of the time: partly trusted
    else:
        assert lam_used == lam


def test_lambda_zero_is_the_bradley_terry_fit_of_the_human_labels_alone():
    """With ties (soft labels, which ppi_py refuses), the labels-only logits equal polyrag's own BT
    fit (choix's objective with a vanishing penalty, which only centres the logits) on a win matrix
    of the labelled units, ties half a win."""
    pairs, y, yhat = simulated(1, ties=True)
    labelled = np.zeros(len(pairs), bool)
    labelled[:400] = True
    fits = label_anchored_fits(pairs, yhat, labelled, y[labelled], MODELS)
    wins = np.zeros((MODELS, MODELS))
    np.add.at(wins, (pairs[labelled, 0], pairs[labelled, 1]), y[labelled])
    np.add.at(wins, (pairs[labelled, 1], pairs[labelled, 0]), 1 - y[labelled])
    assert fits["labels_only"].logit == pytest.approx(fit_logits(wins, regularization=1e-10), abs=1e-6)
    # And the judge-only logits are the same fit of every unit's judge value.
    judged = np.zeros((MODELS, MODELS))
    np.add.at(judged, (pairs[:, 0], pairs[:, 1]), yhat)
    np.add.at(judged, (pairs[:, 1], pairs[:, 0]), 1 - yhat)
    assert fits["judge_only"].logit == pytest.approx(fit_logits(judged, regularization=1e-10), abs=1e-6)


def test_centred_logits_do_not_depend_on_the_anchor():
    pairs, y, yhat = simulated(2, ties=True)
    labelled = np.arange(len(pairs)) < 250
    clusters = np.arange(len(pairs)) // 7
    first = label_anchored_fits(pairs, yhat, labelled, y[labelled], MODELS, clusters=clusters, anchor=0)["label_anchored"]
    other = label_anchored_fits(pairs, yhat, labelled, y[labelled], MODELS, clusters=clusters, anchor=3)["label_anchored"]
    assert other.lam == pytest.approx(first.lam, abs=1e-9)  # the shared lambda, or 0 where a model fell back
    assert other.logit == pytest.approx(first.logit, abs=1e-6)
    assert other.covariance == pytest.approx(first.covariance, abs=1e-6)


def test_rank_sets_order_what_the_simultaneous_max_z_separates():
    """Two far-apart models are ordered; two equal ones are not (a hand-built covariance). Four
    independent logits of sd 0.1: the simultaneous critical value of all differences is Tukey's
    q(0.95; 4, inf) / sqrt(2) = 2.57 difference sds (0.363), not Scheffe's sqrt(chi2(3, 0.95)) =
    2.80 (0.395), and stepdown lowers it once the far pairs are apart: 0.38 apart is ordered."""
    from polyrag.arena.ppi_fit import Fit
    fit = Fit(logit=np.array([1.0, -1.0, -0.05, 0.05]), covariance=np.eye(4) * 0.01, lam=0.5, converged=True)
    best, worst = rank_sets(fit)
    assert best.tolist() == [1, 4, 2, 2] and worst.tolist() == [1, 4, 3, 3]
    tukey = studentized_range.ppf(0.95, 4, 1e6) * 0.1
    assert tukey == pytest.approx(0.363, abs=1e-3)
    fit = Fit(logit=np.array([0.38, 0.0, 5.0, -5.0]), covariance=np.eye(4) * 0.01, lam=0.5, converged=True)
    best, worst = rank_sets(fit)
    assert best.tolist() == [2, 3, 1, 4] and worst.tolist() == [2, 3, 1, 4]


def test_active_estimator_with_equal_probabilities_is_the_uniform_one():
    """With every unit labelled with the same probability the inverse-probability weights are a
    constant: lam 0 gives the labels-only fit, lam 1 PPI with every unit in the judge's term."""
    pairs, y, yhat = simulated(3, ties=True)
    x = design(pairs, MODELS)
    labelled = np.random.default_rng(0).random(len(pairs)) < 0.1
    probability = np.full(len(pairs), labelled.mean())
    labels_only, *_ = anchored_fit(x[labelled], y[labelled], yhat[labelled], x[~labelled], yhat[~labelled], 0.0)
    active_zero, *_ = active_fit(x, y, yhat, labelled, probability, 0.0)
    assert active_zero == pytest.approx(labels_only, abs=1e-6)
    plain_ppi, *_ = anchored_fit(x[labelled], y[labelled], yhat[labelled], x, yhat, 1.0)
    active_one, *_ = active_fit(x, y, yhat, labelled, probability, 1.0)
    assert active_one == pytest.approx(plain_ppi, abs=1e-6)


def test_active_probabilities_favour_uncertain_units_and_keep_a_floor():
    value = np.array([0.0, 1.0, 0.5, 0.5, 0.75, 1.0, 0.0, 0.25])
    probability = active_inclusion_probabilities(value, expected_labels=2, floor=0.2)
    assert probability.sum() == pytest.approx(2)
    assert probability[2] == probability[3] > probability[4] == probability[7] > probability[0]
    assert probability[0] == pytest.approx(0.2 * 2 / 8)  # certain units keep the uniform floor
    assert active_inclusion_probabilities(value, 40, 0.2).max() == 1.0  # capped


@pytest.fixture(scope="module")
def coverage():
    """200 seeds of benchmarks/bench_label_anchored.py at 100 human labels."""
    saved = bench_label_anchored.BUDGETS
    bench_label_anchored.BUDGETS = (100,)
    try:
        raw = bench_label_anchored.run(200, workers=2, settings=(("spread", "biased"), ("spread", "useless")))
    finally:
        bench_label_anchored.BUDGETS = saved
    return bench_label_anchored.summary(raw).set_index(["judge", "method"])


@pytest.mark.slow
def test_coverage_of_the_label_anchored_intervals(coverage):
    """Binomial bands for 200 arenas: a joint coverage of 0.95 falls in 0.95 +- 3 sd (0.046);
    the marginal one pools 8 models per arena, correlated, so the same band."""
    biased = coverage.loc["biased"]
    for method in ("labels-only BT", "PPI++", "active PPI++"):
        assert 0.904 <= biased.loc[method, "coverage"] <= 0.996, method
        assert 0.904 <= biased.loc[method, "joint_rank_coverage"] <= 1.0, method
    assert biased.loc["judge-only BT", "coverage"] < 0.5  # the judge's bias is not in its interval
    assert biased.loc["PPI++", "width"] < biased.loc["labels-only BT", "width"]
    assert biased.loc["PPI++", "n_eff_over_n"] > 1.2
    useless = coverage.loc["useless"]
    assert useless.loc["PPI++", "lam"] < 0.15  # a judge that always says "first" is ignored
    assert 0.85 <= useless.loc["PPI++", "n_eff_over_n"] <= 1.1
    assert useless.loc["PPI++", "width"] <= useless.loc["labels-only BT", "width"] * 1.03
    assert 0.904 <= useless.loc["PPI++", "coverage"] <= 0.996


def one_bad_model_table(seed: int, questions: int = 30, budget: int = 120, lam=None):
    """bench_label_anchored's arena with the "one-bad" judge (right on every model's pairs but
    m3's, where it contradicts people), as label_anchored.csv reports it."""
    saved, bench_label_anchored.QUESTIONS = bench_label_anchored.QUESTIONS, questions
    try:
        rng = np.random.default_rng(seed)
        pairs, question, label, value = bench_label_anchored.arena(bench_label_anchored.SCENARIOS["spread"],
                                                                   "one-bad", rng)
    finally:
        bench_label_anchored.QUESTIONS = saved
    models = [f"m{k}" for k in range(bench_label_anchored.MODELS)]
    units = pd.DataFrame({"unit_id": [f"u{k}" for k in range(len(pairs))], "lang": "xx",
                          "query_id": question.astype(str), "model_a": np.array(models)[pairs[:, 0]],
                          "model_b": np.array(models)[pairs[:, 1]], "judge_value": value, "valid_orders": 2})
    chosen = rng.choice(len(pairs), budget, replace=False)
    labels = pd.DataFrame({"unit_id": units["unit_id"].to_numpy()[chosen], "label_value": label[chosen]})
    return label_anchored_table(units, labels, models, {"cant_judge": 0, "missing": 0}, lam=lam).set_index("model")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_judge_bad_on_one_model_does_not_widen_that_models_interval(seed):
    """The demo's defect: one lambda for all models let a judge that is right on seven models and
    contradicts people on m3 give m3 n_eff 62-86 for 120 labels (an interval wider than labels
    alone). With the per-model fallback m3 takes labels alone (lambda 0, n_eff 120), the others
    keep the shared lambda, and no estimable model's interval is wider than its labels-only one."""
    table = one_bad_model_table(seed)
    shown = table[table["estimable"]]
    width = shown["ci_high"] - shown["ci_low"]
    labels_only = shown["labels_only_ci_high"] - shown["labels_only_ci_low"]
    assert (width <= labels_only * (1 + 1e-9)).all()
    assert (shown["n_eff"] >= shown["n_labels"] * (1 - 1e-9)).all()
    assert table.loc["m3", "lambda"] == 0 and table.loc["m3", "n_eff"] == pytest.approx(120, rel=1e-6)
    shared = shown.drop(index="m3")["lambda"]
    assert shared.max() > 0.3  # the judge still counts where it is right
    assert set(shared.round(12)) <= {0.0, round(shared.max(), 12)}  # the shared value, or 0 where it fell back
    assert (shown.drop(index="m3")["n_eff"] > 120).mean() >= 0.5
    single = one_bad_model_table(seed, lam=float(shared.max()))  # one lambda for all, no fallback
    assert single.loc["m3", "n_eff"] < 120


@pytest.mark.slow
def test_the_shared_lambda_is_ppi_pys_tuning_for_the_centred_logits():
    """Without clusters or ties, the one lambda of the label-anchored fit is the one ``ppi_py``'s
    ``_calc_lam_glm`` (overall, no ``coord``) tunes, at the lam-1 fit and again at the refit, as
    ``ppi_logistic_ci(lam=None)`` does, for the total variance of the centred logits rather than of
    the anchored parameters: ``trace(A H^-1 C H^-1 A^T) = trace(M C M)`` with ``M`` the symmetric
    square root of ``H^-1 A^T A H^-1``, so ppi_py tunes for it when given ``M`` as its inverse
    Hessian. The models that keep it have the logits of ppi_py's point estimate at that lambda."""
    from ppi_py.ppi import _calc_lam_glm, _logistic_get_stats
    from scipy.linalg import sqrtm

    from polyrag.arena.ppi_fit import centring

    pairs, y, yhat = simulated(5)
    n = 300
    x = design(pairs, MODELS)
    args = (x[:n], y[:n], yhat[:n], x[n:], yhat[n:])
    weights = (np.ones(n), np.ones(len(x) - n))
    a = centring(MODELS)
    lam = 1.0
    for _ in range(2):  # tune at the lam-1 fit, refit, tune again
        point = ppi_py.ppi_logistic_pointestimate(*args, lam=lam)
        grads, grads_hat, grads_hat_unlabelled, inverse_hessian = _logistic_get_stats(point, *args, *weights)
        root = np.real(sqrtm(inverse_hessian @ a.T @ a @ inverse_hessian))
        lam = _calc_lam_glm(grads, grads_hat, grads_hat_unlabelled, root, clip=True)
    labelled = np.arange(len(x)) < n
    fit = label_anchored_fits(pairs, yhat, labelled, y[:n], MODELS)["label_anchored"]
    kept = fit.lam > 0
    assert 0.05 < lam < 0.95 and kept.sum() >= MODELS - 1
    assert fit.lam[kept] == pytest.approx(lam, abs=1e-6)
    point = ppi_py.ppi_logistic_pointestimate(*args, lam=lam)
    assert fit.logit[kept] == pytest.approx((a @ point)[kept], abs=1e-6)


def games_frame(rows):
    return pd.DataFrame(rows, columns=["query_id", "model_a", "model_b", "shown_first", "verdict"])


def test_units_average_the_valid_orders_and_keep_units_without_one():
    games = games_frame([
        ("q1", "b", "a", "b", "model_a"), ("q1", "b", "a", "a", "model_a"),  # b wins both orders (sorted: a, b)
        ("q1", "a", "c", "a", "model_a"), ("q1", "a", "c", "c", "invalid"),  # one valid order: a wins
        ("q2", "a", "b", "a", "model_a"), ("q2", "a", "b", "b", "model_a"),  # position-consistent: a
        ("q2", "a", "c", "a", "model_a"), ("q2", "a", "c", "c", "model_b"),  # first shown wins: 0.5
        ("q2", "b", "c", "b", "invalid"), ("q2", "b", "c", "c", "invalid"),  # no valid order
        ("q3", "b", "c", "b", "tie"), ("q3", "b", "c", "c", "model_a"),
    ])
    units = judge_units(games, "en").set_index(["query_id", "model_a", "model_b"])
    assert units.loc[("q1", "a", "b"), "judge_value"] == 0.0
    assert units.loc[("q1", "a", "c"), ["judge_value", "valid_orders"]].tolist() == [1.0, 1]
    assert units.loc[("q2", "a", "b"), "judge_value"] == 1.0
    assert units.loc[("q2", "a", "c"), "judge_value"] == 0.5
    assert units.loc[("q2", "b", "c"), ["judge_value", "valid_orders", "orders"]].tolist() == [0.5, 0, 2]
    assert units.loc[("q3", "b", "c"), "judge_value"] == 0.75
    assert len(units) == 6 and units["unit_id"].is_unique


@pytest.fixture
def arena_files():
    models = ["m1", "m2", "m3"]
    questions = pd.DataFrame({"query_id": [f"q{i}" for i in range(6)], "query": [f"Question {i}?" for i in range(6)],
                              "passages": [[{"docid": f"d{i}", "title": "T", "text": f"Passage {i}."}]
                                           for i in range(6)]})
    answers = {m: pd.DataFrame({"query_id": questions["query_id"],
                                "answer": [f"Answer {i} " + "x" * (k * 5) for i in range(6)]})
               for k, m in enumerate(models)}
    answers["m2"].loc[0, "answer"] = None
    rows = []
    for q in questions["query_id"]:
        for a, b in (("m1", "m2"), ("m1", "m3"), ("m2", "m3")):
            for first in (a, b):
                rows.append((q, a, b, first, "model_b" if b == "m3" else "model_a"))
    return models, questions, answers, games_frame(rows)


def test_annotation_round_trip(arena_files, tmp_path, caplog):
    models, questions, answers, games = arena_files
    units = judge_units(games, "en")
    key = sample_units(units, "en", seed=7, count=12)
    assert len(key) == 12 and key["unit_id"].is_unique
    assert key.equals(sample_units(units, "en", seed=7, count=12))  # seeded
    assert not key.equals(sample_units(units, "en", seed=8, count=12))
    assert len(sample_units(units, "en", seed=7, share=0.4)) == 7  # floor(0.4 x 18 units)
    assert (key["model_left"] != key["model_a"]).any() and (key["model_left"] == key["model_a"]).any()
    tasks = task_rows(key, questions, answers)
    paths = [tmp_path / name for name in ("tasks.csv", "tasks.jsonl", "label_studio.json", "label_studio.xml")]
    write_tasks(tasks, *map(str, paths))
    for path in paths[:3]:
        assert not any(model in path.read_text() for model in models)  # no model name reaches an annotator
    # The annotator prefers the longer answer, can't judge one unit, leaves one blank.
    filled = pd.read_csv(paths[0], dtype=str, keep_default_na=False)
    left_longer = filled["answer_left"].str.len() > filled["answer_right"].str.len()
    filled["label"] = np.where(left_longer, "left", "Right better")
    filled.loc[0, "label"], filled.loc[1, "label"], filled.loc[2, "label"] = "Can't judge", "", "tie"
    filled.to_csv(tmp_path / "filled.csv", index=False)
    with caplog.at_level(logging.WARNING):
        labels, counts = labelled_units(read_filled(str(tmp_path / "filled.csv")), key, "filled.csv")
    assert counts == {"sampled": 12, "labelled": 10, "ties": 1, "cant_judge": 1, "missing": 1}
    assert "1 were judged can't judge and 1 have no label" in caplog.text
    length = {m: answers[m].set_index("query_id")["answer"].fillna("(no answer)").str.len() for m in models}
    for row in labels.iloc[1:].itertuples():  # label_value is model_a's score whatever side it was shown on
        a_longer = length[row.model_a][row.query_id] > length[row.model_b][row.query_id]
        assert row.label_value == (1.0 if a_longer else 0.0)
    # The same labels as JSONL and as a Label Studio export read the same.
    records = filled.to_dict("records")
    (tmp_path / "filled.jsonl").write_text("\n".join(json.dumps({"unit_id": r["unit_id"], "label": r["label"]})
                                                     for r in records))
    studio = [{"data": {"unit_id": r["unit_id"]},
               "annotations": [{"result": [{"type": "choices", "from_name": "preference", "to_name": "question",
                                            "value": {"choices": [{"left": "Left better", "right": "Right better",
                                                                   "tie": "Tie"}.get(r["label"], r["label"])]}}]}]
               if r["label"] else []} for r in records]
    (tmp_path / "export.json").write_text(json.dumps(studio))
    for name in ("filled.jsonl", "export.json"):
        again, again_counts = labelled_units(read_filled(str(tmp_path / name)), key, name)
        assert again.equals(labels) and again_counts == counts, name


def test_bad_label_files_are_refused_naming_the_row(arena_files, tmp_path):
    _, _, _, games = arena_files
    key = sample_units(judge_units(games, "en"), "en", seed=7, count=4)
    ids = key["unit_id"].tolist()

    def refused(text, match, name="filled.csv"):
        (tmp_path / name).write_text(text)
        with pytest.raises(DataError, match=match):
            labelled_units(read_filled(str(tmp_path / name)), key, name)

    refused(f"unit_id,label\n{ids[0]},left\nu000000000000,right\n",
            r"filled.csv: row 3: unit_id 'u000000000000' is not in")
    refused(f"unit_id,label\n{ids[0]},left\n{ids[0]},right\n", r"row 3: unit_id '.*' is labelled twice")
    refused(f"unit_id,label\n{ids[0]},better\n", r"filled.csv: row 2: label 'better' is not one of")
    refused(f"unit_id,verdict\n{ids[0]},left\n", r"filled.csv: the human labels need columns unit_id and label")
    refused('{"unit_id": "x"\n', r"filled.jsonl: line 1: not JSON", name="filled.jsonl")
    refused("unit_id\tlabel\n", r"filled.tsv: human labels must be .csv, .jsonl", name="filled.tsv")
    with pytest.raises(DataError, match=r"arena.human_labels.sample: 99 units asked in 'en', which has 18"):
        sample_units(judge_units(games, "en"), "en", seed=7, count=99)


def test_stand_in_labeller_reads_the_games_in_the_task_order(arena_files):
    _, _, _, games = arena_files
    games = games.copy()
    shown_m1_first = (games["query_id"] == "q0") & (games["shown_first"] == "m1") & (games["model_b"] == "m2")
    games.loc[shown_m1_first, "verdict"] = "invalid"
    key = sample_units(judge_units(games, "en"), "en", seed=3, count=18)
    filled = stand_in_labels(key, games).merge(key, on="unit_id")
    for row in filled.itertuples():
        if row.query_id == "q0" and {row.model_a, row.model_b} == {"m1", "m2"} and row.model_left == "m1":
            assert row.label == "cant_judge"
        else:  # m3 always wins; otherwise m1 beats m2
            winner = "m3" if "m3" in (row.model_a, row.model_b) else "m1"
            assert row.label == ("left" if row.model_left == winner else "right")


def test_label_anchored_table_and_agreement(arena_files):
    """End to end on a small arena whose human labels are the judge's own verdicts in the order shown
    (the stand-in labeller): it agrees with them far above chance."""
    models, questions, answers, games = arena_files
    rng = np.random.default_rng(0)
    many = pd.concat([games.assign(query_id=games["query_id"] + f"-{k}") for k in range(20)], ignore_index=True)
    flip = rng.random(len(many)) < 0.3  # some noise so that no model wins every game
    many.loc[flip, "verdict"] = np.where(many.loc[flip, "verdict"] == "model_a", "model_b", "model_a")
    units = judge_units(many, "en")
    key = sample_units(units, "en", seed=1, count=60)
    filled = stand_in_labels(key, many)
    labels, counts = labelled_units(filled.assign(where="x"), key, "stand-in")
    table = label_anchored_table(units, labels, models, counts)
    # centred over the models, a logit that fell back to labels alone from that fit: the sum is 0 only roughly
    assert table["logit"].sum() == pytest.approx(0, abs=0.1)
    assert table.loc[0, "model"] == "m3" and (table["n_labels"] == counts["labelled"]).all()
    assert (table["ci_low"] < table["logit"]).all() and (table["logit"] < table["ci_high"]).all()
    assert (table["n_units"] == len(units)).all() and table["lambda"].between(0, 1).all()
    length = {(m, q): len(text) for m, frame in answers.items()
              for q, text in zip(frame["query_id"], frame["answer"].fillna(""))}
    length = {(m, f"{q}-{k}"): v for (m, q), v in length.items() for k in range(20)}
    agreement = judge_label_agreement(units, labels, many, length).set_index("metric")["value"]
    assert agreement["agreement"] > agreement["chance_agreement"]
    confusion = agreement[agreement.index.str.startswith("judge_")]
    assert len(confusion) == 9 and confusion.sum() == len(labels)
    diagonal = sum(agreement[f"judge_{k}_label_{k}"] for k in ("model_a", "tie", "model_b"))
    assert diagonal / len(labels) == pytest.approx(agreement["agreement"])
    # Two languages with the same question ids pool without mixing their questions up: the shares
    # stay those of one language, the counts double.
    expanded = {(lang, m): pd.concat([f.assign(query_id=f["query_id"] + f"-{k}") for k in range(20)])
                for lang in ("en", "de") for m, f in answers.items()}
    copy = {"lang": "de", "unit_id": lambda frame: frame["unit_id"] + "-de"}
    both_units, both_labels = pd.concat([units, units.assign(**copy)]), pd.concat([labels, labels.assign(**copy)])
    pooled = agreement_over_languages(both_units, both_labels, {"en": many, "de": many}, expanded).set_index("metric")
    single = agreement_over_languages(units, labels, {"en": many},
                                      {k: v for k, v in expanded.items() if k[0] == "en"}).set_index("metric")
    shares = ["agreement", "chance_agreement", "kappa"]
    assert pooled.loc[shares, "value"].tolist() == pytest.approx(single.loc[shares, "value"].tolist())
    assert (pooled["n"] == 2 * single["n"]).all() and pooled.loc["agreement", "n"] == 2 * len(labels)
    with pytest.raises(DataError, match="human labels for units the judge did not judge"):
        label_anchored_table(units.iloc[5:], labels.assign(unit_id=units["unit_id"].iloc[:len(labels)].values),
                             models, counts)


def test_active_design_samples_where_the_judge_is_unsure_and_weights_the_fit(arena_files):
    models, _, _, games = arena_files
    rng = np.random.default_rng(1)
    many = pd.concat([games.assign(query_id=games["query_id"] + f"-{k}") for k in range(40)], ignore_index=True)
    flip = rng.random(len(many)) < 0.3
    many.loc[flip, "verdict"] = np.where(many.loc[flip, "verdict"] == "model_a", "model_b", "model_a")
    units = judge_units(many, "en")
    key = sample_units(units, "en", seed=2, count=200, design="active", floor=0.5)
    sampled = units.set_index("unit_id").loc[key["unit_id"]]
    unsure = (sampled["judge_value"] == 0.5).mean()
    assert unsure > 1.5 * (units["judge_value"] == 0.5).mean()  # the orders disagree more often among the sampled
    assert abs(len(key) - 200) < 4 * np.sqrt(200)  # Bernoulli draws: 200 expected
    assert key["inclusion_probability"].between(0.5 * 200 / len(units) - 1e-12, 1).all()
    labels, counts = labelled_units(stand_in_labels(key, many).assign(where="x"), key, "stand-in")
    table = label_anchored_table(units, labels, models, counts, active=True)
    assert (table["design"] == "active").all() and table.loc[0, "model"] == "m3"
    assert (table["ci_low"] < table["logit"]).all() and (table["logit"] < table["ci_high"]).all()


def test_effective_labels_equal_the_labels_when_the_judge_gets_no_weight():
    pairs, y, yhat = simulated(4, ties=True)
    labelled = np.arange(len(pairs)) < 200
    clusters = np.arange(len(pairs)) // 5
    fits = label_anchored_fits(pairs, yhat, labelled, y[labelled], MODELS, lam=0.0, clusters=clusters)
    assert effective_labels(fits["label_anchored"], fits["labels_only_at_anchored"], 200) == pytest.approx(200)
    tuned = label_anchored_fits(pairs, yhat, labelled, y[labelled], MODELS, clusters=clusters)
    assert (effective_labels(tuned["label_anchored"], tuned["labels_only_at_anchored"], 200) > 200).all()


def separated_arena(seed: int = 1, questions: int = 12, n_labels: int = 30):
    """Five models on every pair of 12 questions (120 units), 30 of them labelled, as a language of
    the demo; m0 is preferred in every human label that compares it (the labels separate it). On
    those labelled units the judge agrees with the labels; elsewhere it is a noisy BT judge."""
    rng = np.random.default_rng(seed)
    models = [f"m{k}" for k in range(5)]
    strength = dict(zip(models, [1.0, 0.5, 0.0, -0.5, -1.0]))
    rows = [(q, a, b) for q in range(questions) for i, a in enumerate(models) for b in models[i + 1:]]
    units = pd.DataFrame(rows, columns=["query_id", "model_a", "model_b"]).assign(lang="ar", valid_orders=2)
    units["query_id"] = "q" + units["query_id"].astype(str)
    units.insert(0, "unit_id", [f"u{k:03d}" for k in range(len(units))])
    p_a = 1 / (1 + np.exp(units["model_b"].map(strength) - units["model_a"].map(strength)))
    units["judge_value"] = ((rng.random((len(units), 2)) < p_a.to_numpy()[:, None]).mean(axis=1))
    labelled = rng.choice(len(units), n_labels, replace=False)
    label_value = np.where(rng.random(n_labels) < 0.1, 0.5,
                           (rng.random(n_labels) < p_a.to_numpy()[labelled]).astype(float))
    m0 = (units["model_a"].to_numpy()[labelled] == "m0")  # m0 sorts first: it is model_a of all its units
    label_value[m0] = 1.0
    units.loc[units.index[labelled[m0]], "judge_value"] = 1.0
    labels = pd.DataFrame({"unit_id": units["unit_id"].to_numpy()[labelled], "label_value": label_value})
    return models, units, labels, {"cant_judge": 0, "missing": 0}


def test_a_separated_fit_prints_no_logit_or_rank_and_says_why(tmp_path):
    """Labels only (lambda 0) with m0 preferred in all its labels: no finite fit. Every logit,
    interval and rank is empty and the note names m0; before, the table printed logits such as
    11.6, intervals (-inf, inf) and rank ranges 1-5 as if they meant something."""
    models, units, labels, counts = separated_arena()
    table = label_anchored_table(units, labels, models, counts, lam=0.0).set_index("model")
    assert not table["estimable"].any() and not table["converged"].any()
    assert table[["logit", "ci_low", "ci_high", "n_eff"]].isna().all().all()
    assert table[["rank", "rank_best", "rank_worst"]].isna().all().all()
    k = int(table.loc["m0", "model_labels"])
    assert table["note"].str.startswith(f"not estimable: the fit has no finite maximum (labels that separate m0 "
                                        f"(preferred in all {k} of its human labels) from the rest)").all()
    assert table["note"].str.contains("fewer than 100 human labels").all()
    path = tmp_path / "label_anchored.csv"
    table.reset_index().assign(scope="ar").to_csv(path, index=False)
    check_consumers(path, models, tmp_path, expect_rows=0)


def test_a_model_preferred_in_all_its_labels_is_left_out_and_the_rest_are_centred_over_themselves(tmp_path):
    """With the judge's term the fit is finite (lambda 1), but m0's logit rests on the judge alone
    (its labels cannot measure the judge's bias on it): m0 is not estimable, the four others are
    reported, centred over themselves, ranked 1-4, with intervals and rank-sets of that fit."""
    models, units, labels, counts = separated_arena()
    table = label_anchored_table(units, labels, models, counts, lam=1.0).set_index("model").loc[models]
    assert table["converged"].all() and table["estimable"].tolist() == [False, True, True, True, True]
    assert pd.isna(table.loc["m0", "logit"]) and pd.isna(table.loc["m0", "rank"])
    assert table.loc["m0", "note"].startswith("not estimable: preferred in all")
    others = table.drop(index="m0")
    assert others["logit"].sum() == pytest.approx(0, abs=1e-9)
    assert sorted(others["rank"].tolist()) == [1, 2, 3, 4] and (others["rank_worst"] <= 4).all()
    assert (others["ci_low"] < others["logit"]).all() and (others["logit"] < others["ci_high"]).all()
    assert others["note"].str.startswith("centred over the 4 estimable models (not estimable: m0 (preferred").all()
    # the same logits as the full fit's, recentred over the four
    fits = label_anchored_fits(*table_inputs(units, labels, models), len(models), lam=1.0)
    full = fits["label_anchored"].logit[1:]
    assert others.loc[models[1:], "logit"].to_numpy() == pytest.approx(full - full.mean(), abs=1e-9)
    path = tmp_path / "label_anchored.csv"
    table.reset_index().assign(scope="ar").to_csv(path, index=False)
    check_consumers(path, models, tmp_path, expect_rows=4)


def table_inputs(units, labels, models):
    index = {m: i for i, m in enumerate(models)}
    pairs = np.column_stack([units["model_a"].map(index), units["model_b"].map(index)])
    label_value = units[["unit_id"]].merge(labels, on="unit_id", how="left")["label_value"]
    labelled = label_value.notna().to_numpy()
    return pairs, units["judge_value"].to_numpy(float), labelled, label_value[labelled].to_numpy(float)


def check_consumers(path, models, tmp_path, expect_rows: int):
    """The leaderboard and the summary `make demo` prints read a table with empty logits and ranks."""
    from polyrag.arena.leaderboard import short_leaderboard, with_label_anchored
    from polyrag.csv_tables import write_table
    from polyrag.show import summary
    anchored = pd.read_csv(path)
    arena = pd.DataFrame({"model": models, "rank": range(1, 6), "score": np.linspace(1, -1, 5), "ci_low": -2.0,
                          "ci_high": 2.0, "rank_best": 1, "rank_worst": 5, "judged": True})
    detailed = with_label_anchored(arena, anchored, "cite-check")
    assert detailed["label_anchored_rank"].dtype == "Int64" and detailed["label_anchored_note"].notna().all()
    write_table(short_leaderboard(detailed), tmp_path / "leaderboard.csv")
    write_table(detailed, tmp_path / "leaderboard_detailed.csv")
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    part = text.split("Label-anchored ranking (cite-check + 30 human labels (ar)")[1]
    assert "m0: not estimable" in part
    if expect_rows == 0:
        assert "(no model's logit is estimable from these labels)" in part
    else:
        assert sum(line.split()[1:2] in ([m] for m in models) for line in part.splitlines()[2:2 + expect_rows]) == 4
