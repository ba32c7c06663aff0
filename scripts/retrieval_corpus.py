"""Snakemake entry point of rule retrieval_corpus: one language's corpus (results/retrieval/corpora/
{corpus}/{lang}.parquet), read from its source, checked and cut into chunks (polyrag.retrieval.corpus)."""

import logging

from polyrag.logs import run_logged
from polyrag.retrieval.corpus import chunk_documents, demo_corpus, read_corpus, write_corpus


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    entry, lang = sm.params.corpus, sm.wildcards.corpus_lang
    if entry["source"] == "demo":
        documents = demo_corpus(lang, **sm.params.demo)
    else:
        documents = read_corpus(entry["file"].replace("{lang}", lang))
    corpus = chunk_documents(documents, words=entry["chunk_words"])
    write_corpus(corpus, sm.output[0])
    logging.getLogger("polyrag").info("%d documents, %d passages after chunking", len(documents), len(corpus))


run_logged(main, snakemake.log[0])  # noqa: F821
