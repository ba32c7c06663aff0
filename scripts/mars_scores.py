"""Snakemake entry point of rule mars_scores: results/mars/scores/{model}.csv."""

import pandas as pd

from polyrag.csv_tables import write_table
from polyrag.features.table import read_aligned
from polyrag.logs import run_logged
from polyrag.mars.judges import load_judges
from polyrag.mars.scores import model_scores, system_items


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    judges = load_judges(sm.params.metrics, sm.input.judges, sm.params.judge, sm.params.cache_dir)
    items = {lang: system_items(*read_aligned(questions, answers))
             for lang, questions, answers in zip(sm.params.languages, sm.input.questions, sm.input.answers)}
    scores = model_scores(items, pd.read_parquet(sm.input.calibration), judges, sm.params.metrics, sm.params.scoring)
    scores.insert(0, "model", sm.wildcards.model)
    write_table(scores, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
