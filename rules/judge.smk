# Pairwise judging on the arena sample: one file per judge, language and sorted model pair,
# so adding a model creates only the new pairs' work.
# A judge behind an API (or reference and recorded verdicts) judges one pair per job: small,
# many and bound by the network, so they run where snakemake runs (on a cluster: the submitting
# node, which can reach the API when compute nodes cannot), never as thousands of cluster jobs.
# A judge that runs on local weights (vLLM, transformers, llama.cpp) judges every pair in one
# cluster job, so its model is loaded once; after a model is added that job reruns and finds
# the old pairs in the LLM cache.


rule judge_pair:
    input:
        questions="results/data/{lang}.parquet",
        answers_a="results/answers/{model_a}/{lang}.parquet",
        answers_b="results/answers/{model_b}/{lang}.parquet",
    output:
        "results/judgments/{judge}/{lang}/{model_a}__{model_b}.parquet",
    wildcard_constraints:
        judge=alternatives(PER_PAIR_JUDGES),
    params:
        judge=judge_entry,
        pairs=lambda wildcards: [pair_files(wildcards.judge, wildcards.lang, wildcards.model_a, wildcards.model_b)],
        judging=judging_settings(config),
        cache_dir=config["cache_dir"],
    localrule: True
    log:
        "logs/judge/{judge}/{lang}/{model_a}__{model_b}.log",
    benchmark:
        "results/benchmarks/judge/{judge}/{lang}/{model_a}__{model_b}.tsv"
    threads: judge_resource("threads")
    resources:
        gpu=judge_resource("gpu"),
        mem_mb=judge_resource("mem_mb"),
        runtime=judge_resource("runtime"),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/judge_pairs.py"


rule judge_pairs_local_model:
    input:
        questions=expand("results/data/{lang}.parquet", lang=LANGUAGES),
        answers=expand("results/answers/{model}/{lang}.parquet", model=JUDGED, lang=LANGUAGES),
    output:
        [f"results/judgments/{{judge}}/{lang}/{a}__{b}.parquet" for lang in LANGUAGES for a, b in PAIRS],
    wildcard_constraints:
        judge=alternatives(LOCAL_MODEL_JUDGES),
    params:
        judge=judge_entry,
        pairs=lambda wildcards: [pair_files(wildcards.judge, lang, a, b) for lang in LANGUAGES for a, b in PAIRS],
        judging=judging_settings(config),
        cache_dir=config["cache_dir"],
    log:
        "logs/judge/{judge}.log",
    benchmark:
        "results/benchmarks/judge/{judge}.tsv"
    threads: judge_resource("threads")
    resources:
        gpu=judge_resource("gpu"),
        mem_mb=judge_resource("mem_mb"),
        runtime=judge_resource("runtime"),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/judge_pairs.py"
