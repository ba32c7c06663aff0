"""Snakemake entry point of rule deterministic_features."""

import pyarrow.parquet as pq

from polyrag.data.records import read_questions
from polyrag.features.deterministic import COLUMNS, deterministic_features
from polyrag.features.table import align, write_features
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    records = read_questions(sm.input.questions)
    answers = align(records, pq.read_table(sm.input.answers).to_pylist(), sm.input.questions, sm.input.answers)
    write_features(deterministic_features(records, answers), COLUMNS, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
