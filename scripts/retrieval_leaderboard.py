"""Snakemake entry point of rule retrieval_leaderboard: every run's measures per language and over
languages with question-bootstrap intervals and joint rank ranges (polyrag.retrieval.metrics)."""

import pandas as pd

from polyrag.csv_tables import write_table
from polyrag.logs import run_logged
from polyrag.retrieval.metrics import retrieval_leaderboard


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    per_run = {}
    for run, path in zip(sm.params.runs, sm.input):
        per_run.setdefault(run, []).append(pd.read_parquet(path))
    table = retrieval_leaderboard({run: pd.concat(parts, ignore_index=True) for run, parts in per_run.items()},
                                  n_bootstrap=sm.params.intervals["bootstrap"], level=sm.params.intervals["level"],
                                  seed=sm.params.seed)
    write_table(table, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
