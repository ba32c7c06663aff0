"""Snakemake entry point of rule judge_pair: results/judgments/{judge}/{lang}/{model_a}__{model_b}.parquet."""

from polyrag.features.embedding import e5_store
from polyrag.features.table import read_aligned
from polyrag.judge.games import arena_items, judge_with_llm, judge_with_reference, write_games
from polyrag.judge.recorded import recorded_games
from polyrag.llm import open_llm
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    w, judge = sm.wildcards, sm.params.judge
    records, answers_a = read_aligned(sm.input.questions, sm.input.answers_a)
    _, answers_b = read_aligned(sm.input.questions, sm.input.answers_b)
    answers = (answers_a, answers_b)
    if judge["backend"] == "recorded":
        rows = recorded_games(records, w.model_a, w.model_b, w.lang, judge, sm.params.cache_dir)
    elif judge["backend"] == "reference":
        rows = judge_with_reference(arena_items(records, *answers), w.model_a, w.model_b, judge,
                                    e5_store(sm.params.cache_dir))
    else:
        llm = open_llm(w.judge, judge, cache_dir=sm.params.cache_dir, seed=sm.params.judging["seed"])
        try:
            rows = judge_with_llm(llm, arena_items(records, *answers), w.model_a, w.model_b, sm.params.judging)
        finally:
            llm.close()
    write_games(rows, sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
