"""Snakemake entry point of rule curate_training_set: the training examples (Parquet) and the
counts of kept and dropped teacher answers (JSON)."""

import json
import logging

import pyarrow.parquet as pq

from polyrag.logs import run_logged
from polyrag.finetune.curate import curate, write_counts, write_examples
from polyrag.finetune.questions import read_training_questions


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    records = [r for path in sm.input.questions for r in read_training_questions(path)]
    teacher = {lang: pq.read_table(path).to_pylist() for lang, path in zip(sm.params.languages, sm.input.teacher)}
    examples, counts = curate(records, teacher, sm.params.settings, sm.params.seed)
    logging.getLogger("polyrag").info("curation: %s", json.dumps(counts["total"]))
    write_examples(examples, sm.output.examples)
    write_counts(counts, sm.output.counts)


run_logged(main, snakemake.log[0])  # noqa: F821
