"""Snakemake entry point of rule bm25_shard: one shard of a corpus language's BM25 index, scored with the
whole corpus's statistics (polyrag.retrieval.bm25.build_shard)."""

from polyrag.logs import run_logged
from polyrag.retrieval.bm25 import build_shard, log_analysis


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    index = build_shard(sm.input.corpus, sm.input.statistics, int(sm.wildcards.shard), sm.params.retriever["shards"])
    log_analysis(index.tokenizer)
    index.save(sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
