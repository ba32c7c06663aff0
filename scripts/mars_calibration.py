"""Snakemake entry point of rule mars_calibration: results/mars/calibration.parquet."""

import logging

import pandas as pd

from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.mars.negatives import label_counts
from polyrag.mars.calibration import (cap_per_pair, calibration_from_gold, calibration_from_memerag, calibration_from_tsv,
                                    require_labels, without_evaluated_questions)


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings = sm.params.calibration
    source = settings["source"]
    if source == "gold":
        table = calibration_from_gold({path.rsplit("/", 1)[-1].removesuffix(".parquet"): pd.read_parquet(path)
                                     for path in sm.input.sources}, sm.params.seed)
        where = "XQuAD gold calibration set"
    elif source == "tsv":
        table, where = calibration_from_tsv(settings["path"]), settings["path"]
    else:
        table = calibration_from_memerag(pd.concat([pd.read_parquet(p) for p in sm.input.sources], ignore_index=True))
        where = "MEMERAG calibration set"
    evaluated = {r["query"].strip() for path in sm.input.evaluated for r in read_questions(path)}
    table = without_evaluated_questions(table, evaluated, where)
    require_labels(table, sm.params.metrics, where)
    table = cap_per_pair(table, settings["max_size"], sm.params.seed)
    logging.getLogger("polyrag").info("%s: %d rows; labels %s", where, len(table), label_counts(table))
    table.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
