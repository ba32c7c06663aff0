"""Snakemake entry point of rule retrieve: every question's top passages from a retriever's index,
as a run (Parquet and TREC; polyrag.retrieval.runs)."""

import logging

from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.retrieval.bm25 import BM25Index
from polyrag.retrieval.dense import DenseIndex
from polyrag.retrieval.questions import queries_of
from polyrag.retrieval.runs import write_run, write_trec


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    entry, depth = sm.params.retriever, sm.params.depth
    queries = queries_of(read_questions(sm.input.questions))
    if entry["kind"] == "bm25":
        run = BM25Index.load(sm.input.index).search(queries, k=depth, language=sm.wildcards.lang.split("-")[0])
    else:
        run = DenseIndex.load(sm.input.index).search(queries, k=depth)  # questions encoded as its passages were
    empty = sorted(set(queries) - set(run["query_id"]))
    if empty:
        logging.getLogger("polyrag").warning("%d of %d questions retrieved nothing (no query term in the corpus): %s",
                                             len(empty), len(queries), empty[:10])
    write_run(run, sm.output.run)
    write_trec(run, sm.output.trec, tag=sm.wildcards.retriever)


run_logged(main, snakemake.log[0])  # noqa: F821
