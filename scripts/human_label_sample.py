"""Snakemake entry point of rule human_label_sample: the sampled units' key and the annotation files."""

import logging

import pandas as pd

from polyrag.arena.human_labels import sample_units, task_rows, write_key, write_tasks
from polyrag.logs import run_logged

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    lang = sm.wildcards.lang
    key = sample_units(pd.read_parquet(sm.input.units), lang, sm.params.seed, **sm.params.sample)
    answers = {model: pd.read_parquet(path) for model, path in zip(sm.params.models, sm.input.answers)}
    tasks = task_rows(key, pd.read_parquet(sm.input.questions), answers)
    write_key(key, sm.output.key)
    write_tasks(tasks, sm.output.tasks, sm.output.tasks_jsonl, sm.output.label_studio, sm.output.label_studio_config)
    log.info("%d units to label in %s: fill the label column of %s (left, right, tie, cant_judge) or import %s "
             "into Label Studio with %s", len(key), lang, sm.output.tasks, sm.output.label_studio,
             sm.output.label_studio_config)


run_logged(main, snakemake.log[0])  # noqa: F821
