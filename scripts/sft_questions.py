"""Snakemake entry point of rule finetune_questions: results/finetune/data/{lang}.parquet."""

import logging

from polyrag.logs import run_logged
from polyrag.sft.questions import load_training_questions, write_training_questions


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    for lang, output in zip(sm.params.languages, sm.output):
        records = load_training_questions(sm.params.training, lang, sm.params.seed, sm.params.cache_dir)
        logging.getLogger("polyrag").info("%s: %d training questions", lang, len(records))
        write_training_questions(records, output)


run_logged(main, snakemake.log[0])  # noqa: F821
