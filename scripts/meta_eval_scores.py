"""Snakemake entry point of rule meta_eval_scores: results/meta_eval/scores/{scorer}/{memerag_lang}.parquet
for every MEMERAG language, with the scorer's model loaded once."""

import pandas as pd

from polyrag.config.queries import feature_model_options
from polyrag.logs import run_logged
from polyrag.meta_eval.evaluators import mars_judge_scores, nli_scores, similarity_scores


def scorer_function(sm):
    """The scorer named by the wildcard, as a function of one language's sentences."""
    if sm.wildcards.scorer == "mars":
        from polyrag.mars.judges import load_judges

        judges = load_judges(["af", "ar"], sm.input.mars_judges, sm.params.mars_judge, sm.params.cache_dir)
        return lambda sentences: mars_judge_scores(sentences, judges, sm.params.tasks)
    if sm.wildcards.scorer == "nli":
        from polyrag.features.support import NLIScorer

        entry = sm.params.nli  # the nli feature's model entry
        nli = NLIScorer(entry["model"], **feature_model_options(entry))
        return lambda sentences: nli_scores(sentences, nli)
    from polyrag.features.embedding import e5_store

    store = e5_store(sm.params.cache_dir)
    return lambda sentences: similarity_scores(sentences, sm.params.tasks, store)


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    score = scorer_function(sm)
    for sentences, output in zip(sm.input.sentences, sm.output, strict=True):
        score(pd.read_parquet(sentences)).to_parquet(output, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
