"""Snakemake entry point of rule arena_round: the units (pair, question) of round k of a budgeted
judge and language, chosen from the games of rounds 0..k-1 (polyrag.arena.adaptive.next_round),
as rounds/round_{k}.csv, and the round's record (why, what it spends) as rounds/round_{k}.json."""

import json
import logging

import pandas as pd

from polyrag.arena.adaptive import AdaptiveSettings, UNIT_COLUMNS, next_round, parse_budget, played_units
from polyrag.arena.games import COLUMNS, read_games
from polyrag.arena.rounds import question_ids, round_record
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    k, lang, models = int(sm.wildcards.k), sm.wildcards.lang, sm.params.models
    questions = question_ids(pd.read_parquet(sm.input.questions), sm.params.max_questions)
    spec, key = sm.params.budget
    budget_units = parse_budget(spec, len(models), len(questions), key)
    settings = AdaptiveSettings(**sm.params.adaptive, alpha=sm.params.regularization)
    games = read_games(sm.input.games) if sm.input.games else pd.DataFrame(columns=COLUMNS)
    spent = len(played_units(games))
    units, reason = next_round(games, models, questions, budget_units, settings, sm.params.seed, lang, k)
    units = units.reindex(columns=[*UNIT_COLUMNS, "score"])
    record = round_record(k, reason, units, spent, budget_units, len(models), len(questions))
    logging.getLogger("polyrag").info(
        "%s round %d (%s): %d units on %d pairs; %d of %d units spent (%.1f%% of the exhaustive %d)",
        lang, k, reason, len(units), units.groupby(["model_a", "model_b"]).ngroups, record["spent_units"],
        budget_units, 100 * record["share_spent"], record["exhaustive_units"])
    units.to_csv(sm.output.units, index=False)
    with open(sm.output.record, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)


run_logged(main, snakemake.log[0])  # noqa: F821
