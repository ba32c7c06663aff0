"""Snakemake entry point of rule bradley_terry, per judge and language: bradley_terry.csv,
bootstrap.parquet and tournaments.parquet, the Bradley-Terry fit and its question bootstrap."""

import logging

from polyrag.arena.bradley_terry import bradley_terry, few_questions_warnings
from polyrag.arena.games import read_games
from polyrag.logs import run_logged
from polyrag.seeds import rng_for

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    judge, lang = sm.wildcards.judge, sm.wildcards.lang
    games = read_games(sm.input.games)
    table, bootstrap, tournaments = bradley_terry(
        games, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "bootstrap", judge, lang), sm.params.ties)
    log.info(
        "%d games on %d questions: %d ties (%s), %d invalid verdicts excluded",
        (games["verdict"] != "invalid").sum(), games["query_id"].nunique(), (games["verdict"] == "tie").sum(),
        "half a win each" if sm.params.ties == "half" else "Davidson's tie model",
        (games["verdict"] == "invalid").sum())
    for message in few_questions_warnings(table, judge, lang):  # per model: its own questions
        log.warning("%s", message)
    table.to_csv(sm.output.table, index=False)
    bootstrap.to_parquet(sm.output.bootstrap, index=False)
    tournaments.to_parquet(sm.output.tournaments, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
