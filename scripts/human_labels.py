"""Snakemake entry point of rule human_labels: the filled annotation file read against the key."""

import json
import logging

from polyrag.arena.human_labels import labelled_units, read_filled, read_key
from polyrag.logs import run_logged

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    key = read_key(sm.input.key)
    labels, counts = labelled_units(read_filled(sm.input.filled), key, sm.input.filled)
    log.info("%s: %s", sm.input.filled, counts)
    labels.to_parquet(sm.output.labels, index=False)
    with open(sm.output.counts, "w") as handle:
        json.dump({"source": sm.input.filled, **counts}, handle, indent=1)


run_logged(main, snakemake.log[0])  # noqa: F821
