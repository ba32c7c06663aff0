"""Snakemake entry point of rule bradley_terry: results/arena/{judge}/{lang}/bradley_terry.csv and
judge_diagnostics.csv (the first-position win rate)."""

import logging

import pandas as pd

from polyrag.arena.bradley_terry import bradley_terry
from polyrag.arena.games import position_bias, read_games
from polyrag.logs import run_logged
from polyrag.seeds import rng_for


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    games = read_games(sm.input)
    table, bootstrap, tournaments = bradley_terry(
        games, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "bootstrap", sm.wildcards.judge, sm.wildcards.lang))
    log = logging.getLogger("polyrag")
    log.info(
        "%d games on %d questions: %d ties (half a win each), %d invalid verdicts excluded",
        (games["verdict"] != "invalid").sum(), games["query_id"].nunique(),
        (games["verdict"] == "tie").sum(), (games["verdict"] == "invalid").sum())
    bias = position_bias(games)
    log.info("answer shown first wins %d of %d decisive games (95%% CI %.3f-%.3f); %d games count without "
             "their other order", bias["first_position_wins"], bias["decisive_games"],
             bias["first_position_ci_low"], bias["first_position_ci_high"], bias["games_without_other_order"])
    if bias["decisive_games"] and not bias["first_position_ci_low"] <= 0.5 <= bias["first_position_ci_high"]:
        log.warning("judge %s prefers the answer shown %s in %s", sm.wildcards.judge,
                    "first" if bias["first_position_ci_low"] > 0.5 else "second", sm.wildcards.lang)
    pd.DataFrame([{"judge": sm.wildcards.judge, "lang": sm.wildcards.lang, **bias}]).to_csv(
        sm.output.diagnostics, index=False)
    table.to_csv(sm.output.table, index=False)
    bootstrap.to_parquet(sm.output.bootstrap, index=False)
    tournaments.to_parquet(sm.output.tournaments, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
