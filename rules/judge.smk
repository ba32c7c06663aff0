# Pairwise judging on the arena sample: one file per judge, language and sorted model pair.
# A judge behind an API (or reference and recorded verdicts) judges one pair per job, in every
# language: adding a model creates only its new pairs' jobs, and the DAG stays small (171 jobs
# per judge for 19 models, not 171 x languages). These jobs are bound by the network, so they run
# where snakemake runs (on a cluster: the submitting node, which can reach the API when compute
# nodes cannot). A judge that runs on local weights (vLLM, transformers, llama.cpp) judges every
# pair in one cluster job, so its model is loaded once, and writes one games file per language
# (judgments/{judge}/{lang}/games.parquet); after a model is added that job reruns and
# finds the old pairs in the LLM cache.


include: "inputs/judge.smk"


rule judge_pair:
    input:
        # the questions and both models' answers in every language, through each model's manifest
        answers=expand(ANSWERS_MANIFEST, model=["{model_a}", "{model_b}"]),
        languages=answer_language_files,
        recorded=recorded_verdict_files,
    output:
        expand(PAIR_GAMES, lang=LANGUAGES, allow_missing=True),
    wildcard_constraints:
        judge=alternatives(PER_PAIR_JUDGES),
    params:
        judge=judge_entry,
        pairs=lambda wildcards: [pair_files(wildcards.judge, lang, wildcards.model_a, wildcards.model_b)
                                 for lang in pair_languages(config, wildcards.model_a, wildcards.model_b)],
        judging=judge_settings,
        cache_dir=config["cache_dir"],
    localrule: True
    log:
        log_path("judge/{judge}/{model_a}__{model_b}.log"),
    benchmark:
        benchmark_path("judge/{judge}/{model_a}__{model_b}.tsv")
    threads: resource("threads", judge_entry)
    resources:
        gpu=resource("gpu", judge_entry),
        mem_mb=resource("mem_mb", judge_entry),
        runtime=resource("runtime", judge_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/judge_pairs.py"


rule judge_pairs_local_model:
    input:
        answers=contestant_manifests,
    output:
        expand(JUDGE_GAMES, lang=LANGUAGES, allow_missing=True),
    wildcard_constraints:
        judge=alternatives(LOCAL_MODEL_JUDGES),
    params:
        judge=judge_entry,
        pairs=lambda wildcards: [
            pair_files(wildcards.judge, lang, a, b) for lang in LANGUAGES for a, b in judge_pairs(config, wildcards.judge, lang)
        ],
        judging=judge_settings,
        cache_dir=config["cache_dir"],
    log:
        log_path("judge/{judge}.log"),
    benchmark:
        benchmark_path("judge/{judge}.tsv")
    threads: resource("threads", judge_entry)
    resources:
        gpu=resource("gpu", judge_entry),
        mem_mb=resource("mem_mb", judge_entry),
        runtime=resource("runtime", judge_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/judge_pairs.py"


# A judge called per pair: its games in one language gathered from the pairs' files into one, as a
# judge on local weights writes it, so that the statistics (Bradley-Terry, style control,
# diagnostics, agreement, gold units) each read one file, not one per pair (190 at 20 models, and
# a dry run printed each path in every one of them). Adding a judged model reruns this copy
# (seconds); a model that is not judged adds no pair, and nothing here reruns.
rule gather_games:
    input:
        pair_games_files,
    output:
        JUDGE_GAMES,
    wildcard_constraints:
        judge=alternatives(PER_PAIR_JUDGES),
    localrule: True
    log:
        log_path("judge/{judge}/{lang}/gather.log"),
    benchmark:
        benchmark_path("judge/{judge}/{lang}/gather.tsv")
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/gather_games.py"


# A panel (a jury) votes per game with its members' verdicts, on the games every member judged
# (members.csv: how many of each member's games that kept): cheap, on the submitting node.
rule panel_games:
    input:
        member_judgment_files,
    output:
        games=JUDGE_GAMES,
        members=results_path("judgments/{judge}/{lang}/members.csv"),
    wildcard_constraints:
        judge=alternatives(PANEL_JUDGES),
    params:
        members=member_games,
    localrule: True
    log:
        log_path("judge/{judge}/{lang}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/panel_games.py"


# Under arena.budget: round k of a judge called per pair judges the units (pair, question) that
# rule arena_round chose, in both orders, in one job of every pair of the round (the LLM layer
# batches them). Like judge_pair it runs where snakemake runs: bound by the API, not by a node.
rule judge_round:
    input:
        units=ROUND_UNITS,
        questions=QUESTIONS,
        answers=lambda wildcards: expand(ANSWERS, model=round_models(wildcards), lang=wildcards.lang),
        languages=answer_language_files,
        recorded=recorded_verdict_files,
    output:
        ROUND_GAMES,
    wildcard_constraints:
        judge=alternatives(ROUND_JUDGES),
        k=r"\d+",
    params:
        judge=judge_entry,
        models=round_models,
        judging=judge_settings,
        cache_dir=config["cache_dir"],
    localrule: True
    log:
        log_path("judge/{judge}/{lang}/round_{k}.log"),
    benchmark:
        benchmark_path("judge/{judge}/{lang}/round_{k}.tsv")
    threads: resource("threads", judge_entry)
    resources:
        gpu=resource("gpu", judge_entry),
        mem_mb=resource("mem_mb", judge_entry),
        runtime=resource("runtime", judge_entry),
    conda:
        "../envs/llm.yaml"
    script:
        "../scripts/judge_pairs.py"


# The rules above (and generate.smk's, features.smk's) that write one model's or one pair's files
# in every language, copied for the models, and pairs, that answer fewer (rules/common.smk); from a
# file of rules/, whose relative script and environment paths the copies keep.
plan_answered_languages(
    ["generate_answers", "deterministic_features", "embedding_features", "nli_features", "reranker_features",
     "llm_features", "merge_features"],
    ["judge_pair"],
)
