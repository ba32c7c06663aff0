"""Snakemake entry point of rule gather_games: the games of every pair of a judge called per pair,
in one language, in one file (results/judgments/{judge}/{lang}/games.parquet)."""

import logging

from polyrag.arena.games import gather_games
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    games = gather_games(list(sm.input), sm.output[0])
    logging.getLogger("polyrag").info("%d games of %d pairs gathered", games, len(sm.input))


run_logged(main, snakemake.log[0])  # noqa: F821
