"""Snakemake entry point of rule teacher_answers: the teacher's answers to the training questions
from their relevant passages, every language with the teacher loaded once."""

import logging

from polyrag.generate.answers import write_answers
from polyrag.llm import open_llm
from polyrag.logs import run_logged
from polyrag.finetune.questions import read_training_questions
from polyrag.finetune.teacher import teacher_answers


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings = sm.params.settings
    llm = open_llm(sm.params.teacher, sm.params.entry, cache_dir=sm.params.cache_dir,
                   seed=settings["seed"], threads=sm.threads)
    try:
        for lang, questions, output in zip(sm.params.languages, sm.input.questions, sm.output):
            logging.getLogger("polyrag").info("teacher %s: answering the %s training questions", sm.params.teacher, lang)
            write_answers(teacher_answers(llm, read_training_questions(questions), settings), output)
    finally:
        llm.close()


run_logged(main, snakemake.log[0])  # noqa: F821
