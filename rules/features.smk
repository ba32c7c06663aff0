# Answer features: results/features/{model}/{lang}.parquet, one column per feature.
# Each feature group is its own rule (and file) so that model-based groups can run on GPU
# nodes and be cached on their own; merge_features joins the groups that are configured.
# Every job covers one model's answers in every language, so a feature model (NLI, reranker,
# LLM judge) is loaded once per answering model, and a cluster gets one job per model and group.


rule deterministic_features:
    input:
        questions=expand("results/data/{lang}.parquet", lang=LANGUAGES),
        answers=expand("results/answers/{{model}}/{lang}.parquet", lang=LANGUAGES),
    output:
        tables=expand("results/features/{{model}}/{lang}/deterministic.parquet", lang=LANGUAGES),
        # each answer's detected language in every language, in one file: what a judge that scores
        # languages reads (two inputs per pair job rather than two per language)
        languages="results/features/{model}/answer_languages.parquet",
    params:
        languages=LANGUAGES,
    log:
        "logs/features/{model}/deterministic.log",
    benchmark:
        "results/benchmarks/features/{model}/deterministic.tsv"
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/deterministic_features.py"


rule embedding_features:
    input:
        questions=expand("results/data/{lang}.parquet", lang=LANGUAGES),
        answers=expand("results/answers/{{model}}/{lang}.parquet", lang=LANGUAGES),
    output:
        expand("results/features/{{model}}/{lang}/embedding.parquet", lang=LANGUAGES),
    params:
        cache_dir=config["cache_dir"],
    log:
        "logs/features/{model}/embedding.log",
    benchmark:
        "results/benchmarks/features/{model}/embedding.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/embedding_features.py"


rule nli_features:
    input:
        questions=expand("results/data/{lang}.parquet", lang=LANGUAGES),
        answers=expand("results/answers/{{model}}/{lang}.parquet", lang=LANGUAGES),
    output:
        expand("results/features/{{model}}/{lang}/nli.parquet", lang=LANGUAGES),
    params:
        options=config["features"]["nli"],
    log:
        "logs/features/{model}/nli.log",
    benchmark:
        "results/benchmarks/features/{model}/nli.tsv"
    threads: feature_model_resource("nli", "threads")
    resources:
        gpu=feature_model_resource("nli", "gpu"),
        mem_mb=feature_model_resource("nli", "mem_mb"),
        runtime=feature_model_resource("nli", "runtime"),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/model_features.py"


rule reranker_features:
    input:
        questions=expand("results/data/{lang}.parquet", lang=LANGUAGES),
        answers=expand("results/answers/{{model}}/{lang}.parquet", lang=LANGUAGES),
    output:
        expand("results/features/{{model}}/{lang}/reranker.parquet", lang=LANGUAGES),
    params:
        options=config["features"]["reranker"],
    log:
        "logs/features/{model}/reranker.log",
    benchmark:
        "results/benchmarks/features/{model}/reranker.tsv"
    threads: feature_model_resource("reranker", "threads")
    resources:
        gpu=feature_model_resource("reranker", "gpu"),
        mem_mb=feature_model_resource("reranker", "mem_mb"),
        runtime=feature_model_resource("reranker", "runtime"),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/model_features.py"


rule llm_features:
    input:
        questions=expand("results/data/{lang}.parquet", lang=LANGUAGES),
        answers=expand("results/answers/{{model}}/{lang}.parquet", lang=LANGUAGES),
    output:
        expand("results/features/{{model}}/{lang}/llm.parquet", lang=LANGUAGES),
    params:
        judge=llm_feature_judge,
        options=config["features"]["llm"],
        seed=config["seed"],
        cache_dir=config["cache_dir"],
    log:
        "logs/features/{model}/llm.log",
    benchmark:
        "results/benchmarks/features/{model}/llm.tsv"
    threads: llm_feature_resource("threads")
    resources:
        gpu=llm_feature_resource("gpu"),
        mem_mb=llm_feature_resource("mem_mb"),
        runtime=llm_feature_resource("runtime"),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/llm_features.py"


# Cheap: runs where snakemake runs, never as a cluster job.
rule merge_features:
    input:
        feature_group_files,
    output:
        expand("results/features/{{model}}/{lang}.parquet", lang=LANGUAGES),
    params:
        groups=len(feature_groups()),
    localrule: True
    log:
        "logs/features/{model}/merge.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/merge_features.py"
