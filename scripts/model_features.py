"""Snakemake entry point of rules nli_features and reranker_features (one model over question,
passage and answer text): support_entailment/support_neutral, or reranker_score."""

from polyrag.features.table import read_aligned, write_features
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    options = sm.params.options
    records, answers = read_aligned(sm.input.questions, sm.input.answers)
    model_options = (options["model"], options["device"], options["batch_size"], options["max_length"])
    if sm.rule == "nli_features":
        from polyrag.features.support import NLIScorer, support_features

        rows, columns = support_features(NLIScorer(*model_options), records, answers), ["support_entailment", "support_neutral"]
    else:
        from polyrag.features.reranker import Reranker, reranker_features

        rows, columns = reranker_features(Reranker(*model_options), records, answers), ["reranker_score"]
    write_features(rows, columns, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
