"""Snakemake entry point of rule stand_in_labels: a judge fills the task file as a person would."""

from polyrag.arena.games import read_games
from polyrag.arena.human_labels import read_key, stand_in_labels
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    key = read_key(sm.input.key)
    stand_in_labels(key, read_games(sm.input.games)).to_csv(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
