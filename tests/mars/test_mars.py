"""MARS: negatives, XQuAD gold roles, the round-trip filter, synthetic generation, the offline
judge, PPI against a hand computation and a coverage simulation, calibration sets, mock systems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, norm

from polyrag.errors import DataError
from polyrag.features.embedding import EmbeddingStore
from polyrag.llm.base import Backend
from polyrag.llm.client import LLM
from polyrag.llm.types import Response
from polyrag.mars.gold import gold_items, wrong_language
from polyrag.mars.judges import early_stopping_split, judge_data, labelled, load_judge, train_judge
from polyrag.mars.labels import LABEL_COLUMNS, pair_of_language_key, parse_label
from polyrag.mars.mock_systems import meta_evaluate, mock_items
from polyrag.mars.negatives import corrupted, label_counts, with_negatives
from polyrag.mars.ppi import ppi_score
from polyrag.mars.calibration import calibration_from_gold, calibration_from_memerag, calibration_from_tsv, require_labels
from polyrag.mars.retrieval_filter import E5Embedder, round_trip_filter
from polyrag.mars.scores import model_scores, system_items
from polyrag.mars.synthetic import first_line, few_shot_from_file, generate_synthetic
from polyrag.meta_eval.memerag import read_memerag
from polyrag.seeds import rng_for

CR, AR, AF, LC = (LABEL_COLUMNS[m] for m in ("cr", "ar", "af", "lc"))
SCORING = {"estimator": "rogan_gladen", "alpha": 0.05, "power_tuning": False}  # the schema's defaults


def gold(data, pair, **options):
    settings = {"second_languages": ["en", "de"], "directory": str(data / "xquad"), "revision": "unused",
                "cache_dir": "unused", "seed": 3, "few_shot": 2, "calibration_size": 120, "exclude_ids": set()}
    return gold_items(pair, **{**settings, **options})


@pytest.fixture(scope="module")
def gold_en_de(embedded_data):
    """The demo's XQuAD subset (12 articles, en and de): every clone has it."""
    return {pair: gold(embedded_data, pair) for pair in ("en-en", "de-de", "en-de")}


def positives(n=6):
    return pd.DataFrame({
        "Query": [f"question {i}?" for i in range(n)], "Document": [f"passage {i}." for i in range(n)],
        "Answer": [f"the answer is number {i} in this list" for i in range(n)],
        "Wrong_Language_Answer": [f"die Antwort ist die Nummer {i} in dieser Liste" for i in range(n)],
        "doc_lang": "en", "qa_lang": "en", "wrong_lang": "de",
    })


def test_language_pairs_put_the_passage_language_first():
    assert pair_of_language_key("de") == "de-de"
    assert pair_of_language_key("de-en") == "en-de"  # data key: questions de, passages en
    assert wrong_language("en-de", ["en", "de"]) == "en"
    assert wrong_language("en-en", ["en", "de"]) == "de" and wrong_language("hi-hi", ["en", "de"]) == "en"
    assert parse_label("[[Yes]]", "x") == 1.0 and parse_label(0, "x") == 0.0 and parse_label("", "x") is None
    with pytest.raises(ValueError, match="row 3: unknown label value 'maybe'"):
        parse_label("maybe", "row 3")


def test_negatives_are_balanced_and_built_as_mars_builds_them():
    base = positives(7)
    table, dropped = with_negatives(base, rng_for(1, "test"))
    assert dropped == {"empty": 0, "same_as_positive": 0, "not_detected_as_wrong_language": 0}
    counts = label_counts(table)
    assert counts == {m: {"positive": 7, "negative": 7} for m in ("cr", "ar", "af", "lc")}
    cr = table[table["kind"] == "cr_negative"].reset_index(drop=True)
    assert (cr["Document"] != base["Document"]).all() and (cr["Answer"] == base["Answer"]).all()
    assert cr[AR].isna().all() and cr[LC].isna().all()
    ar = table[table["kind"] == "ar_negative"].reset_index(drop=True)
    assert (ar["Answer"] != base["Answer"]).all() and (ar["Document"] == base["Document"]).all()
    # AF negatives: a seeded half of the CR negatives, the complementary half of the AR negatives.
    assert (cr[AF] == 0).sum() == 3 and (ar[AF] == 0).sum() == 4
    assert ((cr[AF] == 0).to_numpy() ^ (ar[AF] == 0).to_numpy()).all()
    lc = table[table["kind"] == "lc_negative"].reset_index(drop=True)
    assert (lc["Answer"] == base["Wrong_Language_Answer"]).all() and (lc[LC] == 0).all()
    af = corrupted(base, "af", rng_for(2, "test"))
    assert ((af["Document"] != base["Document"]) ^ (af["Answer"] != base["Answer"])).all()
    with pytest.raises(DataError, match="fewer than 2 distinct texts"):
        with_negatives(positives(1), rng_for(1, "test"))


def test_a_language_consistency_negative_differs_from_the_positive_and_is_in_the_other_language():
    base = positives(5)
    base.loc[1, ["Answer", "Wrong_Language_Answer"]] = ["308", "308"]  # parallel answers: the same string
    base.loc[2, ["Answer", "Wrong_Language_Answer"]] = ["New England Patriots", "New England Patriots."]
    base.loc[3, "Wrong_Language_Answer"] = "this answer is still written in English"  # language not followed
    base.loc[4, "Wrong_Language_Answer"] = ""
    table, dropped = with_negatives(base, rng_for(1, "test"))
    assert dropped == {"empty": 1, "same_as_positive": 2, "not_detected_as_wrong_language": 1}
    lc = table[table[LC].notna()]
    assert lc.loc[lc[LC] == 0, "Answer"].tolist() == [base.loc[0, "Wrong_Language_Answer"]]
    assert lc.loc[lc[LC] == 1, "Answer"].tolist() == [base.loc[0, "Answer"]]  # LC stays balanced
    # The other labels of those items are kept: only LC had no valid negative.
    assert label_counts(table)["cr"] == {"positive": 5, "negative": 5}
    with pytest.raises(DataError, match="no valid wrong-language answer"):
        corrupted(base, "lc", rng_for(1, "test"))


