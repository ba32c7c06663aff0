"""``languages:`` of a model or a system: validated against the run's languages, and the per-model
language sets (polyrag.config.queries.model_languages) that every stage plans from."""

from __future__ import annotations

import copy

import pytest
import yaml

from polyrag.config.queries import (answering_models, judge_pairs, language_contestants, model_languages,
                                    pair_languages, partial_models)
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError

@pytest.fixture
def demo(repo, monkeypatch):
    monkeypatch.chdir(repo)
    config = yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text())  # its judges and panel too
    return config


def check(config, repo):
    return validate_config(config, repo / "schemas" / "config.schema.yaml", source="my.yaml")


def test_a_model_answers_every_language_unless_it_names_some(demo, repo):
    demo["models"]["mock-20"]["languages"] = ["zh", "en"]  # any order: the run's order is kept
    written = copy.deepcopy(demo["models"]["mock-20"]["languages"])
    config = check(demo, repo)
    assert config["languages"] == ["en", "de", "hi", "zh"]
    assert model_languages(config, "mock-20") == ["en", "zh"]
    assert model_languages(config, "mock-50") == ["en", "de", "hi", "zh"]
    assert config["models"]["mock-20"]["languages"] == written  # the config stays as written
    assert partial_models(config) == {"mock-20": ["en", "zh"]}
    assert "mock-20" in answering_models(config, "zh") and "mock-20" not in answering_models(config, "de")
    assert pair_languages(config, "mock-20", "mock-50") == ["en", "zh"]


def test_pairs_in_a_language_are_those_of_models_that_both_answer_it(demo, repo):
    demo["models"]["mock-50"]["languages"] = ["en"]
    demo["models"]["mock-perfect"]["languages"] = ["de"]
    config = check(demo, repo)
    every = judge_pairs(config, "reference")
    assert ("mock-50", "mock-perfect") in every  # some language for each... but they never meet:
    assert pair_languages(config, "mock-50", "mock-perfect") == []
    for lang in config["languages"]:
        pairs = judge_pairs(config, "reference", lang)
        assert pairs == [(a, b) for a, b in every if lang in model_languages(config, a)
                         and lang in model_languages(config, b)]
        assert ("mock-50", "mock-perfect") not in pairs
        contestants = language_contestants(config, "reference", lang)
        assert ("mock-50" in contestants) == (lang == "en") and ("mock-perfect" in contestants) == (lang == "de")
    # a panel meets in the pairs every member judges there
    assert judge_pairs(config, "panel", "de") == sorted(set(judge_pairs(config, "gemma-judge", "de"))
                                                        & set(judge_pairs(config, "cite-check", "de")))


def test_baselines_and_retrieved_systems_take_their_generators_languages_unless_they_name_their_own(demo, repo):
    demo["models"]["gemma-270m"]["languages"] = ["en", "de"]
    demo["systems"]["mock-bm25"]["languages"] = ["hi"]
    config = check(demo, repo)
    assert model_languages(config, "gemma-270m-oracle") == ["en", "de"]  # its baseline
    assert model_languages(config, "gemma-270m-bm25") == ["en", "de"]
    assert model_languages(config, "mock-bm25") == ["hi"]
    assert model_languages(config, "mock-e5") == model_languages(config, "mock-recall-83") == ["en", "de", "hi", "zh"]


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c: c["models"]["mock-20"].update(languages=["en", "fr"]),
     "my.yaml: models.mock-20.languages: 'fr' is not among the run's languages (known: en, de, hi, zh); name a "
     "subset of languages:, or drop the key to answer every one"),
    (lambda c: c["models"]["mock-20"].update(languages=["EN", "xx"]),
     "my.yaml: models.mock-20.languages: 'EN', 'xx' are not among the run's languages (known: en, de, hi, zh)"),
    (lambda c: c["systems"]["mock-bm25"].update(languages=["ja"]),
     "my.yaml: systems.mock-bm25.languages: 'ja' is not among the run's languages (known: en, de, hi, zh)"),
    (lambda c: c["models"]["mock-20"].update(languages=[]), "models.mock-20.languages"),
    (lambda c: c["models"]["mock-20"].update(languages=["en", "en"]), "models.mock-20.languages"),
    (lambda c: c["models"]["mock-20"].update(languages="en"), "models.mock-20.languages"),
    (lambda c: c["judges"]["gemma-judge"].update(languages=["en"]),
     "my.yaml: judges.gemma-judge.languages: a judge judges every language of the run"),
])
def test_languages_outside_the_run_are_refused_naming_the_key(demo, repo, edit, expected):
    edit(demo)
    with pytest.raises(ConfigError) as error:
        check(demo, repo)
    assert expected in str(error.value)
