"""Snakemake entry point of rule deterministic_features."""

from polyrag.features.deterministic import COLUMNS, deterministic_features
from polyrag.features.table import read_aligned, write_features
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    records, answers = read_aligned(sm.input.questions, sm.input.answers)
    write_features(deterministic_features(records, answers), COLUMNS, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