@pytest.mark.slow
def test_no_xquad_item_is_labelled_both_language_consistent_and_not(gold_en_de):
    """Parallel XQuAD answers are often one string in both languages (names, numbers); none of
    them may become an LC negative of itself, in the calibration set or in the mock systems."""
    import langid

    key = ["Query", "Document", "Answer"]
    for pair, gold_rows in gold_en_de.items():
        identical = gold_rows["Answer"].str.strip() == gold_rows["Wrong_Language_Answer"].str.strip()
        assert identical.mean() > 0.25, pair  # the hole is real: 30% of the en/de questions
        rows = gold_rows[gold_rows["role"] == "calibration"]
        assert identical[rows.index].sum() > 0, pair  # and the calibration questions have such answers
        calibration = calibration_from_gold({pair: gold_rows}, seed=3)
        lc = calibration[calibration[LC].notna()]
        assert lc.groupby(key)[LC].nunique().max() == 1, pair
        assert (lc[LC] == 0).sum() == (lc[LC] == 1).sum() > 0
        negatives = lc[lc[LC] == 0]
        wrong_lang = rows["wrong_lang"].iloc[0]
        assert all(langid.classify(text)[0] == wrong_lang for text in negatives["Answer"]), pair
        pool, mock_negatives = mock_items(gold_rows, "lc", 100, rng_for(0, pair))
        assert len(pool) == 100
        assert not set(map(tuple, pool[key].to_numpy())) & set(map(tuple, mock_negatives[key].to_numpy()))
        assert all(langid.classify(text)[0] == wrong_lang for text in mock_negatives["Answer"]), pair


def test_xquad_gold_roles_are_disjoint_by_paragraph_and_shared_across_pairs(embedded_data, gold_en_de):
    en, de, cross = gold_en_de["en-en"], gold_en_de["de-de"], gold_en_de["en-de"]
    assert len(en) == len(de) == len(cross)
    assert (en["role"] == "few_shot").sum() == 2
    assert en.set_index("id")["role"].equals(de.set_index("id")["role"])  # translations share a role
    # Few-shot examples show a wrong-language answer that is another string, not a copied name.
    from polyrag.features.bergen import normalize

    few = en[en["role"] == "few_shot"]
    assert (few["Answer"].map(normalize) != few["Wrong_Language_Answer"].map(normalize)).all()
    roles_per_paragraph = en.groupby("paragraph")["role"].nunique()
    assert (roles_per_paragraph == 1).all()
    assert 30 <= (en["role"] == "calibration").sum() < 30 + 10  # ceil(120 / 4) questions, whole paragraphs
    # en-en: wrong-language answers are the parallel German ones; en-de: passages en, questions de.
    assert en.set_index("id").loc[de["id"], "Wrong_Language_Answer"].tolist() == de["Answer"].tolist()
    assert cross["Document"].tolist() == en["Document"].tolist() and cross["Query"].tolist() == de["Query"].tolist()
    excluded = set(en.loc[en["role"] == "calibration", "id"][:5])
    again = gold(embedded_data, "en-en", exclude_ids=excluded)
    assert not excluded & set(again["id"]) and len(again) == len(en) - 5


def test_round_trip_filter_and_token_truncation():
    embedder = E5Embedder()
    corpus = ["The Eiffel Tower in Paris was completed in 1889 for the World's Fair.",
              "Photosynthesis converts light energy into chemical energy in plants.",
              "Der Rhein fließt von den Alpen bis zur Nordsee."]
    questions = ["When was the Eiffel Tower completed?", "Wie lang ist der Rhein?", "When was the Eiffel Tower built?"]
    kept = round_trip_filter(questions, [0, 2, 1], corpus, embedder)
    assert kept.tolist() == [True, True, False]  # the third names passage 1 as its source, wrongly
    thai = "ประเทศไทยมีประชากรประมาณเจ็ดสิบล้านคนและกรุงเทพมหานครเป็นเมืองหลวง" * 5
    short = embedder.truncate(thai, 12)
    assert len(thai.split()) == 1 and thai.startswith(short) and 0 < len(short) < len(thai) // 4


class ScriptedGenerator(Backend):
    """Writes a question by copying the start of the prompt's last document (so the filter keeps
    it), except for documents that mention 'rabbit' (a vague question the filter must drop)."""

    name = "scripted"
    identity = "scripted"
    cacheable = False

    def __init__(self):
        self.prompts = []

    def stream(self, requests):
        for i, request in enumerate(requests):
            self.prompts.append(request.prompt)
            document = request.prompt.split("Document (English): ")[-1].split("\n")[0]
            if request.prompt.rstrip().endswith("Question (English):"):
                text = " What is it about?" if "rabbit" in document else f" {document[:60]}?\nExample 9:"
            else:
                language = request.prompt.rstrip().rsplit("Answer (", 1)[-1].rstrip("):")
                word = document.split()[1]
                text = {"English": f" The answer is about the {word} and nothing else.",
                        "German": f" Die Antwort handelt von {word} und sonst nichts."}[language]
                if "Everest" in document:  # a number: the same in both languages
                    text = " 8848"
                if language == "German" and "Pacific" in document:  # ignores the language asked for
                    text = " The Pacific Ocean is the largest and deepest ocean on Earth."
                if language == "English" and "Bach" in document:  # the "right-language" answer is not
                    text = " Bach war ein deutscher Komponist des Barock."
            yield i, Response(text=text)


