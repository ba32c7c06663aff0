"""Snakemake entry point of rule judge_units: units.parquet, the judge's value of every unit."""

import logging

from polyrag.arena.games import read_games
from polyrag.arena.units import judge_units
from polyrag.logs import run_logged

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    units = judge_units(read_games(sm.input.games), sm.wildcards.lang)
    log.info("%d units (question, pair); %d without a valid order, kept at 0.5", len(units),
             (units["valid_orders"] == 0).sum())
    units.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
