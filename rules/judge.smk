# Pairwise judging on the arena sample: one file per judge, language and sorted model pair,
# so adding a model creates only the new pairs' jobs.


rule judge_pair:
    input:
        questions="results/data/{lang}.parquet",
        answers_a="results/answers/{model_a}/{lang}.parquet",
        answers_b="results/answers/{model_b}/{lang}.parquet",
    output:
        "results/judgments/{judge}/{lang}/{model_a}__{model_b}.parquet",
    params:
        judge=judge_entry,
        judging=judging_settings(config),
        cache_dir=config["cache_dir"],
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
        "../scripts/judge_pair.py"
