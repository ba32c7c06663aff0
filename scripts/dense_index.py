"""Snakemake entry point of rule dense_index: a dense retriever's shards gathered into one faiss index."""

from polyrag.logs import run_logged
from polyrag.retrieval.dense import gather_shards


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    gather_shards(list(sm.input), sm.params.retriever["index"]).save(sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