def test_synthetic_generation_counts_every_step():
    corpus = ["The Amazon rainforest covers much of the Amazon basin of South America.",
              "Mount Everest is Earth's highest mountain above sea level, in the Himalayas.",
              "The rabbit is a small mammal.",
              "Johann Sebastian Bach was a German composer of the Baroque period.",
              "The Pacific Ocean is the largest and deepest of Earth's five oceanic divisions."]
    examples = ([{"Query": "Who wrote Faust?", "Document": "Goethe wrote Faust.", "Answer": "Goethe"}],
                [{"Query": "Who wrote Faust?", "Document": "Goethe wrote Faust.", "Answer": "Goethe (de)"}])
    settings = {"documents": 5, "temperature": 0.7, "question_max_tokens": 32, "answer_max_tokens": 32,
                "second_languages": ["en", "de"]}
    entry = {"backend": "llama_cpp", "response_prefix": "x"}
    generator = ScriptedGenerator()
    table, stats = generate_synthetic(LLM(generator), entry, "en-en", corpus, examples, settings, E5Embedder(), seed=1)
    assert stats["documents"] == 5 and stats["questions_unusable"] == 0
    assert stats["questions_usable"] == 5 and stats["filter_kept"] == 4
    # Bach: the English answer is German, so its item goes; Everest: "8848" has no language and is
    # kept, but is no LC negative of itself; Pacific: the "German" answer is English.
    assert stats["answers_not_in_question_language"] == 1 and stats["positives"] == 3
    assert stats["lc_negatives_dropped"] == {"empty": 0, "same_as_positive": 1, "not_detected_as_wrong_language": 1}
    assert stats["labels"]["lc"] == {"positive": 1, "negative": 1}
    assert stats["labels"]["cr"] == {"positive": 3, "negative": 3}
    # Wrong-language answers are asked only for the 3 kept questions, not the 4 the filter kept.
    assert sum(prompt.rstrip().endswith("Answer (German):") for prompt in generator.prompts) == 3
    positive = table[table["kind"] == "positive"]
    assert not positive["Query"].str.contains("\n").any() and not positive["Query"].str.contains("rabbit").any()
    assert not positive["Document"].str.contains("Bach").any()
    assert table.loc[table[LC] == 1, "Answer"].tolist() == ["The answer is about the Amazon and nothing else."]
    assert table.loc[table[LC] == 0, "Answer"].tolist() == ["Die Antwort handelt von Amazon und sonst nichts."]
    # Two-word questions are unusable: the pair stops with every count.
    with pytest.raises(DataError, match=r"pair en-en: the generator produced 0 usable question-answer pairs "
                                        r"\(at least 2 are needed\): 2 passages asked, 0 LLM failures, 2 unusable"):
        generate_synthetic(LLM(ScriptedGenerator()), entry, "en-en", ["Rabbits dig.", "Bach composed."],
                           examples, settings, E5Embedder(), seed=0)
    assert first_line(' Question (German): "Wer schrieb Faust?"\nExample 3', "Question") == "Wer schrieb Faust?"


def test_few_shot_file_needs_the_pair(tmp_path):
    table = pd.DataFrame({"Query": ["q", "q"], "Document": ["d", "d"], "Answer": ["a", "Antwort"],
                          "doc_lang": "en", "qa_lang": "en", "Language_Consistency_Label": ["Yes", "No"]})
    examples, wrong = few_shot_from_file(table, "few.tsv", "en-en", 3)
    assert examples[0]["Answer"] == "a" and wrong[0]["Answer"] == "Antwort"
    with pytest.raises(DataError, match="few.tsv: no few-shot examples for language pair de-en"):
        few_shot_from_file(table, "few.tsv", "de-en", 3)


@pytest.fixture(scope="module")
def trained_judges(gold_en_de, tmp_path_factory):
    """Offline judges trained on gold-built XQuAD en/de examples (pool questions, a held-out share
    of them choosing the epoch, as the workflow's synthetic data); the calibration rows apart."""
    directory = tmp_path_factory.mktemp("judges")
    examples = pd.concat([with_negatives(g[g["role"] == "pool"].head(100), rng_for(5, pair))[0]
                          for pair, g in gold_en_de.items()], ignore_index=True)
    calibration = pd.concat([with_negatives(g[g["role"] == "calibration"], rng_for(6, pair))[0]
                           for pair, g in gold_en_de.items()], ignore_index=True)
    settings = {"backend": "embedding_logreg", "C": 1.0, "max_length": 96}
    store = EmbeddingStore()  # one set of vectors for every judge, as the workflow's scripts share one
    summaries = {m: train_judge(m, *judge_data(examples, m, seed=0), settings, directory / m, seed=0, embed=store)
                 for m in ("cr", "ar", "lc")}
    judges = {m: load_judge(m, directory / m, settings, store) for m in summaries}
    for metric, judge in judges.items():
        calibration[f"prediction_{metric}"] = judge.predict_proba(calibration)
    return summaries, judges, calibration, directory, examples


