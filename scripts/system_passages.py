"""Snakemake entry point of rule system_passages: a retrieved system's passage file, its run's first
top_k passages per question with their text (polyrag.retrieval.questions.top_passages), their docids
as the question names them (a pooled corpus's own-language passages without their prefix), each
marked parallel_docid where the corpus is the question data's parallel source."""

import logging

import pandas as pd

from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.retrieval.corpus import read_corpus_docids
from polyrag.retrieval.questions import top_passages
from polyrag.retrieval.runs import read_run


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    run, top_k = read_run(sm.input.run), sm.params.system["top_k"]
    corpus = read_corpus_docids(sm.input.corpus, run.loc[run["rank"] <= top_k, "docid"])
    rows = top_passages(run, corpus, read_questions(sm.input.questions), top_k, sm.input.run,
                        lang=sm.wildcards.lang, corpus_lang=sm.params.corpus_lang,
                        parallel_docids=sm.params.parallel_docids)
    given_none = [row["query_id"] for row in rows if not row["passages"]]
    if given_none:
        logging.getLogger("polyrag").warning("%d of %d questions are given no passages (their run is empty): %s",
                                             len(given_none), len(rows), given_none[:10])
    pd.DataFrame(rows).to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
