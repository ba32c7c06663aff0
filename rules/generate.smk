# Answer generation with citations: answers/{model}/{lang}.parquet (in results_dir).
# One job per model over every language, so a GPU model is loaded once per run, not once per
# language. Inputs and params depend on this model's entry only, so adding a model adds only
# its job; adding a language reruns each model's job, which finds its old answers in the cache.
# A system read from files (backend: file) is checked and copied here instead of asked: its files
# are the job's inputs, so editing one reruns exactly this job and what depends on its answers.


include: "inputs/generate.smk"


rule generate_answers:
    input:
        questions=model_questions,
        adapter=student_adapter_files,
        answer_files=answer_files,
    output:
        expand(ANSWERS, lang=LANGUAGES, allow_missing=True),
    params:
        languages=model_language_keys,
        entry=model_entry,
        settings=model_settings,
        wrong_language=wrong_language_sources,
        cache_dir=config["cache_dir"],
    log:
        log_path("generate/{model}.log"),
    benchmark:
        benchmark_path("generate/{model}.tsv")
    threads: resource("threads", model_entry)
    resources:
        gpu=resource("gpu", model_entry),
        mem_mb=resource("mem_mb", model_entry),
        runtime=resource("runtime", model_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/generate_answers.py"


# One model's answers and their questions in every language, in one file: what a judging job
# declares as its input (two paths per pair of models instead of 56 at 18 languages). It takes
# those files as its inputs, so a changed answer reruns it and every job that reads it.
rule answer_manifest:
    input:
        questions=model_questions,
        answers=model_answers,
    output:
        ANSWERS_MANIFEST,
    params:
        groups=lambda wildcards, input: {
            "questions": dict(zip(model_language_keys(wildcards), map(str, input.questions))),
            "answers": dict(zip(model_language_keys(wildcards), map(str, input.answers))),
        },
    localrule: True  # hashes a few files: seconds
    log:
        log_path("manifest/answers/{model}.log"),
    benchmark:
        benchmark_path("manifest/answers/{model}.tsv")
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/manifest.py"
