# Arena statistics per judge and language (Bradley-Terry with bootstrap, the surrogate judge),
# then the leaderboard and its figures. These aggregate rules read every model's files; the
# cheap ones (leaderboard, its table, plots) run where snakemake runs, not as cluster jobs.
from polyrag.arena.components import crossed_systems
from polyrag.config.queries import (arena_judge, budget_spec, families, judge_contestants, judged_models, placement_round,
                                    settings_entry, system_components)

JUDGED = judged_models(config)
ARENA_JUDGE = arena_judge(config)  # None without judges: no arena, no leaderboard
# Per judge, its contestants that cross passage sources and generators (system -> [passages, generator]):
# the judges with some get the additive fit (rule component_effects), the others none.
CROSSED = {judge: {system: list(cell) for system, cell in crossed_systems(config, judge).items()} for judge in JUDGES}
CROSSED_JUDGES = [judge for judge, cells in CROSSED.items() if cells]
# The surrogate judge's outputs per judge and language (rule surrogate writes every language's).
SURROGATE_TABLE = results_path("arena/{judge}/{lang}/surrogate.csv")
SURROGATE_BOOTSTRAP = results_path("arena/{judge}/{lang}/surrogate_bootstrap.parquet")
SURROGATE_METRICS = results_path("arena/{judge}/{lang}/surrogate_metrics.json")
SURROGATE_FEATURES = results_path("arena/{judge}/{lang}/model_features.csv")


