"""Snakemake entry point of rule bm25_index: the BM25 index of one corpus language (polyrag.retrieval.bm25)."""

from polyrag.logs import run_logged
from polyrag.retrieval.bm25 import BM25Index
from polyrag.retrieval.corpus import read_corpus


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    BM25Index.build(read_corpus(sm.input[0]), sm.wildcards.corpus_lang).save(sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
