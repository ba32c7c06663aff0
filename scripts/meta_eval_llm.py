"""Snakemake entry point of rule meta_eval_llm: results/meta_eval/{judge}/{memerag_lang}.parquet for
every MEMERAG language, with the judge opened once."""

import pandas as pd

from polyrag.llm import open_llm
from polyrag.logs import run_logged
from polyrag.meta_eval.llm_judge import llm_predictions


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings = sm.params.settings
    llm = open_llm(sm.wildcards.judge, sm.params.judge, cache_dir=sm.params.cache_dir,
                   seed=sm.params.seed, threads=sm.threads)
    try:
        for sentences, output in zip(sm.input, sm.output, strict=True):
            predictions = llm_predictions(llm, pd.read_parquet(sentences), settings["tasks"], settings["prompts"], settings)
            predictions.to_parquet(output, index=False)
    finally:
        llm.close()


run_logged(main, snakemake.log[0])  # noqa: F821
