"""Snakemake entry point of rule mars_judge: results/mars/judges/{metric}/."""

from pathlib import Path

import pandas as pd

from polyrag.features.embedding import e5_store
from polyrag.logs import run_logged
from polyrag.mars.judges import judge_data, train_judge


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    synthetic = pd.concat([pd.read_parquet(path) for path in sm.input.synthetic], ignore_index=True)
    train, validation = judge_data(synthetic, sm.wildcards.metric, sm.params.seed)
    train_judge(sm.wildcards.metric, train, validation, sm.params.judge, Path(sm.output.judge).parent, sm.params.seed,
                e5_store(sm.params.cache_dir))


run_logged(main, snakemake.log[0])  # noqa: F821
