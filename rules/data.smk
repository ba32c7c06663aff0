# Question and passage selection: data/{lang}.parquet (in results_dir) from the configured source.


include: "inputs/data.smk"


rule select_questions:
    input:
        local=question_data_files,
    output:
        QUESTIONS,
    params:
        data=config["data"],
        seed=config["seed"],
        cache_dir=config["cache_dir"],
        time_filter=time_filter_entry,
    log:
        log_path("data/{lang}.log"),
    benchmark:
        benchmark_path("data/{lang}.tsv")
    threads: time_filter_threads
    resources:
        mem_mb=8000,
        runtime=120,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/select_questions.py"
