"""Snakemake entry point of rule llm_features: answer_overlap_llm and fluency_llm (every language
of one model, with the judge opened once)."""

from polyrag.features.llm_scores import TEMPLATES, llm_scores
from polyrag.features.table import read_aligned_languages, write_features
from polyrag.llm import open_llm
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    options = sm.params.options
    settings = {key: options[key] for key in ("max_attempts", "max_failure_fraction", "temperature", "max_tokens")}
    settings["seed"] = sm.params.seed
    llm = open_llm(sm.params.judge["name"], sm.params.judge["entry"], cache_dir=sm.params.cache_dir,
                   seed=sm.params.seed, threads=sm.threads)
    try:
        for (records, answers), output in zip(read_aligned_languages(sm.input.questions, sm.input.answers), sm.output):
            write_features(llm_scores(llm, records, answers, settings), list(TEMPLATES), output)
    finally:
        llm.close()


run_logged(main, snakemake.log[0])  # noqa: F821
