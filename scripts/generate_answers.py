"""Snakemake entry point of rule generate_answers: results/answers/{model}/{lang}.parquet for
every language, with the model loaded once (a baseline's: its generator's, with its LLM cache)."""

import logging

from polyrag.config.resolve import generator_of
from polyrag.data.records import read_questions
from polyrag.generate.answers import foreign_answers, generate_answers, write_answers
from polyrag.llm import open_llm
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    model, settings = sm.wildcards.model, sm.params.settings
    questions = dict(zip(sm.params.languages, sm.input.questions))
    llm = open_llm(generator_of(model, sm.params.entry), sm.params.entry, cache_dir=sm.params.cache_dir,
                   seed=settings["seed"], threads=sm.threads)
    try:
        for lang, output in zip(sm.params.languages, sm.output):
            logging.getLogger("polyrag").info("answering the %s questions", lang)
            records = read_questions(questions[lang])
            foreign = None
            if other := sm.params.wrong_language.get(lang):
                foreign = foreign_answers(records, read_questions(questions[other]), settings["seed"], model, lang)
            write_answers(generate_answers(llm, records, settings, foreign), output)
    finally:
        llm.close()


run_logged(main, snakemake.log[0])  # noqa: F821
