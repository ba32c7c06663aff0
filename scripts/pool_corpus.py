"""Snakemake entry point of rule pool_corpus: several languages' corpora joined into one, each docid
prefixed with its language (polyrag.retrieval.corpus.pool_corpora)."""

import logging

from polyrag.logs import run_logged
from polyrag.retrieval.corpus import pool_corpora


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    passages = pool_corpora(dict(zip(sm.params.languages, sm.input)), sm.output[0])
    logging.getLogger("polyrag").info("%d passages of %s pooled", passages, ", ".join(sm.params.languages))


run_logged(main, snakemake.log[0])  # noqa: F821
