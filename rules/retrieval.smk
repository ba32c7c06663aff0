# Retrieval over a corpus (docs/retrieval.md): each corpus is read and chunked per language, each
# retriever indexes it once per corpus language (BM25; dense in shards gathered into one faiss
# index), retrieves for every question, a reranker reorders a run's top passages, and each system's
# top_k passages become its passage file, which generation reads as any passage file. Runs are
# scored against the questions' relevance labels (results/retrieval/leaderboard.csv).


include: "inputs/retrieval.smk"


wildcard_constraints:
    corpus=alternatives(CORPORA),
    corpus_lang=r"[A-Za-z]+(-[A-Za-z]+)?",
    retriever=alternatives(RETRIEVERS),
    reranker=alternatives(RERANKERS),
    run=alternatives(RUNS),
    system=alternatives(SYSTEMS),
    shard=r"\d+",


rule retrieval_corpus:
    output:
        CORPUS,
    params:
        corpus=lambda wildcards: RETRIEVAL["corpora"][wildcards.corpus],
        demo=DEMO_CORPUS_DIRS,
    log:
        "logs/retrieval/corpora/{corpus}/{corpus_lang}.log",
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/retrieval_corpus.py"


rule bm25_index:
    input:
        retriever_corpus,
    output:
        directory(BM25_INDEX),
    wildcard_constraints:
        retriever=alternatives(BM25_RETRIEVERS),
    params:
        retriever=retriever_entry,
    log:
        "logs/retrieval/indexes/{retriever}/{corpus_lang}.log",
    benchmark:
        "results/benchmarks/retrieval/indexes/{retriever}/{corpus_lang}.tsv"
    threads: 1
    resources:
        gpu=resource("gpu", retriever_entry, retrieval_resources),
        mem_mb=resource("mem_mb", retriever_entry, retrieval_resources),
        runtime=resource("runtime", retriever_entry, retrieval_resources),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/bm25_index.py"


# One job per shard of the corpus (a GPU job each on a cluster for a sentence-transformers encoder).
rule encode_dense_shard:
    input:
        retriever_corpus,
    output:
        vectors=DENSE_SHARD,
        docids=DENSE_SHARD.replace(".npy", ".json"),
    wildcard_constraints:
        retriever=alternatives(DENSE_RETRIEVERS),
    params:
        retriever=retriever_entry,
    log:
        "logs/retrieval/indexes/{retriever}/{corpus_lang}/shard_{shard}.log",
    benchmark:
        "results/benchmarks/retrieval/indexes/{retriever}/{corpus_lang}/shard_{shard}.tsv"
    threads: resource("threads", retriever_entry, retrieval_resources)
    resources:
        gpu=resource("gpu", retriever_entry, retrieval_resources),
        mem_mb=resource("mem_mb", retriever_entry, retrieval_resources),
        runtime=resource("runtime", retriever_entry, retrieval_resources),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/encode_dense_shard.py"


rule dense_index:
    input:
        dense_shards,
    output:
        directory(DENSE_INDEX),
    wildcard_constraints:
        retriever=alternatives(DENSE_RETRIEVERS),
    params:
        retriever=retriever_entry,
    log:
        "logs/retrieval/indexes/{retriever}/{corpus_lang}/gather.log",
    benchmark:
        "results/benchmarks/retrieval/indexes/{retriever}/{corpus_lang}/gather.tsv"
    resources:
        mem_mb=resource("mem_mb", retriever_entry, retrieval_resources),
        runtime=60,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/dense_index.py"


rule retrieve:
    input:
        index=retriever_index,
        questions=QUESTIONS,
    output:
        run=run_path(RUN),
        trec=run_path(RUN_TREC),
    params:
        retriever=retriever_entry,
        depth=RETRIEVAL and RETRIEVAL["depth"],
    log:
        run_path(RUN_LOG),
    benchmark:
        run_path(RUN_BENCHMARK)
    threads: 1
    resources:
        mem_mb=resource("mem_mb", retriever_entry, retrieval_resources),
        runtime=60,
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/retrieve.py"


rule rerank:
    input:
        run=run_path(RUN),
        corpus=first_stage_corpus,
        questions=QUESTIONS,
    output:
        run=run_path(RUN, reranker="{reranker}"),
        trec=run_path(RUN_TREC, reranker="{reranker}"),
    params:
        reranker=reranker_entry,
    log:
        run_path(RUN_LOG, reranker="{reranker}"),
    benchmark:
        run_path(RUN_BENCHMARK, reranker="{reranker}")
    threads: resource("threads", reranker_entry, retrieval_resources)
    resources:
        gpu=resource("gpu", reranker_entry, retrieval_resources),
        mem_mb=resource("mem_mb", reranker_entry, retrieval_resources),
        runtime=resource("runtime", reranker_entry, retrieval_resources),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/rerank.py"


# A system's top_k passages with their text: the passage file its generation job reads.
rule system_passages:
    input:
        run=system_run,
        corpus=system_corpus,
        questions=QUESTIONS,
    output:
        SYSTEM_PASSAGES,
    params:
        system=system_parts,
    localrule: True
    log:
        "logs/retrieval/passages/{system}/{lang}.log",
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/system_passages.py"


rule retrieval_metrics:
    input:
        run=RUN,
        questions=QUESTIONS,
    output:
        RUN_METRICS,
    log:
        "logs/retrieval/metrics/{run}/{lang}.log",
    localrule: True
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/retrieval_metrics.py"


rule retrieval_leaderboard:
    input:
        expand(RUN_METRICS, run=RUNS, lang=LANGUAGES),
    output:
        report("results/retrieval/leaderboard.csv", caption="../report/retrieval_leaderboard.rst", category="Retrieval"),
    params:
        runs=[run for run in RUNS for lang in LANGUAGES],  # the run of each metrics file
        intervals=RETRIEVAL and RETRIEVAL["intervals"],
        seed=config["seed"],
    localrule: True
    log:
        "logs/retrieval/leaderboard.log",
    benchmark:
        "results/benchmarks/retrieval/leaderboard.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/retrieval_leaderboard.py"
