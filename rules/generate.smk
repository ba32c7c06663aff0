# Answer generation with citations: results/answers/{model}/{lang}.parquet.
# Inputs and params depend on this model's entry only, so adding a model adds only its jobs.


rule generate_answers:
    input:
        questions="results/data/{lang}.parquet",
        wrong_language=wrong_language_questions,
    output:
        "results/answers/{model}/{lang}.parquet",
    params:
        entry=model_entry,
        settings=model_settings,
        cache_dir=config["cache_dir"],
    log:
        "logs/generate/{model}/{lang}.log",
    benchmark:
        "results/benchmarks/generate/{model}/{lang}.tsv"
    threads: model_resource("threads")
    resources:
        gpu=model_resource("gpu"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/generate_answers.py"
