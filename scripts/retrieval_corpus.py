"""Snakemake entry point of rule retrieval_corpus: one language's corpus (results/retrieval/corpora/
{corpus}/{lang}.parquet), read from its source, checked and cut into chunks as it is written
(polyrag.retrieval.corpus.build_corpus; MIRACL's downloaded: polyrag.retrieval.miracl)."""

import logging

from polyrag.logs import run_logged
from polyrag.retrieval.corpus import build_corpus


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    entry, lang = sm.params.corpus, sm.wildcards.corpus_lang
    passages = build_corpus(entry, lang, sm.output[0], sm.params.cache_dir, sm.params.demo)
    logging.getLogger("polyrag").info("%s: %d passages written (chunk_words %s)", lang, passages, entry["chunk_words"])


run_logged(main, snakemake.log[0])  # noqa: F821
