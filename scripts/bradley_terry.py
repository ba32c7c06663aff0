"""Snakemake entry point of rule bradley_terry: results/arena/{judge}/{lang}/bradley_terry.csv."""

import logging

from polyrag.arena.bradley_terry import bradley_terry
from polyrag.arena.games import read_games
from polyrag.logs import run_logged
from polyrag.seeds import rng_for


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    games = read_games(sm.input)
    table, bootstrap, tournaments = bradley_terry(
        games, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "bootstrap", sm.wildcards.judge, sm.wildcards.lang))
    logging.getLogger("polyrag").info(
        "%d games on %d questions: %d ties (half a win each), %d invalid verdicts excluded",
        (games["verdict"] != "invalid").sum(), games["query_id"].nunique(),
        (games["verdict"] == "tie").sum(), (games["verdict"] == "invalid").sum())
    table.to_csv(sm.output.table, index=False)
    bootstrap.to_parquet(sm.output.bootstrap, index=False)
    tournaments.to_parquet(sm.output.tournaments, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
