"""Issue "Done when" checks at full demo scale, in process (no Snakemake, no Gemma): the mock
systems of config.yaml, on every demo language, order as their error rates in their features and
in the Bradley-Terry ranks of the offline reference judge."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
import yaml

from polyrag.arena.bradley_terry import bradley_terry
from polyrag.config.queries import generation_settings, wrong_language_source
from polyrag.config.validate import validate_config
from polyrag.data.select import select_questions
from polyrag.features.deterministic import deterministic_features
from polyrag.features.embedding import EmbeddingStore
from polyrag.generate.answers import foreign_answers, generate_answers
from polyrag.judge.play import arena_items, judge_with_reference
from polyrag.llm import open_llm
from polyrag.seeds import rng_for
from tests.helpers.answers import with_detected_languages

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(repo, tmp_path_factory):
    config = yaml.safe_load((repo / "config.yaml").read_text())
    validate_config(config, repo / "schemas" / "config.schema.yaml")
    config["data"]["dir"] = str(repo / "resources" / "demo")
    # the error-rate mocks (the grounded ones' truth is the passages they read: workflow/test_passage_order.py)
    mocks = {name: entry for name, entry in config["models"].items() if entry["backend"] == "mock" and not entry.get("grounded")}
    records = {lang: select_questions(config, lang) for lang in config["languages"]}
    cache = tmp_path_factory.mktemp("cache")
    answers = {}
    for name, entry in mocks.items():
        settings = generation_settings(config, name)
        llm = open_llm(name, entry, cache_dir=cache, seed=config["seed"])
        for lang, questions in records.items():
            other = wrong_language_source(entry, lang, config["languages"])
            foreign = foreign_answers(questions, records[other], config["seed"], name, lang)
            answers[name, lang] = with_detected_languages(questions, generate_answers(llm, questions, settings, foreign))
    return config, mocks, records, answers


def test_mock_features_order_as_their_error_rates(demo):
    config, mocks, records, answers = demo
    by_error = sorted(mocks, key=lambda name: mocks[name]["error_rate"])
    features = {(name, lang): pd.DataFrame(deterministic_features(records[lang], answers[name, lang]))
                for name in by_error for lang in config["languages"]}
    for lang in config["languages"]:
        means = {name: features[name, lang].mean(numeric_only=True) for name in by_error}
        for feature in ("citation_recall@10", "target_language", "answer_bleu"):
            # rounded: two mocks with the same share of wrong-language answers tie up to float noise
            values = [round(means[name][feature], 9) for name in by_error]
            assert values == sorted(values, reverse=True), (lang, feature, values)
    # Strictly over all languages and the three features: each corruption lowers at least one of them
    # (a wrong citation the recall, a wrong language the target language, another passage's answer the
    # BLEU), so every error rate costs their sum. One feature alone can tie: mock-20's one corrupted
    # answer per language may change no citation.
    pooled = [pd.concat([features[name, lang] for lang in config["languages"]])
              [["citation_recall@10", "target_language", "answer_bleu"]].mean().sum() for name in by_error]
    assert pooled == sorted(pooled, reverse=True) and len(set(pooled)) == len(pooled), pooled


def test_mock_systems_rank_in_the_order_of_their_error_rates_in_every_language(demo):
    config, mocks, records, answers = demo
    names = sorted(mocks)
    judge = config["judges"]["reference"]
    store = EmbeddingStore()  # each text embedded once, as in the workflow (an answer is in three pairs)
    for lang in config["languages"]:
        games = pd.DataFrame([row for a, b in itertools.combinations(names, 2)
                              for row in judge_with_reference(arena_items(records[lang], answers[a, lang],
                                                                          answers[b, lang]), a, b, judge, store)])
        table, _, _ = bradley_terry(games, names, config["arena"]["regularization"], config["arena"]["bootstrap"],
                                    rng_for(config["seed"], "bootstrap", "reference", lang))
        ranked = table.sort_values("rank")["model"].tolist()
        assert ranked == sorted(names, key=lambda name: mocks[name]["error_rate"]), (lang, table)
