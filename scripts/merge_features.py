"""Snakemake entry point of rule merge_features: one table of every feature group, per language."""

from polyrag.features.table import merge_feature_files
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    groups, files = sm.params.groups, list(sm.input)
    for index, output in enumerate(sm.output):
        merge_feature_files(files[index * groups:(index + 1) * groups], output)


run_logged(main, snakemake.log[0])  # noqa: F821
