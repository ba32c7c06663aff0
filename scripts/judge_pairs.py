"""Snakemake entry point of rules judge_pair, judge_pairs_local_model and judge_round: the games of
each pair in params.pairs (judge_round: of each pair of the round's units, on the round's questions
only), written to the pair's output (a file per pair, or per language for a judge on local
weights, or per round), with the judge opened once for all of them (polyrag.judge.kinds decides
how it judges). A judge that scores answers' languages reads them from the answers' deterministic
features (params.pairs' ``languages_a``/``languages_b``) instead of detecting them again. An LLM judge gets the pairs of one language in one batch (ordered by question: a
local model reads each question's passages once)."""

import logging

from polyrag.csv_tables import read_table
from polyrag.features.table import read_aligned
from polyrag.judge.play import arena_items, write_games
from polyrag.judge.kinds import open_pair_judge
from polyrag.judge.reference import with_answer_languages
from polyrag.logs import run_logged


def round_pairs(sm) -> list[dict]:
    """The pairs of a round (rule judge_round), each with the question ids of its units."""
    from polyrag.arena.adaptive import questions_by_pair  # here: it imports scipy.stats, 0.6 s a job

    units = read_table(sm.input.units)
    answers = dict(zip(sm.params.models, sm.input.answers))
    languages = dict(zip(sm.params.models, sm.input.languages))  # empty for a judge that reads none
    return [{"lang": sm.wildcards.lang, "model_a": a, "model_b": b, "questions": sm.input.questions,
             "answers_a": answers[a], "answers_b": answers[b], "output": sm.output[0], "query_ids": set(query_ids),
             **({"languages_a": languages[a], "languages_b": languages[b]} if languages else {})}
            for (a, b), query_ids in questions_by_pair(units).items()]


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    pairs = round_pairs(sm) if "units" in sm.input.keys() else sm.params.pairs
    if not pairs:  # a round after the arena stopped: nothing to judge, no judge to open
        write_games([], sm.output[0])
        return
    judge = open_pair_judge(sm.wildcards.judge, sm.params.judge, sm.params.cache_dir, sm.params.judging,
                            threads=sm.threads)
    games = {}  # output path: rows, in the order of the pairs
    try:
        by_language = {}
        for pair in pairs:
            by_language.setdefault(pair["lang"], []).append(pair)
        for lang, pairs in by_language.items():
            matchups = []
            for pair in pairs:
                logging.getLogger("polyrag").info("judging %s against %s in %s", pair["model_a"], pair["model_b"], lang)
                records, answers_a = read_aligned(pair["questions"], pair["answers_a"])
                _, answers_b = read_aligned(pair["questions"], pair["answers_b"])
                if "languages_a" in pair:  # detected once per answer, by its features job
                    answers_a = with_answer_languages(answers_a, pair["languages_a"], lang)
                    answers_b = with_answer_languages(answers_b, pair["languages_b"], lang)
                items = arena_items(records, answers_a, answers_b, sm.params.judging["max_questions"])
                if "query_ids" in pair:  # a round judges its units only
                    items = [item for item in items if str(item[0]["query_id"]) in pair["query_ids"]]
                matchups.append((pair["model_a"], pair["model_b"], items))
            for pair, rows in zip(pairs, judge.judge(lang, matchups)):
                games.setdefault(pair["output"], []).extend(rows)
    finally:
        judge.close()
    for output, rows in games.items():
        write_games(rows, output)


run_logged(main, snakemake.log[0])  # noqa: F821
