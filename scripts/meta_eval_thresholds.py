"""Snakemake entry point of rule meta_eval_thresholds: leave-one-language-out thresholds and predictions."""

import pandas as pd

from polyrag.logs import run_logged
from polyrag.meta_eval.evaluators import leave_one_language_out


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    scores = pd.concat([pd.read_parquet(path) for path in sm.input], ignore_index=True)
    predictions, thresholds = leave_one_language_out(scores)
    predictions = predictions.assign(prompt="-")
    for lang, path in zip(sm.params.languages, sm.output.predictions):
        predictions[predictions["lang"] == lang].to_parquet(path, index=False)
    thresholds.to_csv(sm.output.thresholds, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
