"""Snakemake entry point of rule select_questions: results/data/{lang}.parquet."""

from polyrag.data.records import write_questions
from polyrag.data.select import select_questions
from polyrag.llm import open_llm
from polyrag.logs import run_logged


def main() -> None:
    params = snakemake.params  # noqa: F821 - provided by Snakemake
    config = {"data": params.data, "seed": params.seed, "cache_dir": params.cache_dir}
    time_filter = params.time_filter
    llm = None
    if time_filter:
        llm = open_llm(time_filter["name"], time_filter["entry"], cache_dir=params.cache_dir,
                       seed=params.seed, threads=snakemake.threads)  # noqa: F821
    try:
        records = select_questions(config, snakemake.wildcards.lang, time_filter_llm=llm)  # noqa: F821
    finally:
        if llm is not None:
            llm.close()
    write_questions(records, snakemake.output[0])  # noqa: F821


run_logged(main, snakemake.log[0])  # noqa: F821
