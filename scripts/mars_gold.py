"""Snakemake entry point of rule mars_gold: results/mars/gold/{pair}.parquet (XQuAD, with roles)."""

from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.mars.gold import gold_items


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    evaluated = {r["query_id"] for path in sm.input.evaluated for r in read_questions(path)}
    table = gold_items(
        sm.wildcards.pair, second_languages=sm.params.second_languages, directory=sm.params.gold["dir"],
        revision=sm.params.gold["revision"], cache_dir=sm.params.cache_dir, seed=sm.params.seed,
        few_shot=sm.params.few_shot, calibration_size=sm.params.calibration_size, exclude_ids=evaluated,
    )
    table.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
