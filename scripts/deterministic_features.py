"""Snakemake entry point of rule deterministic_features (every language of one model): one table
per language, and every answer's detected language in one file for the judges."""

from polyrag.features.deterministic import COLUMNS, deterministic_features
from polyrag.features.table import read_aligned_languages, write_features
from polyrag.judge.reference import write_answer_languages
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    languages = []
    pairs = read_aligned_languages(sm.input.questions, sm.input.answers)
    for lang, (records, answers), output in zip(sm.params.languages, pairs, sm.output.tables, strict=True):
        rows = deterministic_features(records, answers)
        write_features(rows, COLUMNS, output)
        languages += [{"lang": lang, **row} for row in rows]
    write_answer_languages(languages, sm.output.languages)


run_logged(main, snakemake.log[0])  # noqa: F821
