"""Snakemake entry point of rule generate_answers: results/answers/{model}/{lang}.parquet for
every language, with the model loaded once (a baseline's: its generator's, with its LLM cache); a
system read from files (backend: file) has its files checked and copied instead."""

import logging

from polyrag.config.queries import generator_of, passage_source
from polyrag.data.records import read_questions
from polyrag.generate.answers import foreign_answers, generate_answers, write_answers
from polyrag.llm import open_llm
from polyrag.logs import run_logged
from polyrag.systems.passages import RETRIEVED
from polyrag.systems.answer_files import given_from_file, passage_file_spec, reads_answer_files, system_answers


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    model, settings, entry = sm.wildcards.model, sm.params.settings, sm.params.entry
    questions = dict(zip(sm.params.languages, sm.input.questions))
    log = logging.getLogger("polyrag")
    if reads_answer_files(entry):
        for lang, output in zip(sm.params.languages, sm.output):
            log.info("answering the %s questions from the system's file", lang)
            write_answers(system_answers(model, entry, lang, read_questions(questions[lang]), questions[lang]), output)
        return
    llm = open_llm(generator_of(model, entry), entry, cache_dir=sm.params.cache_dir, seed=settings["seed"],
                   threads=sm.threads)
    try:
        for lang, output in zip(sm.params.languages, sm.output):
            log.info("answering the %s questions", lang)
            records = read_questions(questions[lang])
            foreign = None
            if other := sm.params.wrong_language.get(lang):
                foreign = foreign_answers(records, read_questions(questions[other]), settings["seed"], model, lang)
            from_file = None
            if spec := passage_file_spec(entry):
                # a retrieved system's passage file is the workflow's own (rule system_passages)
                from_file = given_from_file(model, spec, lang, records, questions[lang],
                                            retrieved=passage_source(entry) == RETRIEVED)
            write_answers(generate_answers(llm, records, settings, foreign, from_file, passage_source(entry)), output)
    finally:
        llm.close()


run_logged(main, snakemake.log[0])  # noqa: F821
