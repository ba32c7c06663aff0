# Answer features: features/{model}/{lang}.parquet (in results_dir), one column per feature.
# Each feature group is its own rule (and file) so that model-based groups can run on GPU
# nodes and be cached on their own; merge_features joins the groups that are configured.
# Every job covers one model's answers in every language, so a feature model (NLI, reranker,
# LLM judge) is loaded once per answering model, and a cluster gets one job per model and group.


include: "inputs/features.smk"


rule deterministic_features:
    input:
        questions=model_questions,
        answers=model_answers,
    output:
        tables=expand(FEATURE_GROUP, lang=LANGUAGES, group="deterministic", allow_missing=True),
        # each answer's detected language in every language, in one file: what a judge that scores
        # languages reads (two inputs per pair job rather than two per language)
        languages=results_path("features/{model}/answer_languages.parquet"),
    params:
        languages=model_language_keys,
    log:
        log_path("features/{model}/deterministic.log"),
    benchmark:
        benchmark_path("features/{model}/deterministic.tsv")
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/deterministic_features.py"


# Jobs of several models at once share one store of vectors (cache_dir/embeddings), in which each
# distinct text is embedded once: the reference answers, the same in every model's job, are claimed
# by one job and read by the others (polyrag/features/embedding.py).
rule embedding_features:
    input:
        questions=model_questions,
        answers=model_answers,
    output:
        expand(FEATURE_GROUP, lang=LANGUAGES, group="embedding", allow_missing=True),
    params:
        cache_dir=config["cache_dir"],
    log:
        log_path("features/{model}/embedding.log"),
    benchmark:
        benchmark_path("features/{model}/embedding.tsv")
    threads: resource("threads", config, embedding_resources)
    resources:
        gpu=resource("gpu", config, embedding_resources),
        mem_mb=resource("mem_mb", config, embedding_resources),
        runtime=resource("runtime", config, embedding_resources),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/embedding_features.py"


rule nli_features:
    input:
        questions=model_questions,
        answers=model_answers,
    output:
        expand(FEATURE_GROUP, lang=LANGUAGES, group="nli", allow_missing=True),
    params:
        options=config["features"]["nli"],
    log:
        log_path("features/{model}/nli.log"),
    benchmark:
        benchmark_path("features/{model}/nli.tsv")
    threads: resource("threads", config["features"]["nli"] or {})
    resources:
        gpu=resource("gpu", config["features"]["nli"] or {}),
        mem_mb=resource("mem_mb", config["features"]["nli"] or {}),
        runtime=resource("runtime", config["features"]["nli"] or {}),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/model_features.py"


rule reranker_features:
    input:
        questions=model_questions,
        answers=model_answers,
    output:
        expand(FEATURE_GROUP, lang=LANGUAGES, group="reranker", allow_missing=True),
    params:
        options=config["features"]["reranker"],
    log:
        log_path("features/{model}/reranker.log"),
    benchmark:
        benchmark_path("features/{model}/reranker.tsv")
    threads: resource("threads", config["features"]["reranker"] or {})
    resources:
        gpu=resource("gpu", config["features"]["reranker"] or {}),
        mem_mb=resource("mem_mb", config["features"]["reranker"] or {}),
        runtime=resource("runtime", config["features"]["reranker"] or {}),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/model_features.py"


rule llm_features:
    input:
        questions=model_questions,
        answers=model_answers,
    output:
        expand(FEATURE_GROUP, lang=LANGUAGES, group="llm", allow_missing=True),
    params:
        judge=llm_feature_judge,
        options=config["features"]["llm"],
        seed=config["seed"],
        cache_dir=config["cache_dir"],
    log:
        log_path("features/{model}/llm.log"),
    benchmark:
        benchmark_path("features/{model}/llm.tsv")
    threads: resource("threads", llm_feature_judge_entry)
    resources:
        gpu=resource("gpu", llm_feature_judge_entry),
        mem_mb=resource("mem_mb", llm_feature_judge_entry),
        runtime=resource("runtime", llm_feature_judge_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/llm_features.py"


# Cheap: runs where snakemake runs, never as a cluster job.
rule merge_features:
    input:
        feature_group_files,
    output:
        expand(FEATURES, lang=LANGUAGES, allow_missing=True),
    params:
        groups=len(feature_groups()),
    localrule: True
    log:
        log_path("features/{model}/merge.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/merge_features.py"


# One model's features in every language, in one file: what the surrogate, which reads every
# model's, declares as its input.
rule feature_manifest:
    input:
        model_features,
    output:
        FEATURES_MANIFEST,
    params:
        groups=lambda wildcards, input: {"features": dict(zip(model_language_keys(wildcards), map(str, input)))},
    localrule: True  # hashes a few files: seconds
    log:
        log_path("manifest/features/{model}.log"),
    benchmark:
        benchmark_path("manifest/features/{model}.tsv")
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/manifest.py"
