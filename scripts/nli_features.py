"""Snakemake entry point of rule nli_features: support_entailment, support_neutral."""

import pyarrow.parquet as pq

from polyrag.data.records import read_questions
from polyrag.features.support import NLIScorer, support_features
from polyrag.features.table import align, write_features
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    options = sm.params.options
    records = read_questions(sm.input.questions)
    answers = align(records, pq.read_table(sm.input.answers).to_pylist(), sm.input.questions, sm.input.answers)
    scorer = NLIScorer(options["model"], options["device"], options["batch_size"], options["max_length"])
    write_features(support_features(scorer, records, answers), ["support_entailment", "support_neutral"], sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
