"""Snakemake entry point of rule retrieval_metrics: one run's measures per question against the
questions' relevance labels (polyrag.retrieval.metrics.per_query_metrics), its docids as the
questions name them and each passage's language (a pooled corpus's: polyrag.retrieval.corpus.question_docids)."""

from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.retrieval.corpus import question_docids
from polyrag.retrieval.metrics import per_query_metrics
from polyrag.retrieval.questions import qrels_of
from polyrag.retrieval.runs import read_run


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    lang = sm.wildcards.lang
    run = read_run(sm.input.run)
    docids, languages = question_docids(run["docid"], lang, sm.params.corpus_lang)
    metrics = per_query_metrics(run.assign(docid=docids), qrels_of(read_questions(sm.input.questions)), lang,
                                languages=languages)
    metrics.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
