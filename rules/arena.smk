# Arena statistics per judge and language (Bradley-Terry with bootstrap, the surrogate judge),
# then the leaderboard and its figures. These aggregate rules read every model's files; the
# cheap ones (leaderboard, its table, plots) run where snakemake runs, not as cluster jobs.


rule bradley_terry:
    input:
        judgment_files,
    output:
        table="results/arena/{judge}/{lang}/bradley_terry.csv",
        bootstrap="results/arena/{judge}/{lang}/bootstrap.parquet",
        tournaments="results/arena/{judge}/{lang}/tournaments.parquet",
        diagnostics="results/arena/{judge}/{lang}/judge_diagnostics.csv",
    params:
        models=JUDGED,
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
        mars=expand("results/mars/scores/{model}.csv", model=MODELS) if MARS else [],
    output:
        leaderboard=report("results/leaderboard.csv", caption="../report/leaderboard.rst", category="Leaderboard"),
        by_language="results/leaderboard_by_language.csv",
    params:
        languages=LANGUAGES,
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
        "results/leaderboard.csv",
    output:
        report("results/leaderboard.html", caption="../report/leaderboard.rst", category="Leaderboard"),
    localrule: True
    log:
        "logs/arena/leaderboard_table.log",
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/leaderboard_table.py"


rule arena_plots:
    input:
        leaderboard="results/leaderboard.csv",
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
