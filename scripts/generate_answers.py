"""Snakemake entry point of rule generate_answers: results/answers/{model}/{lang}.parquet."""

from polyrag.data.records import read_questions
from polyrag.generate.answers import foreign_answers, generate_answers, write_answers
from polyrag.llm import open_llm
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    model, lang = sm.wildcards.model, sm.wildcards.lang
    records = read_questions(sm.input.questions)
    settings = sm.params.settings
    foreign = None
    if sm.input.wrong_language:
        foreign = foreign_answers(records, read_questions(sm.input.wrong_language[0]), settings["seed"], model, lang)
    llm = open_llm(model, sm.params.entry, cache_dir=sm.params.cache_dir, seed=settings["seed"])
    try:
        rows = generate_answers(llm, records, settings, foreign)
    finally:
        llm.close()
    write_answers(rows, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
