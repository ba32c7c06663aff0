# Arena statistics per judge and language (Bradley-Terry with bootstrap, the surrogate judge),
# then the leaderboard and its figures. These aggregate rules read every model's files; the
# cheap ones (leaderboard, its table, plots) run where snakemake runs, not as cluster jobs.


# Under arena.budget: round k of a judge and language picks its units (pair, question) from the
# games of rounds 0..k-1 (a Bradley-Terry fit and the design criterion, seconds), or none once the
# budget is spent or the ranking settled. The chain of rounds is static, so `snakemake -n` lists
# every round; each round's choice is a file (docs/adaptive_arena.md). A round where a model joins
# (arena.adaptive.joined) places it against the neighbours the surrogate predicts from features.
rule arena_round:
    input:
        questions="results/data/{lang}.parquet",
        games=lambda wildcards: round_paths(
            "results/judgments/{judge}/{lang}/rounds/round_{k}.parquet", wildcards.judge, wildcards.lang, int(wildcards.k)
        ),
        features=lambda wildcards: expand(
            "results/features/{model}/{lang}.parquet", model=round_models(wildcards), lang=wildcards.lang
        ) if placement_round(config, wildcards.judge, int(wildcards.k)) else [],
    output:
        units="results/arena/{judge}/{lang}/rounds/round_{k}.csv",
        record="results/arena/{judge}/{lang}/rounds/round_{k}.json",
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
        "logs/arena/{judge}/{lang}/round_{k}.log",
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
        table="results/arena/{judge}/{lang}/bradley_terry.csv",
        bootstrap="results/arena/{judge}/{lang}/bootstrap.parquet",
        tournaments="results/arena/{judge}/{lang}/tournaments.parquet",
    params:
        models=contestants,
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        seed=config["seed"],
    log:
        "logs/arena/{judge}/{lang}/bradley_terry.log",
    benchmark:
        "results/benchmarks/arena/{judge}/{lang}/bradley_terry.tsv"
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
        diagnostics="results/arena/{judge}/{lang}/judge_diagnostics.csv",
    params:
        panel=lambda wildcards: wildcards.judge in PANEL_JUDGES,
    localrule: True  # counts over one games file: seconds
    log:
        "logs/arena/{judge}/{lang}/judge_diagnostics.log",
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
        questions="results/data/{lang}.parquet",
        answers=contestant_answers_in_language,
    output:
        style_table="results/arena/{judge}/{lang}/style_controlled.csv",
        style_coefficients="results/arena/{judge}/{lang}/style_coefficients.csv",
        style_bootstrap="results/arena/{judge}/{lang}/style_bootstrap.parquet",
    params:
        models=contestants,
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        seed=config["seed"],
    log:
        "logs/arena/{judge}/{lang}/style_control.log",
    benchmark:
        "results/benchmarks/arena/{judge}/{lang}/style_control.tsv"
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/style_control.py"


# How the judges agree on the same games (Cohen's kappa) and whether a judge favours its own
# family (self-preference), per language: needs every judge's games, runs on the submitting node.
rule judge_agreement:
    input:
        lambda wildcards: [path for judge in JUDGES for path in judgment_paths(judge, wildcards.lang)],
    output:
        agreement="results/arena/{lang}/judge_agreement.csv",
        self_preference="results/arena/{lang}/self_preference.csv",
    params:
        games=lambda wildcards: {judge: judgment_paths(judge, wildcards.lang) for judge in JUDGES},
        panels={judge: config["judges"][judge]["members"] for judge in PANEL_JUDGES},
        models=JUDGED,
        model_family=families(config, "models"),
        judge_family=families(config, "judges"),
        bootstrap=config["arena"]["bootstrap"],
        regularization=config["arena"]["regularization"],
        seed=config["seed"],
    localrule: True
    log:
        "logs/arena/{lang}/judge_agreement.log",
    benchmark:
        "results/benchmarks/arena/{lang}/judge_agreement.tsv"
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judge_agreement.py"


rule surrogate:
    input:
        questions="results/data/{lang}.parquet",
        features=expand("results/features/{model}/{{lang}}.parquet", model=MODELS),
        bradley_terry="results/arena/{judge}/{lang}/bradley_terry.csv",
        bootstrap="results/arena/{judge}/{lang}/bootstrap.parquet",
        tournaments="results/arena/{judge}/{lang}/tournaments.parquet",
    output:
        table="results/arena/{judge}/{lang}/surrogate.csv",
        bootstrap="results/arena/{judge}/{lang}/surrogate_bootstrap.parquet",
        metrics="results/arena/{judge}/{lang}/surrogate_metrics.json",
        features="results/arena/{judge}/{lang}/model_features.csv",
    params:
        models=MODELS,
        surrogate=config["arena"]["surrogate"],
        seed=config["seed"],
        cache_dir=config["cache_dir"],
    log:
        "logs/arena/{judge}/{lang}/surrogate.log",
    benchmark:
        "results/benchmarks/arena/{judge}/{lang}/surrogate.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/surrogate.py"


