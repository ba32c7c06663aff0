# MARS: XQuAD gold data, synthetic data per language pair, the judges trained on it, the calibration
# set, PPI scores of every model and the mock-system meta-evaluation.


include: "inputs/mars.smk"


rule mars_gold:
    input:
        evaluated=evaluated_question_files,
        local=mars_gold_data_files,
    output:
        results_path("mars/gold/{pair}.parquet"),
    params:
        gold=MARS and MARS["gold"],
        few_shot=MARS and MARS["few_shot"]["count"],
        calibration_size=MARS and MARS["calibration"]["max_size"],
        second_languages=MARS and MARS["second_languages"],
        cache_dir=config["cache_dir"],
        seed=config["seed"],
    log:
        log_path("mars/gold/{pair}.log"),
    localrule: True  # selects and labels a few hundred XQuAD rows (fetched once into cache_dir): seconds
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/mars_gold.py"


rule mars_synthetic:
    input:
        gold=rules.mars_gold.output[0],
        corpus=mars_corpus_files,
        few_shot=lambda wildcards: MARS["few_shot"]["file"] or [],
    output:
        table=results_path("mars/synthetic/{pair}.parquet"),
        stats=results_path("mars/synthetic/{pair}.json"),
    params:
        generator=mars_generator,
        # only what generation reads, so that changing the judges never reruns it
        mars=MARS and {key: MARS[key] for key in ("generation", "second_languages", "corpus", "few_shot", "filter")},
        cache_dir=config["cache_dir"],
        seed=config["seed"],
    log:
        log_path("mars/synthetic/{pair}.log"),
    benchmark:
        benchmark_path("mars/synthetic/{pair}.tsv")
    threads: resource("threads", mars_generator_entry)
    resources:
        gpu=resource("gpu", mars_generator_entry),
        mem_mb=resource("mem_mb", mars_generator_entry),
        runtime=resource("runtime", mars_generator_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/mars_synthetic.py"


# MARS judges: one binary classifier per metric, trained on every pair's synthetic data and
# early-stopped on held-out synthetic questions, never on the calibration set that PPI corrects
# with (a GPU job for fine-tuned encoders).


rule mars_judge:
    input:
        synthetic=expand(rules.mars_synthetic.output.table, pair=MARS_PAIRS),
    output:
        judge=results_path("mars/judges/{metric}/judge.json"),
        history=results_path("mars/judges/{metric}/history.csv"),
    params:
        judge=MARS and MARS["judge"],
        cache_dir=config["cache_dir"],
        seed=config["seed"],
    log:
        log_path("mars/judges/{metric}.log"),
    benchmark:
        benchmark_path("mars/judges/{metric}.tsv")
    threads: resource("threads", config, mars_judge_resources)
    resources:
        gpu=resource("gpu", config, mars_judge_resources),
        mem_mb=resource("mem_mb", config, mars_judge_resources),
        runtime=resource("runtime", config, mars_judge_resources),
    conda:
        "../envs/train.yaml"
    script:
        "../scripts/mars_judge.py"

rule mars_calibration:
    input:
        sources=mars_calibration_inputs,
        evaluated=expand(QUESTIONS, lang=MARS_LANGUAGES),
    output:
        results_path("mars/calibration.parquet"),
    params:
        calibration=MARS and MARS["calibration"],
        metrics=MARS_METRICS,
        seed=config["seed"],
    log:
        log_path("mars/calibration.log"),
    localrule: True  # joins a few small labelled tables: seconds
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/mars_calibration.py"


rule mars_calibration_predictions:
    input:
        calibration=rules.mars_calibration.output[0],
        judges=expand(rules.mars_judge.output.judge, metric=MARS_METRICS),
    output:
        results_path("mars/calibration_predictions.parquet"),
    params:
        cache_dir=config["cache_dir"],
        judge=MARS and MARS["judge"],
        metrics=MARS_METRICS,
    log:
        log_path("mars/calibration_predictions.log"),
    threads: resource("threads", config, mars_judge_resources)
    resources:
        gpu=resource("gpu", config, mars_judge_resources),
        mem_mb=resource("mem_mb", config, mars_judge_resources),
        runtime=60,
    conda:
        "../envs/train.yaml"
    script:
        "../scripts/mars_calibration_predictions.py"


rule mars_scores:
    input:
        unpack(mars_answer_files),
        calibration=rules.mars_calibration_predictions.output[0],
        judges=expand(rules.mars_judge.output.judge, metric=MARS_METRICS),
    output:
        results_path("mars/scores/{model}.csv"),
        full_precision=results_path("mars/scores/{model}.parquet"),  # the CSV's twin (csv_tables.write_table)
    params:
        cache_dir=config["cache_dir"],
        languages=mars_model_languages,
        judge=MARS and MARS["judge"],
        metrics=MARS_METRICS,
        scoring=MARS and MARS["scoring"],
    log:
        log_path("mars/scores/{model}.log"),
    benchmark:
        benchmark_path("mars/scores/{model}.tsv")
    threads: resource("threads", config, mars_judge_resources)
    resources:
        gpu=resource("gpu", config, mars_judge_resources),
        mem_mb=resource("mem_mb", config, mars_judge_resources),
        runtime=60,
    conda:
        "../envs/train.yaml"
    script:
        "../scripts/mars_scores.py"


rule mars_meta_eval:
    input:
        gold=expand(rules.mars_gold.output[0], pair=MARS["meta_eval"]["pairs"] if MARS and MARS["meta_eval"] else []),
        calibration=rules.mars_calibration_predictions.output[0],
        judges=expand(rules.mars_judge.output.judge, metric=MARS_METRICS),
    output:
        summary=report(results_path("mars/meta_eval.csv"), caption="../report/mars_meta_eval.rst", category=REPORT["mars"]),
        systems=results_path("mars/meta_eval_systems.csv"),
        coverage=report(results_path("mars/meta_eval_coverage.csv"), caption="../report/mars_meta_eval_coverage.rst",
                        category=REPORT["mars"]),
    params:
        cache_dir=config["cache_dir"],
        pairs=MARS["meta_eval"]["pairs"] if MARS and MARS["meta_eval"] else [],
        settings=MARS and MARS["meta_eval"],
        judge=MARS and MARS["judge"],
        metrics=MARS_METRICS,
        scoring=MARS and MARS["scoring"],
        seed=config["seed"],
    log:
        log_path("mars/meta_eval.log"),
    benchmark:
        benchmark_path("mars/meta_eval.tsv")
    threads: resource("threads", config, mars_judge_resources)
    resources:
        gpu=resource("gpu", config, mars_judge_resources),
        mem_mb=resource("mem_mb", config, mars_judge_resources),
        runtime=60,
    conda:
        "../envs/train.yaml"
    script:
        "../scripts/mars_meta_eval.py"
