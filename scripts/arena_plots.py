"""Snakemake entry point of rule arena_plots: the report's arena figures under results/plots/."""

import json

from polyrag.csv_tables import read_table
from polyrag.logs import run_logged
from polyrag.plots import arena


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    languages = sm.params.languages
    leaderboard = read_table(sm.input.leaderboard)
    by_language = read_table(sm.input.by_language)
    arena.rank_heatmap(leaderboard, languages, sm.output.rank_heatmap)
    arena.bt_logits(by_language, languages, sm.output.logits)
    arena.feature_lollipops({lang: read_table(path) for lang, path in zip(languages, sm.input.model_features)},
                            sm.output.features)
    importances = {}
    for lang, path in zip(languages, sm.input.surrogate_metrics):
        with open(path) as handle:
            importances[lang] = json.load(handle)["feature_importances"]
    arena.importance_boxplot(importances, sm.output.importances)
    arena.surrogate_vs_bt(by_language, sm.output.surrogate)


run_logged(main, snakemake.log[0])  # noqa: F821
