"""Snakemake entry point of rule merge_features: one table of every feature group."""

from polyrag.features.table import merge_feature_files
from polyrag.logs import run_logged

run_logged(lambda: merge_feature_files(list(snakemake.input), snakemake.output[0]), snakemake.log[0])  # noqa: F821
