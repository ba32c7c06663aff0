"""Snakemake entry point of rule retrieval_metrics: one run's measures per question against the
questions' relevance labels (polyrag.retrieval.metrics.per_query_metrics)."""

from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.retrieval.metrics import per_query_metrics
from polyrag.retrieval.questions import qrels_of
from polyrag.retrieval.runs import read_run


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    metrics = per_query_metrics(read_run(sm.input.run), qrels_of(read_questions(sm.input.questions)), sm.wildcards.lang)
    metrics.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
