"""Snakemake entry point of rule encode_dense_shard: one shard of a corpus encoded by a dense
retriever's encoder (polyrag.retrieval.dense), its vectors and docids; only the shard's rows of the
corpus are read."""

from polyrag.config.retrieval import encoder_options
from polyrag.logs import run_logged
from polyrag.retrieval.dense import encode_corpus_shard, make_encoder, threads, write_shard


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    threads(sm.threads)
    entry, shard = sm.params.retriever, int(sm.wildcards.shard)
    encoder = make_encoder(entry["model"], **encoder_options(entry))
    vectors, docids = encode_corpus_shard(sm.input[0], shard, entry["shards"], encoder)
    write_shard(sm.output.vectors, vectors, docids, shard, entry["shards"], encoder.spec())


run_logged(main, snakemake.log[0])  # noqa: F821
