"""Snakemake entry point of rule embedding_features: embedding_similarity to the reference answer
(every language of one model)."""

from polyrag.features.embedding import e5_store, embedding_features
from polyrag.features.table import read_aligned_languages, write_features
from polyrag.logs import run_logged
from polyrag.progress import progress


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    store = e5_store(sm.params.cache_dir)
    # a line every 15 s for the whole job, languages done of all: one language's batch is often too
    # small for the embedding's own bar (texts already in the store are not embedded), so a long job
    # could log nothing for minutes
    with progress(total=len(sm.output), desc="embedding similarity", unit="language") as bar:
        for (records, answers), output in zip(read_aligned_languages(sm.input.questions, sm.input.answers), sm.output):
            write_features(embedding_features(records, answers, store), ["embedding_similarity"], output)
            bar.update(1)


run_logged(main, snakemake.log[0])  # noqa: F821