# Under arena.budget: round k of a judge and language picks its units (pair, question) from the
# games of rounds 0..k-1 (a Bradley-Terry fit and the design criterion, seconds), or none once the
# budget is spent or the ranking settled. The chain of rounds is static, so `snakemake -n` lists
# every round; each round's choice is a file (docs/adaptive_arena.md). A round where a model joins
# (arena.adaptive.joined) places it against the neighbours the surrogate predicts from features.
rule arena_round:
    input:
        questions=QUESTIONS,
        games=lambda wildcards: round_paths(ROUND_GAMES, wildcards.judge, wildcards.lang, int(wildcards.k)),
        features=lambda wildcards: expand(FEATURES, model=round_models(wildcards), lang=wildcards.lang) if placement_round(config, wildcards.judge, int(wildcards.k)) else [],
    output:
        units=ROUND_UNITS,
        record=results_path("arena/{judge}/{lang}/rounds/round_{k}.json"),
    wildcard_constraints:
        judge=alternatives(ROUND_JUDGES),
        k=r"\d+",
    params:
        models=round_models,
        budget=lambda wildcards: budget_spec(config, wildcards.lang),
        max_questions=lambda wildcards: config["judges"][wildcards.judge].get("max_questions"),
        adaptive=settings_entry(config),
        regularization=config["arena"]["regularization"],
        surrogate=lambda wildcards: config["arena"]["surrogate"] if placement_round(config, wildcards.judge, int(wildcards.k)) else None,
        free_judge=lambda wildcards: not judge_kind(config["judges"][wildcards.judge]).sends_prompts,
        seed=config["seed"],
    localrule: True
    log:
        log_path("arena/{judge}/{lang}/round_{k}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/arena_round.py"


# Per judge and language: Bradley-Terry with a question bootstrap (the arena's ranking).
rule bradley_terry:
    input:
        games=judgment_files,
    output:
        table=results_path("arena/{judge}/{lang}/bradley_terry.csv"),
        bootstrap=results_path("arena/{judge}/{lang}/bootstrap.parquet"),
        tournaments=results_path("arena/{judge}/{lang}/tournaments.parquet"),
    params:
        models=contestants,
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        ties=config["arena"]["ties"],
        seed=config["seed"],
    log:
        log_path("arena/{judge}/{lang}/bradley_terry.log"),
    benchmark:
        benchmark_path("arena/{judge}/{lang}/bradley_terry.tsv")
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/bradley_terry.py"


# How the judge behaves, from its games alone: position bias and consistency, invalid and tie
# rates, and a panel's agreement (docs/judges.md).
rule judge_diagnostics:
    input:
        games=judgment_files,
    output:
        diagnostics=results_path("arena/{judge}/{lang}/judge_diagnostics.csv"),
    params:
        panel=lambda wildcards: wildcards.judge in PANEL_JUDGES,
    localrule: True  # counts over one games file: seconds
    log:
        log_path("arena/{judge}/{lang}/judge_diagnostics.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judge_diagnostics.py"


# Chatbot Arena's style control: Bradley-Terry with the answers' length, citation count and markup
# as covariates, so a judge's taste for presentation is not counted as strength.
rule style_control:
    input:
        games=judgment_files,
        questions=QUESTIONS,
        answers=contestant_answers_in_language,
    output:
        style_table=results_path("arena/{judge}/{lang}/style_controlled.csv"),
        style_coefficients=results_path("arena/{judge}/{lang}/style_coefficients.csv"),
        style_bootstrap=results_path("arena/{judge}/{lang}/style_bootstrap.parquet"),
    params:
        models=contestants,
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        seed=config["seed"],
    log:
        log_path("arena/{judge}/{lang}/style_control.log"),
    benchmark:
        benchmark_path("arena/{judge}/{lang}/style_control.tsv")
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/style_control.py"


# Retriever or generator? Where a judge's contestants cross passage sources with generators, its
# verdicts in every language fitted with a passages effect plus a generator effect, with question
# bootstrap intervals, which part moves the ranking more, and a test of their interaction
# (docs/arena.md). Seconds: a logistic regression per bootstrap tournament.
rule component_effects:
    input:
        games=lambda wildcards: [path for lang in LANGUAGES for path in judgment_paths(wildcards.judge, lang)],
    output:
        table=results_path("arena/{judge}/components.csv"),
        summary=results_path("arena/{judge}/components.json"),
    wildcard_constraints:
        judge=alternatives(CROSSED_JUDGES),
    params:
        games=lambda wildcards: {lang: judgment_paths(wildcards.judge, lang) for lang in LANGUAGES},
        cells=lambda wildcards: CROSSED[wildcards.judge],
        left_out=lambda wildcards: [model for model in judge_contestants(config, wildcards.judge)
                                    if model not in CROSSED[wildcards.judge]],
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        seed=config["seed"],
    log:
        log_path("arena/{judge}/components.log"),
    benchmark:
        benchmark_path("arena/{judge}/components.tsv")
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/component_effects.py"


# How the judges agree on the same games (Cohen's kappa) and whether a judge favours its own
# family (self-preference), per language: needs every judge's games, runs on the submitting node.
rule judge_agreement:
    input:
        lambda wildcards: [path for judge in JUDGES for path in judgment_paths(judge, wildcards.lang)],
    output:
        agreement=results_path("arena/{lang}/judge_agreement.csv"),
        self_preference=results_path("arena/{lang}/self_preference.csv"),
    params:
        games=lambda wildcards: {judge: judgment_paths(judge, wildcards.lang) for judge in JUDGES},
        panels={judge: config["judges"][judge]["members"] for judge in PANEL_JUDGES},
        models=lambda wildcards: answering_models(config, wildcards.lang, JUDGED),
        model_family=families(config, "models"),
        judge_family=families(config, "judges"),
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        seed=config["seed"],
    localrule: True
    log:
        log_path("arena/{lang}/judge_agreement.log"),
    benchmark:
        benchmark_path("arena/{lang}/judge_agreement.tsv")
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judge_agreement.py"


# The surrogate judge of every language of one judge, in one job. Each language's held-out evaluation
# (50 refits, nearly all the CPU) is kept in cache_dir/surrogate_held_out, keyed by what it reads,
# so after a model that is not judged is added each language costs one fit and its predictions
# (about 2 CPU-s at 8 models), and the job's imports (scikit-learn, pandas: about 3 CPU-s) are paid
# once, not once a language: with a job per language, adding one model cost 2.5-3.0 times its
# own jobs' CPU at 4 languages (docs/cluster.md). On a cluster this is one submission per judge
# instead of one per language. When every evaluation reruns (a judged model added: 3.5 CPU-min a
# language at 20 models) the forests fit on the job's 8 threads, with the same results on any
# number (polyrag/arena/surrogate.py): about an hour of CPU, some 10 minutes, for 18 languages,
# beside the hours of judging the new model's pairs.
rule surrogate:
    input:
        questions=expand(QUESTIONS, lang=LANGUAGES),
        features=expand(FEATURES_MANIFEST, model=MODELS),  # every model's, in every language
        bradley_terry=expand(rules.bradley_terry.output.table, lang=LANGUAGES, allow_missing=True),
        bootstrap=expand(rules.bradley_terry.output.bootstrap, lang=LANGUAGES, allow_missing=True),
        tournaments=expand(rules.bradley_terry.output.tournaments, lang=LANGUAGES, allow_missing=True),
    output:
        table=expand(SURROGATE_TABLE, lang=LANGUAGES, allow_missing=True),
        bootstrap=expand(SURROGATE_BOOTSTRAP, lang=LANGUAGES, allow_missing=True),
        metrics=expand(SURROGATE_METRICS, lang=LANGUAGES, allow_missing=True),
        features=expand(SURROGATE_FEATURES, lang=LANGUAGES, allow_missing=True),
    params:
        languages=LANGUAGES,
        models=MODELS,
        model_languages={model: model_languages(config, model) for model in MODELS},
        surrogate=config["arena"]["surrogate"],
        seed=config["seed"],
        cache_dir=config["cache_dir"],
    log:
        log_path("arena/{judge}/surrogate.log"),
    benchmark:
        benchmark_path("arena/{judge}/surrogate.tsv")
    threads: 2  # as a SLURM job it must fit the smallest node (a 2-CPU node never schedules 8); the forest is the same on any count
    resources:
        mem_mb=4000,
        runtime=30 + 5 * len(LANGUAGES),
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/surrogate.py"


rule leaderboard:
    input:
        bradley_terry=expand(rules.bradley_terry.output.table, judge=ARENA_JUDGE, lang=LANGUAGES),
        bootstrap=expand(rules.bradley_terry.output.bootstrap, judge=ARENA_JUDGE, lang=LANGUAGES),
        surrogate=expand(SURROGATE_TABLE, judge=ARENA_JUDGE, lang=LANGUAGES),
        surrogate_bootstrap=expand(SURROGATE_BOOTSTRAP, judge=ARENA_JUDGE, lang=LANGUAGES),
        style_controlled=expand(rules.style_control.output.style_table, judge=ARENA_JUDGE, lang=LANGUAGES),
        style_bootstrap=expand(rules.style_control.output.style_bootstrap, judge=ARENA_JUDGE, lang=LANGUAGES),
        # input functions: rules/human_labels.smk and rules/mars.smk, included after this file, define these
        mars=lambda wildcards: expand(rules.mars_scores.output.full_precision, model=MARS_MODELS) if MARS else [],
        label_anchored=lambda wildcards: label_anchored_file(),
        features=answered_paths(FEATURES, MODELS, LANGUAGES),
        retrieval=[rules.retrieval_leaderboard.output.full_precision] if SYSTEMS else [],
        # under a budget, each language's last round: the share of the exhaustive design spent
        rounds=[round_paths(rules.arena_round.output.record, ARENA_JUDGE, lang)[-1]
                for lang in LANGUAGES] if ARENA_JUDGE in ROUND_JUDGES else [],
    output:
        leaderboard=report(results_path("leaderboard.csv"), caption="../report/leaderboard.rst", category=REPORT["downloads"]),
        detailed=results_path("leaderboard_detailed.csv"),
        by_language=results_path("leaderboard_by_language.csv"),
        # each CSV's full-precision twin, written by the same call (polyrag.csv_tables.write_table)
        leaderboard_full=results_path("leaderboard.parquet"),
        detailed_full=results_path("leaderboard_detailed.parquet"),
        by_language_full=results_path("leaderboard_by_language.parquet"),
    params:
        languages=LANGUAGES,
        label_anchored_judge=HUMAN_LABELS and HUMAN_LABELS["judge"],
        feature_models=[model for model, lang in answered_cells(MODELS, LANGUAGES)],  # the model of each features file
        systems=system_components(config),
    localrule: True
    log:
        log_path("arena/leaderboard.log"),
    benchmark:
        benchmark_path("arena/leaderboard.tsv")
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/leaderboard.py"


# The report offers CSVs only as downloads; this page shows the leaderboard in the report itself.
rule leaderboard_table:
    input:
        leaderboard=rules.leaderboard.output.leaderboard,
        detailed=rules.leaderboard.output.detailed,
        label_anchored=lambda wildcards: label_anchored_file(),  # rules/human_labels.smk, included after this file
        components=expand(rules.component_effects.output.table, judge=ARENA_JUDGE) if ARENA_JUDGE in CROSSED_JUDGES else [],
        components_summary=(expand(rules.component_effects.output.summary, judge=ARENA_JUDGE)
                            if ARENA_JUDGE in CROSSED_JUDGES else []),
    output:
        report(results_path("leaderboard.html"), caption="../report/leaderboard.rst", category=REPORT["results"]),
    localrule: True
    log:
        log_path("arena/leaderboard_table.log"),
    benchmark:
        benchmark_path("arena/leaderboard_table.tsv")
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/leaderboard_table.py"


# Every system's answers to read: per language and question, two systems side by side with the
# passages each was given (the cited ones marked) and the arena judge's verdicts for the pair. An
# aggregate like the leaderboard, so it reads every model's answers.
rule answers_browser:
    input:
        questions=expand(QUESTIONS, lang=LANGUAGES),
        answers=answered_paths(ANSWERS, MODELS, LANGUAGES),
        games=[path for lang in LANGUAGES for path in judgment_paths(ARENA_JUDGE, lang)] if ARENA_JUDGE else [],
        leaderboard=[rules.leaderboard.output.leaderboard] if ARENA_JUDGE else [],
    output:
        report(results_path("answers.html"), caption="../report/answers.rst", category=REPORT["answers"]),
    params:
        languages=LANGUAGES,
        models=MODELS,
        answer_keys=answered_cells(MODELS, LANGUAGES),  # the key of each answers file
        model_languages={model: model_languages(config, model) for model in MODELS},
        games_languages=[lang for lang in LANGUAGES for path in judgment_paths(ARENA_JUDGE, lang)] if ARENA_JUDGE else [],
        judge=ARENA_JUDGE,
    localrule: True
    log:
        log_path("arena/answers_browser.log"),
    benchmark:
        benchmark_path("arena/answers_browser.tsv")
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/answers_browser.py"


# The judges beside the leaderboard: diagnostics, agreement, self-preference, style and each
# judge's ranking, as one page of the report and one CSV of the diagnostics.
rule judges_table:
    input:
        diagnostics=expand(rules.judge_diagnostics.output.diagnostics, judge=JUDGES, lang=LANGUAGES),
        bradley_terry=expand(rules.bradley_terry.output.table, judge=JUDGES, lang=LANGUAGES),
        style_coefficients=expand(rules.style_control.output.style_coefficients, judge=JUDGES, lang=LANGUAGES),
        agreement=expand(rules.judge_agreement.output.agreement, lang=LANGUAGES) if len(JUDGES) > 1 else [],
        self_preference=expand(rules.judge_agreement.output.self_preference, lang=LANGUAGES) if len(JUDGES) > 1 else [],
        # rules/meta_eval.smk, included after this file
        credibility=lambda wildcards: rules.meta_eval_summary.output.credibility if META_EVAL and META_EVAL["llm_judges"] else [],
    output:
        page=report(results_path("judges.html"), caption="../report/judges.rst", category=REPORT["judges"]),
        diagnostics=results_path("judge_diagnostics.csv"),
    params:
        judges=JUDGES,
        languages=LANGUAGES,
        arena_judge=ARENA_JUDGE,
    localrule: True
    log:
        log_path("arena/judges_table.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judges_table.py"


rule arena_plots:
    input:
        leaderboard=rules.leaderboard.output.detailed,
        by_language=rules.leaderboard.output.by_language,
        surrogate_metrics=expand(SURROGATE_METRICS, judge=ARENA_JUDGE, lang=LANGUAGES),
        model_features=expand(SURROGATE_FEATURES, judge=ARENA_JUDGE, lang=LANGUAGES),
    output:
        rank_heatmap=report(results_path("plots/rank_heatmap.png"), caption="../report/rank_heatmap.rst", category=REPORT["arena"]),
        logits=report(results_path("plots/bt_logits.png"), caption="../report/bt_logits.rst", category=REPORT["arena"]),
        features=report(results_path("plots/features.png"), caption="../report/features.rst", category=REPORT["features"]),
        importances=report(
            results_path("plots/feature_importances.png"), caption="../report/feature_importances.rst", category=REPORT["surrogate"]
        ),
        surrogate=report(
            results_path("plots/surrogate_vs_bt.png"), caption="../report/surrogate_vs_bt.rst", category=REPORT["surrogate"]
        ),
    params:
        languages=LANGUAGES,
    localrule: True
    log:
        log_path("arena/plots.log"),
    benchmark:
        benchmark_path("arena/plots.tsv")
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/arena_plots.py"
