# Meta-evaluation of evaluators against MEMERAG's human sentence labels: sentences per language,
# predictions per evaluator and language, then balanced accuracies, tests and the figure.


include: "inputs/meta_eval.smk"


rule memerag_sentences:
    input:
        local=memerag_data_files,
    output:
        results_path("meta_eval/data/{memerag_lang}.parquet"),
    params:
        meta_eval=config["meta_eval"],
        cache_dir=config["cache_dir"],
        seed=config["seed"],
    log:
        log_path("meta_eval/data/{memerag_lang}.log"),
    localrule: True  # splits MEMERAG's labelled answers into sentences: seconds
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/memerag_sentences.py"


# One job per scorer over every MEMERAG language: the NLI model loads once.
rule meta_eval_scores:
    input:
        sentences=expand(rules.memerag_sentences.output[0], memerag_lang=META_LANGUAGES),
        mars_judges=lambda wildcards: (
            expand(rules.mars_judge.output.judge, metric=["af", "ar"]) if wildcards.scorer == "mars" else []  # rules/mars.smk
        ),
    output:
        expand(results_path("meta_eval/scores/{{scorer}}/{memerag_lang}.parquet"), memerag_lang=META_LANGUAGES),
    params:
        tasks=META_EVAL["tasks"] if META_EVAL else [],
        nli=config["features"]["nli"],
        mars_judge=MARS and MARS["judge"],
        cache_dir=config["cache_dir"],
    log:
        log_path("meta_eval/scores/{scorer}.log"),
    benchmark:
        benchmark_path("meta_eval/scores/{scorer}.tsv")
    threads: 2
    resources:
        gpu=lambda wildcards: model_resources(config["features"]["nli"])["gpu"] if wildcards.scorer == "nli" else 0,
        mem_mb=8000,
        runtime=120,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/meta_eval_scores.py"


rule meta_eval_thresholds:
    input:
        rules.meta_eval_scores.output,
    output:
        predictions=expand(results_path("meta_eval/{{scorer}}/{memerag_lang}.parquet"), memerag_lang=META_LANGUAGES),
        thresholds=results_path("meta_eval/{scorer}/thresholds.csv"),
    params:
        languages=META_LANGUAGES,
    localrule: True
    log:
        log_path("meta_eval/thresholds/{scorer}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/meta_eval_thresholds.py"


# One job per LLM judge over every MEMERAG language: a judge on local weights loads once.
rule meta_eval_llm:
    input:
        expand(rules.memerag_sentences.output[0], memerag_lang=META_LANGUAGES),
    output:
        expand(results_path("meta_eval/{{judge}}/{memerag_lang}.parquet"), memerag_lang=META_LANGUAGES),
    params:
        judge=judge_entry,
        settings=META_EVAL,
        seed=config["seed"],
        cache_dir=config["cache_dir"],
    log:
        log_path("meta_eval/{judge}.log"),
    benchmark:
        benchmark_path("meta_eval/{judge}.tsv")
    threads: resource("threads", judge_entry)
    resources:
        gpu=resource("gpu", judge_entry),
        mem_mb=resource("mem_mb", judge_entry),
        runtime=resource("runtime", judge_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/meta_eval_llm.py"


rule meta_eval_summary:
    input:
        expand(results_path("meta_eval/{evaluator}/{memerag_lang}.parquet"), evaluator=META_EVALUATORS, memerag_lang=META_LANGUAGES),
    output:
        summary=report(results_path("meta_eval/summary.csv"), caption="../report/meta_eval.rst", category=REPORT["meta_eval"]),
        significance=results_path("meta_eval/significance.csv"),
        fine_grained=results_path("meta_eval/fine_grained.csv"),
        credibility=report(
            results_path("meta_eval/judge_credibility.csv"), caption="../report/judge_credibility.rst", category=REPORT["judges"]
        ),
        figure=report(results_path("plots/meta_eval.png"), caption="../report/meta_eval_figure.rst", category=REPORT["meta_eval"]),
    params:
        evaluators=META_EVALUATORS,
        languages=META_LANGUAGES,
        settings=META_EVAL,
        judge_roles=judge_roles,
        seed=config["seed"],
    localrule: True
    log:
        log_path("meta_eval/summary.log"),
    benchmark:
        benchmark_path("meta_eval/summary.tsv")
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/meta_eval_summary.py"