@pytest.mark.slow
def test_offline_judges_learn_and_reload(trained_judges):
    summaries, judges, calibration, directory, examples = trained_judges
    for metric, summary in summaries.items():
        # The validation figure is the accuracy on the held-out synthetic rows, recomputed here.
        _, rows = judge_data(examples, metric, seed=0)
        predicted = (judges[metric].predict_proba(rows) >= 0.5) == rows[LABEL_COLUMNS[metric]].astype(bool)
        assert summary["validation_examples"] == len(rows)
        assert predicted.mean() == pytest.approx(summary["validation_accuracy"])
        # On the calibration rows, never seen in training nor selection: above the no-skill baseline
        # (0.5: the classes are balanced). AR is hard for frozen embeddings: XQuAD answers are short
        # spans and its negatives are other questions' spans.
        on_calibration = labelled(calibration, metric)
        truth = on_calibration[LABEL_COLUMNS[metric]].to_numpy()
        accuracy = ((on_calibration[f"prediction_{metric}"] >= 0.5) == truth).mean()
        baseline = max(truth.mean(), 1 - truth.mean())
        assert baseline == 0.5 and accuracy > {"cr": 0.8, "ar": 0.6, "lc": 0.65}[metric], (metric, accuracy)
        assert pd.read_csv(directory / metric / "history.csv")["best"].tolist() == [True]
    with pytest.raises(DataError, match="both classes are needed"):
        one_class, _ = with_negatives(positives(), rng_for(1, "x"))
        train_judge("cr", one_class[one_class["kind"] == "positive"], one_class,
                    {"backend": "embedding_logreg", "C": 1.0, "max_length": 96}, directory / "x", 0)


def test_judges_choose_their_epoch_on_held_out_synthetic_questions_not_on_the_calibration_set(repo):
    table, _ = with_negatives(positives(40), rng_for(1, "x"))
    train, validation = early_stopping_split(table, seed=4)
    assert not set(train["Query"]) & set(validation["Query"])  # a question and its negatives stay together
    assert validation["Query"].nunique() == 8 and len(train) + len(validation) == len(table)  # 20% of 40
    assert validation.groupby("Query").size().eq(4).all()  # positive, CR, AR and LC negative
    again, _ = early_stopping_split(table, seed=4)
    other, _ = early_stopping_split(table, seed=5)
    assert again.equals(train) and not other.equals(train)
    # Each judge holds out a share of its own labelled questions: LC with few labels is validated too.
    table.loc[table["kind"] == "lc_negative", LC] = np.nan
    table.loc[table["kind"] == "positive", LC] = np.where(np.arange(40) < 3, 1.0, np.nan)
    table = table[(table["kind"] != "lc_negative") | table["Query"].isin(["question 0?", "question 1?", "question 2?"])]
    table.loc[table["kind"] == "lc_negative", LC] = 0.0
    lc_train, lc_validation = judge_data(table, "lc", seed=4)
    assert lc_validation["Query"].nunique() == 1 and set(lc_validation[LC]) == set(lc_train[LC]) == {0.0, 1.0}
    with pytest.raises(DataError, match="judge lc: the synthetic data have no language-consistency negatives"):
        judge_data(table[table["kind"] != "lc_negative"], "lc", seed=4)
    # The workflow's judge rule reads the synthetic data only.
    rule = (repo / "rules" / "mars.smk").read_text().split("rule mars_judge:")[1]
    assert "calibration" not in rule.split("input:")[1].split("output:")[0]


def test_memerag_calibration_with_the_mars_meta_evaluation_scorer_is_refused(repo, monkeypatch):
    import copy

    import yaml

    from polyrag.config.validate import validate_config
    from polyrag.errors import ConfigError

    monkeypatch.chdir(repo)
    config = yaml.safe_load((repo / "config.yaml").read_text())
    config["mars"]["metrics"] = ["ar", "af"]
    config["mars"]["calibration"] = {"source": "memerag"}
    config["meta_eval"]["scorers"] = ["e5-similarity"]
    validate_config(copy.deepcopy(config), repo / "schemas" / "config.schema.yaml", source="my.yaml")  # fine alone
    config["meta_eval"]["scorers"] = ["e5-similarity", "mars"]
    with pytest.raises(ConfigError, match=r"my.yaml: mars.calibration.source: memerag with meta_eval.scorers: mars"):
        validate_config(config, repo / "schemas" / "config.schema.yaml", source="my.yaml")


def test_ppi_matches_the_formula_and_passes_alpha():
    rng = np.random.default_rng(0)
    Y = rng.integers(0, 2, 200).astype(float)
    Yhat = np.where(rng.random(200) < 0.8, Y, 1 - Y)
    Yhat_unlabelled = (rng.random(2000) < 0.6).astype(float)
    result = ppi_score(Y, Yhat, Yhat_unlabelled, alpha=0.05, power_tuning=False)
    estimate = Yhat_unlabelled.mean() - (Yhat - Y).mean()
    se = np.sqrt(Yhat_unlabelled.var() / 2000 + (Yhat - Y).var() / 200)
    assert result["score"] == pytest.approx(estimate)
    assert result["ci_low"] == pytest.approx(estimate - norm.ppf(0.975) * se, abs=2e-3)
    assert result["ci_high"] == pytest.approx(estimate + norm.ppf(0.975) * se, abs=2e-3)
    assert result["judge_positive_rate"] == Yhat_unlabelled.mean() and result["estimator"] == "ppi"
    wider = ppi_score(Y, Yhat, Yhat_unlabelled, alpha=0.01, power_tuning=False)
    assert wider["ci_high"] - wider["ci_low"] > result["ci_high"] - result["ci_low"]
    tuned = ppi_score(Y, Yhat, Yhat_unlabelled, alpha=0.05, power_tuning=True)
    assert tuned["ci_high"] - tuned["ci_low"] <= result["ci_high"] - result["ci_low"] + 1e-9


