"""Snakemake entry point of rule leaderboard: results/leaderboard.csv (the short table),
leaderboard_detailed.csv (every column) and leaderboard_by_language.csv."""

import json
from pathlib import Path

import pandas as pd

from polyrag.arena.leaderboard import (language_table, leaderboard, short_leaderboard, with_budget,
                                       with_label_anchored, with_mars_scores, with_retrieval, with_style_controlled, with_systems)
from polyrag.arena.style_control import style_controlled_ranks
from polyrag.config.queries import run_name
from polyrag.csv_tables import read_full_table, read_table, write_table
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    i = sm.input
    per_language = {
        lang: language_table(lang, read_table(bt), pd.read_parquet(boot), read_table(sur), pd.read_parquet(sur_boot))
        for lang, bt, boot, sur, sur_boot in zip(
            sm.params.languages, i.bradley_terry, i.bootstrap, i.surrogate, i.surrogate_bootstrap)
    }
    table, by_language = leaderboard(per_language)
    style = {lang: (read_table(path), pd.read_parquet(boot))
             for lang, path, boot in zip(sm.params.languages, i.style_controlled, i.style_bootstrap)}
    table = with_style_controlled(table, style_controlled_ranks(style))
    if i.rounds:  # a budgeted arena: games per model and the share of the exhaustive design spent
        records = [json.loads(Path(path).read_text(encoding="utf-8")) for path in i.rounds]
        bt = {lang: read_table(path) for lang, path in zip(sm.params.languages, i.bradley_terry)}
        table, by_language = with_budget(table, by_language, bt, dict(zip(sm.params.languages, records)))
    if i.mars:
        table = with_mars_scores(table, pd.concat([read_full_table(path) for path in i.mars], ignore_index=True))
    features = pd.concat([pd.read_parquet(path, columns=["unjudged_citations"]).assign(model=model)
                          for model, path in zip(sm.params.feature_models, i.features)], ignore_index=True)
    table = with_systems(table, sm.params.systems, features)
    if i.retrieval:
        runs = {model: run_name(system["retriever"], system["reranker"])
                for model, system in sm.params.systems.items() if system["retriever"] is not None}
        table = with_retrieval(table, read_full_table(i.retrieval[0]), runs)
    if i.label_anchored:
        table = with_label_anchored(table, read_table(i.label_anchored), sm.params.label_anchored_judge)
    write_table(short_leaderboard(table), sm.output.leaderboard)
    write_table(table, sm.output.detailed)
    write_table(by_language, sm.output.by_language)


run_logged(main, snakemake.log[0])  # noqa: F821
