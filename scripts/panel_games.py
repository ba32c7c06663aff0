"""Snakemake entry point of rule panel_games: results/judgments/{panel}/{lang}/games.parquet, one
vote per game over the members' verdicts, every member's verdict kept beside it."""

import logging

from polyrag.arena.games import read_games
from polyrag.arena.panel import panel_games
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    panel = panel_games({member: read_games(paths) for member, paths in sm.params.members.items()})
    split = panel["agreement"] < 1
    logging.getLogger("polyrag").info(
        "%s in %s: %d games, %d without any valid member verdict (invalid), %d split (members disagree), "
        "mean agreement %.3f", sm.wildcards.judge, sm.wildcards.lang, len(panel), (panel["votes"] == 0).sum(),
        split.sum(), panel["agreement"].mean())
    panel.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