def test_ppi_interval_covers_the_true_score_at_the_nominal_rate():
    """A judge that errs more on negatives than positives is biased; PPI removes the bias."""
    rng = np.random.default_rng(1)
    true_score, covered, raw_covered = 0.6, 0, 0
    def judge(labels):
        flip = np.where(labels == 1, rng.random(len(labels)) < 0.1, rng.random(len(labels)) < 0.3)
        return np.where(flip, 1 - labels, labels)
    for _ in range(400):
        Y = (rng.random(300) < true_score).astype(float)
        unlabelled = (rng.random(3000) < true_score).astype(float)
        result = ppi_score(Y, judge(Y), judge(unlabelled), alpha=0.05, power_tuning=False)
        covered += result["ci_low"] <= true_score <= result["ci_high"]
        raw_covered += abs(result["judge_positive_rate"] - true_score) < 0.02
    assert 0.92 <= covered / 400 <= 0.98
    assert raw_covered / 400 < 0.2  # the raw rate (0.66 expected) misses the true 0.6


class ColumnJudge:
    """A simulated judge: its label of an item is the item's ``judge_says`` column."""

    def predict_proba(self, table):
        return table["judge_says"].to_numpy(dtype=float)


def simulated_judge(truth, rng, false_positive, false_negative):
    flip = np.where(truth == 1, rng.random(len(truth)) < false_negative, rng.random(len(truth)) < false_positive)
    return np.where(flip, 1 - truth, truth)


def simulated_calibration(rng, lang, n, true_score, false_positive, false_negative):
    Y = (rng.random(n) < true_score).astype(float)
    return pd.DataFrame({AR: Y, "prediction_ar": simulated_judge(Y, rng, false_positive, false_negative),
                         "doc_lang": lang, "qa_lang": lang})


def simulated_answers(rng, n, true_score, false_positive, false_negative, answered=None):
    truth = (rng.random(n) < true_score).astype(float)
    answered = np.ones(n, dtype=bool) if answered is None else answered
    return pd.DataFrame({"Answer": np.where(answered, "an answer", None),
                         "judge_says": simulated_judge(truth, rng, false_positive, false_negative)})


def coverage(scores_of_run, truth, runs, seed):
    """Share of ``runs`` simulated 95% intervals of the ``all`` row holding ``truth``."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        row = scores_of_run(rng)
        hits += row["ci_low"] <= truth <= row["ci_high"]
    return hits / runs


PLAIN_PPI = {**SCORING, "estimator": "ppi"}
RUNS = 800  # binomial SE of a 0.95 coverage: 0.0077; the band below is 3 SE wide each side


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["ppi", "rogan_gladen"])
def test_pooled_score_covers_the_truth_when_language_pairs_differ(estimator):
    """A system answers 2,000 en and 500 de questions (true scores 0.8 and 0.4); its judge is
    generous on en, stingy on de; the calibration set also holds hi rows, a pair the system was never
    scored on, with a judge far more generous there. The pooled truth is 0.72."""
    scored = {"en": (2000, 0.8, 0.4, 0.05), "de": (500, 0.4, 0.0, 0.4)}  # answers, score, judge's FP, FN rate
    truth = (2000 * 0.8 + 500 * 0.4) / 2500

    def pooled_row(rng):
        calibration = pd.concat([simulated_calibration(rng, lang, 150, score, fp, fn)
                               for lang, (_, score, fp, fn) in scored.items()]
                              + [simulated_calibration(rng, "hi", 150, 0.5, 0.8, 0.0)], ignore_index=True)
        items = {lang: simulated_answers(rng, n, score, fp, fn) for lang, (n, score, fp, fn) in scored.items()}
        scores = model_scores(items, calibration, {"ar": ColumnJudge()}, ["ar"], {**SCORING, "estimator": estimator})
        return scores[scores["lang"] == "all"].iloc[0]

    assert 0.927 <= coverage(pooled_row, truth, RUNS, seed=11) <= 0.973


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["ppi", "rogan_gladen"])
def test_unanswered_questions_count_zero_and_are_not_bias_corrected(estimator):
    """600 of 1,000 questions answered, 70% of those well; a generous judge (half the bad answers
    called good) measured on calibration rows like the answers. The truth is 0.6 x 0.7 = 0.42."""
    answered = np.arange(1000) < 600

    def row(rng):
        calibration = simulated_calibration(rng, "en", 200, 0.7, 0.5, 0.0)
        items = {"en": simulated_answers(rng, 1000, 0.7, 0.5, 0.0, answered)}
        scores = model_scores(items, calibration, {"ar": ColumnJudge()}, ["ar"], {**SCORING, "estimator": estimator})
        return scores[scores["lang"] == "en"].iloc[0]

    assert 0.927 <= coverage(row, 0.42, RUNS, seed=12) <= 0.973
    # No answer at all: the score is 0 exactly, whatever the judge's bias.
    rng = np.random.default_rng(0)
    none = {"en": simulated_answers(rng, 50, 0.7, 0.5, 0.0, np.zeros(50, dtype=bool))}
    scores = model_scores(none, simulated_calibration(rng, "en", 200, 0.7, 0.5, 0.0), {"ar": ColumnJudge()}, ["ar"],
                          {**SCORING, "estimator": estimator})
    assert (scores[["score", "ci_low", "ci_high"]] == 0).all().all()


def balanced_calibration(rng, lang, per_class, false_positive, false_negative):
    """A gold set built as MARS builds it: ``per_class`` positives and as many negatives."""
    Y = np.r_[np.ones(per_class), np.zeros(per_class)]
    return pd.DataFrame({AR: Y, "prediction_ar": simulated_judge(Y, rng, false_positive, false_negative),
                         "doc_lang": lang, "qa_lang": lang})


@pytest.mark.slow
@pytest.mark.parametrize("true_score, false_positive, false_negative", [(0.9, 0.1, 0.3), (0.7, 0.3, 0.1)])
def test_a_balanced_calibration_set_leaves_the_default_score_unbiased(true_score, false_positive, false_negative):
    """A 50/50 gold set, a system 70-90% good and a judge that errs more on one class: PPI assumes
    the calibration rows are sampled from the system's answers and is pulled toward 0.5
    (to pi + (0.5 - pi)(FPR + FNR)); the default confusion-matrix correction covers the truth."""
    def row(estimator):
        def one(rng):
            calibration = balanced_calibration(rng, "en", 100, false_positive, false_negative)
            items = {"en": simulated_answers(rng, 1000, true_score, false_positive, false_negative)}
            return model_scores(items, calibration, {"ar": ColumnJudge()}, ["ar"],
                                {**SCORING, "estimator": estimator}).iloc[0]
        return one

    assert 0.927 <= coverage(row("rogan_gladen"), true_score, RUNS, seed=13) <= 0.973
    assert coverage(row("ppi"), true_score, 200, seed=14) < 0.5


def test_confusion_matrix_interval_inverts_its_test_on_a_grid():
    """Fieller's interval is the set of scores the contrast test does not reject: found here by
    scanning a grid, independently of the quadratic's roots."""
    from polyrag.mars.rogan_gladen import SMOOTHING, rogan_gladen_score

    Y = np.r_[np.ones(60), np.zeros(60)]
    Yhat = np.r_[np.ones(45), np.zeros(15), np.ones(9), np.zeros(51)]  # TPR 0.75, FPR 0.15
    judged = np.r_[np.ones(310), np.zeros(190)]  # q 0.62
    result = rogan_gladen_score(Y, Yhat, judged, alpha=0.05)
    assert result["score"] == pytest.approx((0.62 - 0.15) / (0.75 - 0.15))
    t, f = (45 + SMOOTHING) / (60 + 2 * SMOOTHING), (9 + SMOOTHING) / (60 + 2 * SMOOTHING)
    grid = np.linspace(-0.5, 1.5, 200_001)
    null_q = f + grid * (t - f)  # the judge's positive rate were the score the grid's value
    accepted = grid[(0.62 - 0.15 - grid * 0.6) ** 2 <= norm.ppf(0.975) ** 2 * (
        null_q * (1 - null_q) / 500 + grid**2 * t * (1 - t) / 60 + (1 - grid) ** 2 * f * (1 - f) / 60)]
    assert result["ci_low"] == pytest.approx(accepted.min(), abs=1e-4)
    assert result["ci_high"] == pytest.approx(min(accepted.max(), 1.0), abs=1e-4)
    assert result["ci_high"] - result["score"] != pytest.approx(result["score"] - result["ci_low"], abs=1e-3)  # skewed


