"""Snakemake entry point of rule dense_index: a dense retriever's shards gathered into one faiss index
(its index: type and parameters; ivf and ivf_pq trained on a sample drawn with the config's seed)."""

import logging

from polyrag.logs import run_logged
from polyrag.retrieval.dense import gather_shards, threads


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    threads(sm.threads)
    index = gather_shards(list(sm.input), sm.params.retriever["index"], seed=sm.params.seed)
    index.save(sm.output[0])
    logging.getLogger("polyrag").info("%d vectors, %s", len(index.docids),
                                      {k: v for k, v in index.settings.items() if k != "encoder"})


run_logged(main, snakemake.log[0])  # noqa: F821
