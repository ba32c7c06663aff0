"""Snakemake entry point of rules answer_manifest and feature_manifest: one model's files in every
language (params.groups: kind -> language -> path), their sizes and SHA-256, in one JSON file."""

from polyrag.logs import run_logged
from polyrag.manifest import write_manifest


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    write_manifest(sm.output[0], sm.wildcards.model, sm.params.groups)


run_logged(main, snakemake.log[0])  # noqa: F821
