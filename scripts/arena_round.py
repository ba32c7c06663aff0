"""Snakemake entry point of rule arena_round: the units (pair, question) of round k of a budgeted
judge and language, chosen from the games of rounds 0..k-1 (polyrag.arena.adaptive.next_round),
as rounds/round_{k}.csv, and the round's record (why, what it spends) as rounds/round_{k}.json.
In a round where a model joins, the surrogate judge, fitted on the games so far, predicts every
model's logit from its features, and the newcomer plays its predicted neighbours first."""

import json
import logging

import pandas as pd

from polyrag.arena.adaptive import AdaptiveSettings, UNIT_COLUMNS, next_round, parse_budget, played_units
from polyrag.arena.bradley_terry import bradley_terry
from polyrag.arena.games import COLUMNS, read_games
from polyrag.arena.rounds import question_ids, round_record
from polyrag.arena.surrogate import surrogate
from polyrag.logs import run_logged
from polyrag.seeds import rng_for, stable_seed


def predicted_logits(sm, games: pd.DataFrame, models: list[str], settings: AdaptiveSettings) -> dict[str, float]:
    """The surrogate's logit of every model of the round, fitted on the games of the models that
    have some (the surrogate rule fits on the final arena, which depends on this round)."""
    judge, lang, seed = sm.wildcards.judge, sm.wildcards.lang, sm.params.seed
    playing = sorted(set(games["model_a"]) | set(games["model_b"]))
    table, bootstrap, tournaments = bradley_terry(games, playing, settings.regularization, settings.bootstrap or 100,
                                                  rng_for(seed, "placement-bootstrap", judge, lang))
    questions = pd.read_parquet(sm.input.questions, columns=["query_id", "arena"])
    features = {model: pd.read_parquet(path) for model, path in zip(models, sm.input.features)}
    entry = sm.params.surrogate
    # one held-out repeat: its metrics are not kept, the surrogate rule reports them
    predicted, _, _, _ = surrogate(features, table, bootstrap, tournaments,
                                   questions.loc[questions["arena"], "query_id"].astype(str).tolist(),
                                   entry["regressor"], entry["params"], entry["holdout_models"], 1,
                                   stable_seed(seed, "placement-surrogate", judge, lang) % 2**32)
    logging.getLogger("polyrag").info("surrogate ranking for placement: %s", ", ".join(
        f"{row.model} {row.predicted_logit:.3f}{'' if row.judged else ' (new)'}" for row in predicted.itertuples()))
    return dict(zip(predicted["model"], predicted["predicted_logit"]))


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    k, lang, models = int(sm.wildcards.k), sm.wildcards.lang, sm.params.models
    questions = question_ids(pd.read_parquet(sm.input.questions), sm.params.max_questions)
    spec, key = sm.params.budget
    budget_units = parse_budget(spec, len(models), len(questions), key)
    settings = AdaptiveSettings(**sm.params.adaptive, regularization=sm.params.regularization)
    games = read_games(sm.input.games) if sm.input.games else pd.DataFrame(columns=COLUMNS)
    spent = len(played_units(games))
    predicted = predicted_logits(sm, games, models, settings) if sm.params.surrogate else None
    units, reason = next_round(games, models, questions, budget_units, settings, sm.params.seed, lang, k, predicted)
    units = units.reindex(columns=[*UNIT_COLUMNS, "score"])
    record = round_record(k, reason, units, spent, budget_units, len(models), len(questions), sm.params.free_judge)
    if sm.params.free_judge:
        logging.getLogger("polyrag").warning(
            "judge %s calls no language model: its budget is a simulation of which units a paying judge would "
            "judge (round records: budget_simulated, simulated_judge_calls)", sm.wildcards.judge)
    logging.getLogger("polyrag").info(
        "%s round %d (%s): %d units on %d pairs; %d of %d units spent (%.1f%% of the exhaustive %d)",
        lang, k, reason, len(units), units.groupby(["model_a", "model_b"]).ngroups, record["spent_units"],
        budget_units, 100 * record["share_spent"], record["exhaustive_units"])
    units.to_csv(sm.output.units, index=False)
    with open(sm.output.record, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)


run_logged(main, snakemake.log[0])  # noqa: F821