@pytest.mark.parametrize("true_score, false_positive, false_negative, answers",
                         [(0.9, 0.1, 0.3, 10), (0.98, 0.1, 0.3, 10), (0.9, 0.3, 0.1, 20), (0.98, 0.3, 0.1, 20)])
def test_a_small_language_key_covers_the_population_share(true_score, false_positive, false_negative, answers):
    """A language key of 10 or 20 answered questions, a system 90-98% good, 100 gold items per
    class: the judge's positive rate q on so few answers is often 1 (ten of ten), where its plain
    variance q(1-q)/N is 0, and that interval covered the population share 0.87-0.91 here. q's
    variance at the null (Wilson's choice) covers near 0.95 (1,000 seeds: +-0.018 at 99%)."""
    from polyrag.mars.rogan_gladen import rogan_gladen_score

    rng = np.random.default_rng([36, 10, answers, round(100 * true_score), round(10 * false_positive)])
    runs, covered = 1000, 0
    Y = np.r_[np.ones(100), np.zeros(100)]
    for _ in range(runs):
        Yhat = simulated_judge(Y, rng, false_positive, false_negative)
        truth = (rng.random(answers) < true_score).astype(float)
        row = rogan_gladen_score(Y, Yhat, simulated_judge(truth, rng, false_positive, false_negative), alpha=0.05)
        covered += row["ci_low"] <= true_score <= row["ci_high"]
    assert 0.932 <= covered / runs <= 0.968


def test_the_workflow_scores_with_the_confusion_matrix_by_default(repo, monkeypatch):
    import yaml

    from polyrag.config.validate import validate_config

    monkeypatch.chdir(repo)
    config = yaml.safe_load((repo / "config.yaml").read_text())
    config["mars"].pop("scoring", None)
    validated = validate_config(config, repo / "schemas" / "config.schema.yaml", source="config.yaml")
    assert validated["mars"]["scoring"] == SCORING


def test_a_judge_at_chance_gets_no_score_and_the_whole_unit_interval():
    rng = np.random.default_rng(5)
    calibration = pd.concat([balanced_calibration(rng, "en", 150, 0.05, 0.1),  # a judge that works
                           balanced_calibration(rng, "de", 150, 0.5, 0.5)], ignore_index=True)  # a coin
    items = {"en": simulated_answers(rng, 800, 0.8, 0.05, 0.1), "de": simulated_answers(rng, 200, 0.8, 0.5, 0.5)}
    scores = model_scores(items, calibration, {"ar": ColumnJudge()}, ["ar"], SCORING).set_index("lang")
    assert scores.loc["en", "estimable"] and 0.7 < scores.loc["en", "score"] < 0.9
    assert not scores.loc["de", "estimable"] and np.isnan(scores.loc["de", "score"])
    assert (scores.loc["de", "ci_low"], scores.loc["de", "ci_high"]) == (0.0, 1.0)
    # Pooled: en's part is known (weight 0.8); de's fifth could be anything from 0 to 0.2.
    en, pooled = scores.loc["en"], scores.loc["all"]
    assert np.isnan(pooled["score"]) and not pooled["estimable"]
    assert pooled["ci_low"] == pytest.approx(max(0.0, 0.8 * en["ci_low"]))
    assert pooled["ci_high"] == pytest.approx(min(1.0, 0.8 * en["ci_high"] + 0.2))


