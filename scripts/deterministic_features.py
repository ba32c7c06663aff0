"""Snakemake entry point of rule deterministic_features (every language of one model)."""

from polyrag.features.deterministic import COLUMNS, deterministic_features
from polyrag.features.table import read_aligned_languages, write_features
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    for (records, answers), output in zip(read_aligned_languages(sm.input.questions, sm.input.answers), sm.output):
        write_features(deterministic_features(records, answers), COLUMNS, output)


run_logged(main, snakemake.log[0])  # noqa: F821
