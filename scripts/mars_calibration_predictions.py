"""Snakemake entry point of rule mars_calibration_predictions: each judge's P(label 1) on the calibration set."""

import pandas as pd

from polyrag.logs import run_logged
from polyrag.mars.judges import load_judges


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    calibration = pd.read_parquet(sm.input.calibration)
    judges = load_judges(sm.params.metrics, sm.input.judges, sm.params.judge, sm.params.cache_dir)
    for metric, judge in judges.items():
        calibration[f"prediction_{metric}"] = judge.predict_proba(calibration)
    calibration.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
