"""Snakemake entry point of rule bm25_statistics: the vocabulary and document frequencies of a corpus
language that is indexed in shards, gathered in one streaming pass (polyrag.retrieval.bm25.Statistics)."""

from polyrag.logs import run_logged
from polyrag.retrieval.bm25 import Statistics, file_chunks, log_analysis, make_tokenizer
from polyrag.retrieval.corpus import corpus_size


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    tokenizer = make_tokenizer(sm.wildcards.corpus_lang, stopwords=sm.params.retriever.get("stopwords", False))
    statistics = Statistics.gather(file_chunks(sm.input[0]), tokenizer, total=corpus_size(sm.input[0]))
    log_analysis(tokenizer)
    statistics.save(sm.output[0], tokenizer.settings())


run_logged(main, snakemake.log[0])  # noqa: F821
