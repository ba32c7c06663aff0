"""Snakemake entry point of rule encode_dense_shard: one shard of a corpus encoded by a dense
retriever's encoder (polyrag.retrieval.dense), its vectors and docids."""

from polyrag.config.retrieval import encoder_options
from polyrag.logs import run_logged
from polyrag.retrieval.corpus import read_corpus
from polyrag.retrieval.dense import encode_shard, make_encoder, shard_docids, threads, write_shard


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    threads(sm.threads)
    entry, shard = sm.params.retriever, int(sm.wildcards.shard)
    corpus = read_corpus(sm.input[0])
    encoder = make_encoder(entry["model"], **encoder_options(entry))
    vectors = encode_shard(corpus, shard, entry["shards"], encoder)
    write_shard(sm.output.vectors, vectors, shard_docids(corpus, shard, entry["shards"]), shard, entry["shards"],
                encoder.spec())


run_logged(main, snakemake.log[0])  # noqa: F821
