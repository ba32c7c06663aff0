"""Snakemake entry point of rule finetune_questions: results/finetune/data/{lang}.parquet, with
docids none of which is an evaluated question's (input: the evaluated data)."""

import logging

import pyarrow.parquet as pq

from polyrag.logs import run_logged
from polyrag.finetune.questions import load_training_questions, write_training_questions


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    evaluated = {passage["docid"] for path in sm.input.evaluated
                 for passages in pq.read_table(path, columns=["passages"]).column("passages").to_pylist()
                 for passage in passages}
    for lang, output in zip(sm.params.languages, sm.output):
        records = load_training_questions(sm.params.training, lang, sm.params.seed, sm.params.cache_dir, evaluated)
        logging.getLogger("polyrag").info("%s: %d training questions, docids apart from the %d evaluated ones",
                                          lang, len(records), len(evaluated))
        write_training_questions(records, output)


run_logged(main, snakemake.log[0])  # noqa: F821
