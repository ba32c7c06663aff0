"""Snakemake entry point of rules judge_pair, judge_pairs_local_model and judge_round: the games of
each pair in params.pairs (judge_round: of each pair of the round's units, on the round's questions
only), written to the pair's output (a file per pair, or per language for a judge on local
weights, or per round), with the judge opened once for all of them. An LLM judge gets the pairs of one
language in one batch (ordered by question: a local model reads each question's passages once)."""

import logging

import pandas as pd

from polyrag.features.embedding import e5_store
from polyrag.features.table import read_aligned
from polyrag.judge.games import arena_items, judge_pairs_with_llm, judge_with_reference, write_games
from polyrag.judge.recorded import recorded_games
from polyrag.llm import open_llm
from polyrag.logs import run_logged


def round_pairs(sm) -> list[dict]:
    """The pairs of a round (rule judge_round), each with the question ids of its units."""
    units = pd.read_csv(sm.input.units, dtype={"query_id": str})
    answers = dict(zip(sm.params.models, sm.input.answers))
    return [{"lang": sm.wildcards.lang, "model_a": a, "model_b": b, "questions": sm.input.questions,
             "answers_a": answers[a], "answers_b": answers[b], "output": sm.output[0],
             "query_ids": set(frame["query_id"])}
            for (a, b), frame in units.groupby(["model_a", "model_b"], sort=True)]


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    name, judge, cache_dir, judging = sm.wildcards.judge, sm.params.judge, sm.params.cache_dir, sm.params.judging
    pairs = round_pairs(sm) if "units" in sm.input.keys() else sm.params.pairs
    games = {} if pairs else {sm.output[0]: []}  # output path: rows, in the order of the pairs
    llm = None
    if judge["backend"] not in ("recorded", "reference") and pairs:
        llm = open_llm(name, judge, cache_dir=cache_dir, seed=judging["seed"])
    try:
        by_language = {}
        for pair in pairs:
            by_language.setdefault(pair["lang"], []).append(pair)
        for lang, pairs in by_language.items():
            matchups = []
            for pair in pairs:
                model_a, model_b = pair["model_a"], pair["model_b"]
                logging.getLogger("polyrag").info("judging %s against %s in %s", model_a, model_b, lang)
                records, answers_a = read_aligned(pair["questions"], pair["answers_a"])
                _, answers_b = read_aligned(pair["questions"], pair["answers_b"])
                items = arena_items(records, answers_a, answers_b, judging["max_questions"])
                if "query_ids" in pair:  # a round judges its units only
                    items = [item for item in items if str(item[0]["query_id"]) in pair["query_ids"]]
                if judge["backend"] == "recorded":
                    records = [record for record, _, _ in items]
                    games.setdefault(pair["output"], []).extend(
                        recorded_games(records, model_a, model_b, lang, judge, cache_dir))
                elif judge["backend"] == "reference":
                    games.setdefault(pair["output"], []).extend(
                        judge_with_reference(items, model_a, model_b, judge, e5_store(cache_dir)))
                else:
                    matchups.append((pair, items))
            if matchups:
                judged = judge_pairs_with_llm(llm, [(p["model_a"], p["model_b"], items) for p, items in matchups],
                                              judging)
                for (pair, _), rows in zip(matchups, judged):
                    games.setdefault(pair["output"], []).extend(rows)
    finally:
        if llm is not None:
            llm.close()
    for output, rows in games.items():
        write_games(rows, output)


run_logged(main, snakemake.log[0])  # noqa: F821