rule leaderboard:
    input:
        bradley_terry=expand("results/arena/{judge}/{lang}/bradley_terry.csv", judge=ARENA_JUDGE, lang=LANGUAGES),
        bootstrap=expand("results/arena/{judge}/{lang}/bootstrap.parquet", judge=ARENA_JUDGE, lang=LANGUAGES),
        surrogate=expand("results/arena/{judge}/{lang}/surrogate.csv", judge=ARENA_JUDGE, lang=LANGUAGES),
        surrogate_bootstrap=expand(
            "results/arena/{judge}/{lang}/surrogate_bootstrap.parquet", judge=ARENA_JUDGE, lang=LANGUAGES
        ),
        style_controlled=expand("results/arena/{judge}/{lang}/style_controlled.csv", judge=ARENA_JUDGE, lang=LANGUAGES),
        style_bootstrap=expand(
            "results/arena/{judge}/{lang}/style_bootstrap.parquet", judge=ARENA_JUDGE, lang=LANGUAGES
        ),
        mars=expand("results/mars/scores/{model}.csv", model=MODELS) if MARS else [],
        gold=GOLD_TABLE,
        # under a budget, each language's last round: the share of the exhaustive design spent
        rounds=[round_paths("results/arena/{judge}/{lang}/rounds/round_{k}.json", ARENA_JUDGE, lang)[-1]
                for lang in LANGUAGES] if ARENA_JUDGE in ROUND_JUDGES else [],
    output:
        leaderboard=report("results/leaderboard.csv", caption="../report/leaderboard.rst", category="Leaderboard"),
        detailed="results/leaderboard_detailed.csv",
        by_language="results/leaderboard_by_language.csv",
    params:
        languages=LANGUAGES,
        gold_judge=GOLD and GOLD["judge"],
    localrule: True
    log:
        "logs/arena/leaderboard.log",
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
        leaderboard="results/leaderboard.csv",
        detailed="results/leaderboard_detailed.csv",
        gold=GOLD_TABLE,
    output:
        report("results/leaderboard.html", caption="../report/leaderboard.rst", category="Leaderboard"),
    localrule: True
    log:
        "logs/arena/leaderboard_table.log",
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/leaderboard_table.py"


# The judges beside the leaderboard: diagnostics, agreement, self-preference, style and each
# judge's ranking, as one page of the report and one CSV of the diagnostics.
rule judges_table:
    input:
        diagnostics=expand("results/arena/{judge}/{lang}/judge_diagnostics.csv", judge=JUDGES, lang=LANGUAGES),
        bradley_terry=expand("results/arena/{judge}/{lang}/bradley_terry.csv", judge=JUDGES, lang=LANGUAGES),
        style_coefficients=expand("results/arena/{judge}/{lang}/style_coefficients.csv", judge=JUDGES, lang=LANGUAGES),
        agreement=expand("results/arena/{lang}/judge_agreement.csv", lang=LANGUAGES) if len(JUDGES) > 1 else [],
        self_preference=expand("results/arena/{lang}/self_preference.csv", lang=LANGUAGES) if len(JUDGES) > 1 else [],
        credibility="results/meta_eval/judge_credibility.csv" if META_EVAL and META_EVAL["llm_judges"] else [],
    output:
        page=report("results/judges.html", caption="../report/judges.rst", category="Judges"),
        diagnostics="results/judge_diagnostics.csv",
    params:
        judges=JUDGES,
        languages=LANGUAGES,
        arena_judge=ARENA_JUDGE,
    localrule: True
    log:
        "logs/arena/judges_table.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judges_table.py"


rule arena_plots:
    input:
        leaderboard="results/leaderboard_detailed.csv",
        by_language="results/leaderboard_by_language.csv",
        surrogate_metrics=expand(
            "results/arena/{judge}/{lang}/surrogate_metrics.json", judge=ARENA_JUDGE, lang=LANGUAGES
        ),
        model_features=expand("results/arena/{judge}/{lang}/model_features.csv", judge=ARENA_JUDGE, lang=LANGUAGES),
    output:
        rank_heatmap=report("results/plots/rank_heatmap.png", caption="../report/rank_heatmap.rst", category="Arena"),
        logits=report("results/plots/bt_logits.png", caption="../report/bt_logits.rst", category="Arena"),
        features=report("results/plots/features.png", caption="../report/features.rst", category="Features"),
        importances=report(
            "results/plots/feature_importances.png", caption="../report/feature_importances.rst", category="Surrogate"
        ),
        surrogate=report(
            "results/plots/surrogate_vs_bt.png", caption="../report/surrogate_vs_bt.rst", category="Surrogate"
        ),
    params:
        languages=LANGUAGES,
    localrule: True
    log:
        "logs/arena/plots.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/arena_plots.py"
