# The input functions and constants of rules/retrieval.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.data_files import parallel_docids
from polyrag.config.params import relative_path
from polyrag.config import retrieval as retrieval_paths
from polyrag.config.queries import run_name
from polyrag.config.retrieval import (DEMO_CORPUS_FOLDERS, corpus_job_resources,
                                      corpus_language, corpus_source_files, index_job_resources,
                                      retrieval_resources, retriever_for_language, run_path, system_runs)
from polyrag.retrieval.corpus import POOLED


RETRIEVAL = config["retrieval"]
CORPORA = list(RETRIEVAL["corpora"]) if RETRIEVAL else []
RETRIEVERS = RETRIEVAL["retrievers"] if RETRIEVAL else {}
RERANKERS = RETRIEVAL["rerankers"] if RETRIEVAL else {}
SYSTEMS = config["systems"]
BM25_RETRIEVERS = [name for name, entry in RETRIEVERS.items() if entry["kind"] == "bm25"]
DENSE_RETRIEVERS = [name for name, entry in RETRIEVERS.items() if entry["kind"] == "dense"]
# A run: a retriever's, or a retriever's reranked (named by run_name); every retriever's runs are
# scored, reranked runs where a system reads them.
RUN_RETRIEVERS = {**{name: name for name in RETRIEVERS}, **{run_name(*run): run[0] for run in system_runs(config)}}
RUNS = list(RUN_RETRIEVERS)
# The corpus of one language (any language a retriever reads, which a cross-lingual one may take
# outside `languages`), chunked; one index per retriever and corpus language.
CORPUS = results_path("retrieval/corpora/{corpus}/{corpus_lang}.parquet")
POOLED_CORPUS = CORPUS.replace("{corpus_lang}", POOLED)
BM25_INDEX = results_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25")
# A corpus too large for one BM25 job: its statistics, then its shards (docs/retrieval.md#bm25-at-scale).
BM25_STATISTICS = results_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25_statistics.parquet")
BM25_SHARD = results_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25_shards/{shard}")
DENSE_SHARD = results_path("retrieval/indexes/{retriever}/{corpus_lang}/shards/{shard}.npy")
DENSE_INDEX = results_path("retrieval/indexes/{retriever}/{corpus_lang}/dense")
RUN_METRICS = results_path("retrieval/metrics/{run}/{lang}.parquet")
# A system's passage file and a run's files (polyrag.config.retrieval), under this config's results folder.
SYSTEM_PASSAGES = results_path(retrieval_paths.SYSTEM_PASSAGES)
RUN = results_path(retrieval_paths.RUN)
RUN_TREC = results_path(retrieval_paths.RUN_TREC)
RUN_LOG = log_path(retrieval_paths.RUN_LOG)
RUN_BENCHMARK = benchmark_path(retrieval_paths.RUN_BENCHMARK)
# The demo corpus: the shipped demo questions' passages and XQuAD paragraphs, beside the Snakefile.
# Relative to the working directory where the workflow's folder is it (a checkout run in place), so
# that a copy of the folder plans nothing new.
DEMO_CORPUS_DIRS = {key: relative_path(str(Path(workflow.basedir) / folder), Path.cwd())
                    for key, folder in DEMO_CORPUS_FOLDERS.items()}


def corpus_files(wildcards):
    """The local files a corpus is read from (the user's corpus file, the demo's): the inputs of its job."""
    return corpus_source_files(config, wildcards.corpus, wildcards.corpus_lang, DEMO_CORPUS_DIRS)


def retriever_entry(wildcards):
    """A retriever's entry; an index job's as its corpus language runs it (its shards there)."""
    corpus_lang = getattr(wildcards, "corpus_lang", None)
    if corpus_lang is None:
        return RETRIEVERS[wildcards.retriever]
    return retriever_for_language(config, wildcards.retriever, corpus_lang)


def reranker_entry(wildcards):
    return RERANKERS[wildcards.reranker]


def pooled_corpora(wildcards):
    """The corpora of a pooled corpus's languages, in its order."""
    return [CORPUS.format(corpus=wildcards.corpus, corpus_lang=lang) for lang in RETRIEVAL["corpora"][wildcards.corpus]["languages"]]


def index_resource(name, job):
    """One cluster resource of a retriever's index job (bm25, encode, gather, retrieve), sized from its
    corpus (config.retrieval.index_job_resources); a retrieval job's corpus language is its questions'."""

    def get(wildcards, attempt):
        corpus_lang = getattr(wildcards, "corpus_lang", None) or corpus_language(config, wildcards.retriever, wildcards.lang)
        return index_job_resources(config, wildcards.retriever, corpus_lang, job, attempt)[name]

    return get


def corpus_resource(name):
    return lambda wildcards, attempt: corpus_job_resources(
        config, wildcards.corpus, getattr(wildcards, "corpus_lang", POOLED), attempt
    )[name]


def retriever_corpus(wildcards):
    """The corpus file a retriever indexes in the index's corpus language."""
    return CORPUS.format(corpus=RETRIEVERS[wildcards.retriever]["corpus"], corpus_lang=wildcards.corpus_lang)


def bm25_index_input(wildcards):
    """What a BM25 index job reads: its corpus, or its shards where the corpus needs more than one job."""
    shards = retriever_entry(wildcards)["shards"]
    if shards == 1:
        return retriever_corpus(wildcards)
    return [BM25_SHARD.format(retriever=wildcards.retriever, corpus_lang=wildcards.corpus_lang, shard=shard)
            for shard in range(shards)]


def dense_shards(wildcards):
    shards = retriever_entry(wildcards)["shards"]
    return [DENSE_SHARD.format(retriever=wildcards.retriever, corpus_lang=wildcards.corpus_lang, shard=shard)
            for shard in range(shards)]


def retriever_index(wildcards):
    """The index questions of ``lang`` search with this retriever: of its corpus in the question's
    language, or in the retriever's corpus_language (a cross-lingual datastore)."""
    pattern = BM25_INDEX if RETRIEVERS[wildcards.retriever]["kind"] == "bm25" else DENSE_INDEX
    return pattern.format(retriever=wildcards.retriever, corpus_lang=corpus_language(config, wildcards.retriever, wildcards.lang))


def question_corpus(retriever, lang):
    """The corpus questions of ``lang`` retrieve from with ``retriever`` (its corpus_language's, else theirs)."""
    return CORPUS.format(corpus=RETRIEVERS[retriever]["corpus"], corpus_lang=corpus_language(config, retriever, lang))


def first_stage_corpus(wildcards):
    """The corpus of a reranked run's first stage: the passages the reranker reads."""
    return question_corpus(wildcards.retriever, wildcards.lang)


def system_parts(wildcards):
    return config["models"][wildcards.system]["system"]


def system_run(wildcards):
    parts = system_parts(wildcards)
    return RUN.format(run=run_name(parts["retriever"], parts["reranker"]), lang=wildcards.lang)


def system_parallel_docids(wildcards):
    """Whether the system's corpus is the question data's parallel source: its passages are marked
    parallel_docid (polyrag.config.data_files.parallel_docids)."""
    return parallel_docids(config, system_parts(wildcards)["retriever"], Path(workflow.basedir))


def system_corpus(wildcards):
    return question_corpus(system_parts(wildcards)["retriever"], wildcards.lang)