def test_calibration_sets_from_memerag_and_tsv(shared_data, tmp_path):
    sentences = read_memerag(shared_data / "memerag" / "en.jsonl", "en")
    table = calibration_from_memerag(sentences)
    assert len(table) == 250 and table[CR].isna().all() and table[LC].isna().all()
    for query_id in sentences["query_id"].unique()[:20]:
        group = sentences[sentences["query_id"] == query_id]
        row = table[table["Query"] == group["query"].iloc[0]].iloc[0]
        expected = 0.0 if (group["faithful"] == 0).any() else (None if group["faithful"].isna().any() else 1.0)
        assert (row[AF] == expected) or (expected is None and np.isnan(row[AF]))
        assert row[AR] == float((group["relevant"] == 1).all())
    with pytest.raises(DataError, match="no Context_Relevance_Label labels, which metric 'cr' needs"):
        require_labels(table, ["ar", "cr"], "MEMERAG calibration set")
    path = tmp_path / "ref.tsv"
    path.write_text("Query\tDocument\tAnswer\tdoc_lang\tqa_lang\tAnswer_Relevance_Label\n"
                    "q\td\ta\ten\ten\t[[Yes]]\nq\td\ta\ten\ten\tsometimes\n")
    with pytest.raises(ValueError, match=r"ref.tsv: row 3 Answer_Relevance_Label: unknown label value 'sometimes'"):
        calibration_from_tsv(str(path))
    path.write_text("Query\tDocument\tdoc_lang\tqa_lang\nq\td\ten\ten\n")
    with pytest.raises(DataError, match="ref.tsv: calibration TSV has no column 'Answer'"):
        calibration_from_tsv(str(path))


class OracleAnswerJudge:
    """Knows the gold answers: labels an item 1 when its answer is one of them (a real lookup
    classifier, perfect for answer relevance on these items), so PPI must return the truth."""

    def __init__(self, answers):
        self.answers = dict(answers)

    def predict_proba(self, table):
        return np.array([float(self.answers.get(q) == a) for q, a in zip(table["Query"], table["Answer"])])


def test_mock_systems_rank_perfectly_with_a_perfect_judge(gold_en_de):
    gold = {"en-en": gold_en_de["en-en"]}
    judge = OracleAnswerJudge(zip(gold["en-en"]["Query"], gold["en-en"]["Answer"]))
    calibration, _ = with_negatives(gold["en-en"][gold["en-en"]["role"] == "calibration"], rng_for(1, "r"))
    calibration["prediction_ar"] = judge.predict_proba(calibration)
    settings = {"accuracies": [0.5, 0.55, 0.6, 0.65, 0.7], "items": 100}
    summary, systems = meta_evaluate(gold, {"ar": judge}, calibration, ["ar"], settings,
                                     SCORING, seed=0)
    assert systems["true_score"].tolist() == settings["accuracies"]
    assert np.allclose(systems["score"], systems["true_score"]) and systems["covered"].all()
    row = summary.iloc[0]
    assert row["kendall_tau_corrected"] == pytest.approx(1.0) and row["judge_accuracy"] == 1.0 and row["items_per_system"] == 100


@pytest.mark.slow
def test_meta_evaluation_with_trained_judges(gold_en_de, trained_judges):
    _, judges, calibration, _, _ = trained_judges
    settings = {"accuracies": [0.5, 0.55, 0.6, 0.65, 0.7], "items": 150}
    summary, systems = meta_evaluate({"de-de": gold_en_de["de-de"]}, judges, calibration, ["cr", "lc"], settings,
                                     SCORING, seed=0)
    assert len(summary) == 2 and len(systems) == 10
    for row in summary.itertuples():
        mine = systems[systems["metric"] == row.metric]
        # The confusion-matrix correction with one calibration set per pair maps every system's raw
        # rate through (q - FPR) / (TPR - FPR), the rates recomputed from the calibration rows of de-de.
        ref = labelled(calibration[(calibration["doc_lang"] == "de") & (calibration["qa_lang"] == "de")], row.metric)
        said_yes = ref[f"prediction_{row.metric}"] >= 0.5
        truth = ref[LABEL_COLUMNS[row.metric]] == 1
        tpr, fpr = said_yes[truth].mean(), said_yes[~truth].mean()
        assert (row.judge_true_positive_rate, row.judge_false_positive_rate) == pytest.approx((tpr, fpr))
        assert np.allclose(mine["score_unclipped"], (mine["judge_positive_rate"] - fpr) / (tpr - fpr))
        assert row.kendall_tau_corrected == pytest.approx(kendalltau(mine["true_score"], mine["score"]).statistic)
        assert row.kendall_tau_corrected == pytest.approx(row.kendall_tau_raw)  # an increasing map keeps the order
        covered = (mine["ci_low"] <= mine["true_score"]) & (mine["true_score"] <= mine["ci_high"])
        assert row.ci_coverage == covered.mean()
    # Five systems 5 points apart on 150 items: the CR judge (about 0.9 accurate) orders them all.
    tau = summary.set_index("metric")["kendall_tau_corrected"]
    assert tau["cr"] >= 0.8, summary
    assert (summary["judge_balanced_accuracy"] > 0.65).all()  # no-skill: 0.5


