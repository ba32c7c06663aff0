# Retrieval over a corpus (docs/retrieval.md): each corpus is read and chunked per language (a
# pooled corpus joins several), each retriever indexes it once per corpus language (BM25; dense in
# shards gathered into one faiss index), each job sized from the corpus's size where the config
# knows it, retrieves for every question, a reranker reorders a run's top passages, and each system's
# top_k passages become its passage file, which generation reads as any passage file. Runs are
# scored against the questions' relevance labels (retrieval/leaderboard.csv).


include: "inputs/retrieval.smk"


wildcard_constraints:
    corpus=alternatives(CORPORA),
    corpus_lang=r"[A-Za-z]+(-[A-Za-z]+)?",
    retriever=alternatives(RETRIEVERS),
    reranker=alternatives(RERANKERS),
    run=alternatives(RUNS),
    system=alternatives(SYSTEMS),
    shard=r"\d+",


# A pooled corpus's file is its languages' corpora joined (rule pool_corpus), not read from a source.
ruleorder: pool_corpus > retrieval_corpus


rule retrieval_corpus:
    input:
        local=corpus_files,
    output:
        CORPUS,
    params:
        corpus=lambda wildcards: RETRIEVAL["corpora"][wildcards.corpus],
        demo=DEMO_CORPUS_DIRS,
        cache_dir=config["cache_dir"],
    log:
        log_path("retrieval/corpora/{corpus}/{corpus_lang}.log"),
    benchmark:
        benchmark_path("retrieval/corpora/{corpus}/{corpus_lang}.tsv")
    resources:
        mem_mb=corpus_resource("mem_mb"),
        runtime=corpus_resource("runtime"),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/retrieval_corpus.py"


# Several languages' corpora as one (a pooled corpus: docids prefixed with their language, en:123).
rule pool_corpus:
    input:
        pooled_corpora,
    output:
        POOLED_CORPUS,
    params:
        languages=lambda wildcards: RETRIEVAL["corpora"][wildcards.corpus]["languages"],
    log:
        log_path("retrieval/corpora/{corpus}/pooled.log"),
    benchmark:
        benchmark_path("retrieval/corpora/{corpus}/pooled.tsv")
    resources:
        mem_mb=corpus_resource("mem_mb"),
        runtime=corpus_resource("runtime"),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/pool_corpus.py"


# The index in one job; for a corpus that needs more (its size known), the list of its shards.
rule bm25_index:
    input:
        bm25_index_input,
    output:
        directory(BM25_INDEX),
    wildcard_constraints:
        retriever=alternatives(BM25_RETRIEVERS),
    params:
        retriever=retriever_entry,
    log:
        log_path("retrieval/indexes/{retriever}/{corpus_lang}.log"),
    benchmark:
        benchmark_path("retrieval/indexes/{retriever}/{corpus_lang}.tsv")
    threads: 1
    resources:
        gpu=index_resource("gpu", "bm25"),
        mem_mb=index_resource("mem_mb", "bm25"),
        runtime=index_resource("runtime", "bm25"),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/bm25_index.py"


# A sharded BM25 index: the corpus's vocabulary and document frequencies first (one streaming pass),
# then each shard scored with them.
rule bm25_statistics:
    input:
        retriever_corpus,
    output:
        BM25_STATISTICS,
    wildcard_constraints:
        retriever=alternatives(BM25_RETRIEVERS),
    params:
        retriever=retriever_entry,
    log:
        log_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25_statistics.log"),
    benchmark:
        benchmark_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25_statistics.tsv")
    threads: 1
    resources:
        mem_mb=index_resource("mem_mb", "bm25_statistics"),
        runtime=index_resource("runtime", "bm25_statistics"),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/bm25_statistics.py"


rule bm25_shard:
    input:
        corpus=retriever_corpus,
        statistics=BM25_STATISTICS,
    output:
        directory(BM25_SHARD),
    wildcard_constraints:
        retriever=alternatives(BM25_RETRIEVERS),
    params:
        retriever=retriever_entry,
    log:
        log_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25_shard_{shard}.log"),
    benchmark:
        benchmark_path("retrieval/indexes/{retriever}/{corpus_lang}/bm25_shard_{shard}.tsv")
    threads: 1
    resources:
        mem_mb=index_resource("mem_mb", "bm25_shard"),
        runtime=index_resource("runtime", "bm25_shard"),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/bm25_shard.py"


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
        log_path("retrieval/indexes/{retriever}/{corpus_lang}/shard_{shard}.log"),
    benchmark:
        benchmark_path("retrieval/indexes/{retriever}/{corpus_lang}/shard_{shard}.tsv")
    threads: index_resource("threads", "encode")
    resources:
        gpu=index_resource("gpu", "encode"),
        mem_mb=index_resource("mem_mb", "encode"),
        runtime=index_resource("runtime", "encode"),
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
        seed=config["seed"],
    log:
        log_path("retrieval/indexes/{retriever}/{corpus_lang}/gather.log"),
    benchmark:
        benchmark_path("retrieval/indexes/{retriever}/{corpus_lang}/gather.tsv")
    threads: index_resource("threads", "gather")
    resources:
        gpu=index_resource("gpu", "gather"),
        mem_mb=index_resource("mem_mb", "gather"),
        runtime=index_resource("runtime", "gather"),
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
        gpu=index_resource("gpu", "retrieve"),
        mem_mb=index_resource("mem_mb", "retrieve"),
        runtime=index_resource("runtime", "retrieve"),
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
        corpus_lang=lambda wildcards: corpus_language(config, system_parts(wildcards)["retriever"], wildcards.lang),
        parallel_docids=system_parallel_docids,
    localrule: True
    log:
        log_path("retrieval/passages/{system}/{lang}.log"),
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
    params:
        corpus_lang=lambda wildcards: corpus_language(config, RUN_RETRIEVERS[wildcards.run], wildcards.lang),
    log:
        log_path("retrieval/metrics/{run}/{lang}.log"),
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
        report(results_path("retrieval/leaderboard.csv"), caption="../report/retrieval_leaderboard.rst",
               category=REPORT["downloads"]),
        full_precision=results_path("retrieval/leaderboard.parquet"),  # the CSV's twin (csv_tables.write_table)
    params:
        runs=[run for run in RUNS for lang in LANGUAGES],  # the run of each metrics file
        intervals=RETRIEVAL and RETRIEVAL["intervals"],
        seed=config["seed"],
    localrule: True
    log:
        log_path("retrieval/leaderboard.log"),
    benchmark:
        benchmark_path("retrieval/leaderboard.tsv")
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/retrieval_leaderboard.py"


# The report offers CSVs only as downloads; this page shows the retrieval leaderboard in the report itself.
rule retrieval_leaderboard_table:
    input:
        rules.retrieval_leaderboard.output[0],
    output:
        report(results_path("retrieval/leaderboard.html"), caption="../report/retrieval_leaderboard.rst",
               category=REPORT["results"]),
    localrule: True
    log:
        log_path("retrieval/leaderboard_table.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/retrieval_leaderboard_table.py"
