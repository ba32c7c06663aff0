"""Snakemake entry point of rule bm25_index: the BM25 index of one corpus language (polyrag.retrieval.bm25);
a corpus whose BM25 index would not fit the job's memory stops before it is read."""

import logging

from polyrag.errors import DataError
from polyrag.logs import run_logged
from polyrag.retrieval.bm25 import BM25Index
from polyrag.retrieval.corpus import corpus_size, read_corpus
from polyrag.retrieval.retrievers import BM25_BYTES_PER_PASSAGE, bm25_memory_mb


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    n, memory = corpus_size(sm.input[0]), sm.resources.mem_mb
    if bm25_memory_mb(n) > memory:
        raise DataError(f"{sm.input[0]}: BM25 over its {n:,} passages needs about {bm25_memory_mb(n):,} MB "
                        f"({BM25_BYTES_PER_PASSAGE:,} bytes a passage), more than this job's mem_mb {memory:,}: set "
                        "the retriever's resources: {mem_mb: ...} or use a dense retriever for a corpus this size")
    stopwords = sm.params.retriever.get("stopwords", False)
    index = BM25Index.build(read_corpus(sm.input[0]), sm.wildcards.corpus_lang, stopwords=stopwords)
    for tokenizer in index.tokenizer.made.values() if index.pooled else [index.tokenizer]:
        logging.getLogger("polyrag").info("BM25 tokens: %s", tokenizer.analysis)  # "no analyzer" where none
    index.save(sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
