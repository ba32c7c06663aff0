"""Snakemake entry point of rule mars_meta_eval: mock systems of known accuracy ranked by MARS."""

import pandas as pd

from polyrag.logs import run_logged
from polyrag.mars.judges import load_judges
from polyrag.mars.mock_systems import coverage, meta_evaluate


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    judges = load_judges(sm.params.metrics, sm.input.judges, sm.params.judge, sm.params.cache_dir)
    gold = {pair: pd.read_parquet(path) for pair, path in zip(sm.params.pairs, sm.input.gold)}
    summary, systems = meta_evaluate(gold, judges, pd.read_parquet(sm.input.calibration), sm.params.metrics,
                                     sm.params.settings, sm.params.scoring, sm.params.seed)
    summary.to_csv(sm.output.summary, index=False)
    systems.to_csv(sm.output.systems, index=False)
    coverage(systems).to_csv(sm.output.coverage, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