@pytest.mark.slow
def test_system_scores_from_answers(trained_judges):
    _, judges, calibration, _, _ = trained_judges
    record = {"query_id": "q1", "query": "Where is the Eiffel Tower?",
              "passages": [{"docid": "a#0", "text": "The Eiffel Tower is in Paris."},
                           {"docid": "b#0", "text": "Bananas are yellow."}]}
    answers = [{"answer": "It is in Paris [a#0].", "cited_docids": ["a#0"]}, {"answer": None, "cited_docids": []}]
    items = system_items([record, {**record, "query_id": "q2"}], answers)
    assert items["Document"].tolist() == ["The Eiffel Tower is in Paris.",
                                          "The Eiffel Tower is in Paris.\n\nBananas are yellow."]
    assert items["Answer"].iloc[0] == "It is in Paris." and items["Answer"].isna().iloc[1]
    # PPI here: its formula is one subtraction (the confusion-matrix one is checked above).
    scores = model_scores({"en": items}, calibration, judges, ["cr", "ar", "lc"], PLAIN_PPI)
    assert scores["lang"].tolist() == ["en"] * 3 + ["all"] * 3
    assert (scores["n_missing_answers"] == 1).all() and (scores["n_answers"] == 2).all()
    # AR: PPI on the one answer, halved (the unanswered question counts 0, uncorrected).
    ref = labelled(calibration[(calibration["doc_lang"] == "en") & (calibration["qa_lang"] == "en")], "ar")
    bias = ((ref["prediction_ar"] >= 0.5) - ref[AR]).mean()
    judged = float(judges["ar"].predict_proba(items.iloc[:1])[0] >= 0.5)
    ar = scores[(scores["metric"] == "ar") & (scores["lang"] == "en")].iloc[0]
    assert ar["score_unclipped"] == pytest.approx(0.5 * (judged - bias))
    assert ar["judge_positive_rate"] == 0.5 * judged
    # One language: the pooled row is that language's.
    pooled = scores[scores["lang"] == "all"].reset_index(drop=True)
    one = scores[scores["lang"] == "en"].reset_index(drop=True)
    assert np.allclose(pooled[["score_unclipped", "ci_low", "ci_high"]], one[["score_unclipped", "ci_low", "ci_high"]],
                       equal_nan=True)


@pytest.mark.slow
def test_fine_tuned_judge_through_the_judge_interface(tmp_path):
    """The transformers backend of train_judge/load_judge on a tiny random model: the question is
    the first text, the metric's other inputs the second (code path and shapes, not quality)."""
    import torch
    from safetensors.torch import load_file

    from polyrag.mars.encoder_judge import load_transformers_judge
    from tests.helpers.tiny_models import sequence_classifier

    base = sequence_classifier(tmp_path / "base", {0: "no", 1: "yes"})
    rows = pd.DataFrame({
        "Query": ["Where does the Niger River flow ?"] * 8,
        "Document": ["The Niger River flows into the Gulf of Guinea through a large delta .",
                     "Mozart was born in Salzburg in 1756 ."] * 4,
        "Answer": ["Gulf of Guinea"] * 8, "doc_lang": "en", "qa_lang": "en",
        CR: [1.0, 0.0] * 4, AR: None, AF: None, LC: None,
    })
    settings = {"backend": "transformers", "model": str(base), "epochs": 2, "learning_rate": 1e-3, "batch_size": 4,
                "patience": 1, "max_length": 64, "device": "cpu", "lora": None}
    summary = train_judge("cr", rows, rows, settings, tmp_path / "cr", seed=0)
    assert summary["backend"] == "transformers" and 1 <= summary["epochs_run"] <= 2
    # The weights file is the whole classifier (every tensor of the base, same shapes), trained.
    trained, initial = load_file(tmp_path / "cr" / "model.safetensors"), load_file(base / "model.safetensors")
    assert {name: tensor.shape for name, tensor in trained.items()} == {name: tensor.shape for name, tensor in initial.items()}
    assert not torch.equal(trained["classifier.weight"], initial["classifier.weight"])
    probabilities = load_judge("cr", tmp_path / "cr", settings).predict_proba(rows)
    # The judge interface hands the classifier (question, passage) pairs, nothing else.
    pairs = list(zip(rows["Query"], rows["Document"]))
    assert np.allclose(probabilities, load_transformers_judge(tmp_path / "cr", settings).predict_proba(pairs))
    assert probabilities[0] != probabilities[1]  # the passage reaches the model


def test_reference_rows_never_ask_an_evaluated_question():
    from polyrag.mars.calibration import without_evaluated_questions

    table, _ = with_negatives(positives(4), rng_for(0, "r"))
    kept = without_evaluated_questions(table, {"question 1?", "question 3?"}, "test")
    assert set(kept["Query"]) == {"question 0?", "question 2?"} and len(kept) == len(table) // 2


def test_ppi_estimates_stay_in_the_unit_interval():
    # The judge says yes to every answer but never on the calibration set, where 40% are yes: the
    # correction adds 0.4 to a raw rate of 1.
    Y = np.r_[np.ones(40), np.zeros(60)]
    stingy = np.zeros(100)  # never says yes on the calibration set: bias -0.4
    result = ppi_score(Y, stingy, np.ones(500), alpha=0.05, power_tuning=False)
    assert result["score_unclipped"] == pytest.approx(1.4)
    assert result["score"] == 1.0 and result["ci_high"] == 1.0 and result["ci_low"] <= 1.0
