"""Snakemake entry point of rule meta_eval_summary: summary.csv, significance.csv, the figure."""

import pandas as pd

from polyrag.logs import run_logged
from polyrag.meta_eval.summary import fine_grained, judge_credibility, significance, summarise
from polyrag.plots.meta_eval import balanced_accuracy_bars
from polyrag.seeds import rng_for


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings = sm.params.settings
    columns = ["lang", "query_id", "sentence_id", "task", "prompt", "label", "prediction", "fine_grained_factuality"]
    predictions = pd.concat([pd.read_parquet(path, columns=columns).assign(evaluator=evaluator)
                             for evaluator in sm.params.evaluators for path in sm.input
                             if f"/meta_eval/{evaluator}/" in path], ignore_index=True)
    summary = summarise(predictions)
    tests = significance(predictions, summary, settings["permutations"], rng_for(sm.params.seed, "meta_eval", "permutation"))
    summary.to_csv(sm.output.summary, index=False)
    tests.to_csv(sm.output.significance, index=False)
    fine_grained(predictions).to_csv(sm.output.fine_grained, index=False)
    judge_credibility(summary, sm.params.judge_roles).to_csv(sm.output.credibility, index=False)
    balanced_accuracy_bars(summary, tests, sm.params.languages, sm.output.figure)


run_logged(main, snakemake.log[0])  # noqa: F821
