"""Snakemake entry point of rules nli_features and reranker_features (one model over question,
passage and answer text): support_entailment/support_neutral, or reranker_score. The feature
model is loaded once for every language of the answering model."""

from polyrag.config.queries import feature_model_options
from polyrag.features.table import read_aligned_languages, write_features
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    entry = sm.params.options
    if sm.rule == "nli_features":
        from polyrag.features.support import NLIScorer, support_features

        scorer, columns = NLIScorer(entry["model"], **feature_model_options(entry)), ["support_entailment", "support_neutral"]
        score = support_features
    else:
        from polyrag.features.reranker import Reranker, reranker_features

        scorer, columns = Reranker(entry["model"], **feature_model_options(entry)), ["reranker_score"]
        score = reranker_features
    for (records, answers), output in zip(read_aligned_languages(sm.input.questions, sm.input.answers), sm.output):
        write_features(score(scorer, records, answers), columns, output)


run_logged(main, snakemake.log[0])  # noqa: F821
