"""Snakemake entry point of rule meta_eval_scores: results/meta_eval/scores/{scorer}/{memerag_lang}.parquet."""

import pandas as pd

from polyrag.logs import run_logged
from polyrag.meta_eval.evaluators import mars_judge_scores, nli_scores, similarity_scores


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    sentences = pd.read_parquet(sm.input.sentences)
    if sm.wildcards.scorer == "mars":
        from polyrag.mars.judges import load_judges

        judges = load_judges(["af", "ar"], sm.input.mars_judges, sm.params.mars_judge, sm.params.cache_dir)
        scores = mars_judge_scores(sentences, judges, sm.params.tasks)
    elif sm.wildcards.scorer == "nli":
        from polyrag.features.support import NLIScorer

        nli = sm.params.nli
        scores = nli_scores(sentences, NLIScorer(nli["model"], batch_size=nli["batch_size"]))
    else:
        from polyrag.features.embedding import e5_store

        scores = similarity_scores(sentences, sm.params.tasks, e5_store(sm.params.cache_dir))
    scores.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
