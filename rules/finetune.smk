# Fine-tuning a student to answer with citations (MIRAGE-BENCH section 3.2, appendix C; docs/finetune.md):
# the teacher answers the training questions from their relevant passages, curation filters the
# answers (counted) and adds the distractors back, LoRA training writes an adapter, and the student
# joins the models under finetune.name: generate_answers waits for its adapter, and features,
# judgments, arena and surrogate treat it like any model. One job per stage, every language in it.
# Params hold only what each stage depends on: changing the teacher reruns the teacher's answers and
# everything after them, i.e. the student only.


include: "inputs/finetune.smk"


if FT:

    rule finetune_questions:
        input:
            evaluated=expand(QUESTIONS, lang=LANGUAGES),
            local=training_files(config, FT_LANGUAGES),
        output:
            expand(results_path("finetune/data/{lang}.parquet"), lang=FT_LANGUAGES),
        params:
            training=FT["training"],
            languages=FT_LANGUAGES,
            seed=config["seed"],
            cache_dir=config["cache_dir"],
        log:
            log_path("finetune/questions.log"),
        benchmark:
            benchmark_path("finetune/questions.tsv")
        resources:
            mem_mb=8000,
            runtime=120,
        conda:
            "../envs/core.yaml"
        script:
            "../scripts/finetune_questions.py"

    rule teacher_answers:
        input:
            questions=rules.finetune_questions.output,
        output:
            expand("{dir}/teacher/{lang}.parquet", dir=FT_DIR, lang=FT_LANGUAGES),
        params:
            languages=FT_LANGUAGES,
            teacher=FT["teacher"],
            entry=job_entry(config, FT["teacher"]),
            settings=generation_settings(config, FT["teacher"]),
            cache_dir=config["cache_dir"],
        log:
            log_path(f"finetune/{FT['name']}/teacher.log"),
        benchmark:
            benchmark_path(f"finetune/{FT['name']}/teacher.tsv")
        threads: resource("threads", config["models"][FT["teacher"]])
        resources:
            gpu=resource("gpu", config["models"][FT["teacher"]]),
            mem_mb=resource("mem_mb", config["models"][FT["teacher"]]),
            runtime=resource("runtime", config["models"][FT["teacher"]]),
        conda:
            "../envs/llm.yaml"
        script:
            "../scripts/teacher_answers.py"

    rule curate_training_set:
        input:
            questions=rules.finetune_questions.output,
            teacher=rules.teacher_answers.output,
        output:
            examples=f"{FT_DIR}/train.parquet",
            counts=f"{FT_DIR}/curation_counts.json",
        params:
            languages=FT_LANGUAGES,
            settings=generation_settings(config, FT["name"]),  # the prompt the student is evaluated with
            seed=config["seed"],
        log:
            log_path(f"finetune/{FT['name']}/curate.log"),
        localrule: True
        conda:
            "../envs/core.yaml"
        script:
            "../scripts/curate_training_set.py"

    rule train_student:
        input:
            examples=rules.curate_training_set.output.examples,
        output:
            adapter=f"{finetune_adapter_dir(config)}/adapter_model.safetensors",
            adapter_config=f"{finetune_adapter_dir(config)}/adapter_config.json",
            summary=f"{finetune_adapter_dir(config)}/training.json",
            loss=f"{FT_DIR}/loss.csv",
            epoch_loss=f"{FT_DIR}/epoch_loss.csv",
        params:
            # The base and how prompts are encoded; the student's other generation options do not retrain it.
            student={key: FT["student"].get(key) for key in ("model", "package", "revision", "mode")},
            lora=FT["lora"],
            trainer=FT["trainer"],
            cache_dir=config["cache_dir"],
            seed=config["seed"],
        log:
            log_path(f"finetune/{FT['name']}/train.log"),
        benchmark:
            benchmark_path(f"finetune/{FT['name']}/train.tsv")
        threads: resource("threads", config, finetune_resources)
        resources:
            gpu=resource("gpu", config, finetune_resources),
            mem_mb=resource("mem_mb", config, finetune_resources),
            runtime=resource("runtime", config, finetune_resources),
        conda:
            "../envs/train.yaml"
        script:
            "../scripts/train_student.py"

    # The student against its control (the same base served the same way, without the adapter):
    # the arena judge's verdicts and, for the reference judge, its criteria broken out.
    if FT_CONTROL and ARENA_JUDGE:

        rule finetune_gain:
            input:
                student_and_control_game_files,
            output:
                f"{FT_DIR}/gain_over_control.csv",
            params:
                games=student_and_control_games,
                student=FT["name"],
                control=FT_CONTROL,
                reference_judge=scores_reference_criteria(ARENA_JUDGE),
            log:
                log_path(f"finetune/{FT['name']}/gain.log"),
            localrule: True
            resources:
                mem_mb=2000,
                runtime=10,
            conda:
                "../envs/core.yaml"
            script:
                "../scripts/finetune_gain.py"
