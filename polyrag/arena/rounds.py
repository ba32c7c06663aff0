"""The arena's judging budget in the workflow: how many rounds a language gets and each round's
record (docs/adaptive_arena.md). Which judges judge in rounds and which models each round has are
questions to the config (``polyrag.config.queries``: ``round_judges``, ``models_at``).

Under a budget (``arena.budget`` or ``arena.budget_by_language`` other than ``exhaustive``) every
judge called per pair (API, reference, recorded) judges in a static chain of rounds per language:
rule ``arena_round`` picks round k's units from the games of rounds 0..k-1
(``polyrag.arena.adaptive.next_round``) and rule ``judge_round`` judges them. The number of
rounds is fixed when the workflow is parsed (``planned_rounds``), so ``snakemake -n`` lists them;
a round after the budget is spent or the ranking settled is empty and costs no call. Judges on
local weights and panels stay exhaustive: a local judge's cost is one model load, not calls, and
a panel votes with its members' games, budgeted or not.
"""

from __future__ import annotations

import pandas as pd

from polyrag.arena.adaptive import AdaptiveSettings, exhaustive_units, parse_budget, planned_rounds
from polyrag.config.queries import answers_language, arena_questions, budget_spec, joined, settings_entry


def adaptive_settings(config: dict) -> AdaptiveSettings:
    return AdaptiveSettings(**settings_entry(config), regularization=config["arena"]["regularization"])


def judge_round_count(config: dict, judge: str, lang: str) -> int:
    """Rounds of one judge and language that can spend its budget (round 0 included): the budget
    computed with the most arena questions a language can have; a ConfigError names a bad key.
    With models joining later: the rounds of the models there from the start, or the last
    joining round plus the rounds that spend the whole budget from scratch (an upper bound:
    rounds after the budget is spent are empty and cost no call)."""
    spec, key = budget_spec(config, lang)
    settings, questions = adaptive_settings(config), arena_questions(config, judge)
    # the contestants that answer this language (a model with languages: plays only in its own)
    first = {model: joins for model, joins in joined(config, judge).items() if answers_language(config, model, lang)}
    counts = []
    for start in sorted(set(first.values())):
        models = [model for model, joins in first.items() if joins <= start]
        units = parse_budget(spec, len(models), questions, key)
        counts.append((start + 1 if start else 0) + planned_rounds(units, len(models), settings))
    return max(counts)


def question_ids(questions: pd.DataFrame, max_questions: int | None) -> list[str]:
    """The arena questions of a data file, as ``polyrag.judge.play.arena_items`` takes them."""
    ids = questions.loc[questions["arena"].astype(bool), "query_id"].astype(str).tolist()
    return ids if max_questions is None else ids[:max_questions]


def round_record(round_index: int, reason: str, units: pd.DataFrame, spent_before: int, budget_units: int,
                 n_models: int, n_questions: int, free_judge: bool = False) -> dict:
    """What ``rounds/round_{k}.json`` says: the units of the round, those spent once it is judged,
    the budget and the exhaustive design (units are (question, pair) judged in both orders).
    A judge that calls no language model (``free_judge``: the reference judge, recorded verdicts)
    spends nothing: its budget is a simulation of what a paying judge would be allowed, so it
    makes 0 ``judge_calls`` and the calls it stands for are ``simulated_judge_calls``."""
    spent = spent_before + len(units)
    total = exhaustive_units(n_models, n_questions)
    return {"round": round_index, "reason": reason, "units": len(units), "spent_units": spent,
            "budget_units": budget_units, "exhaustive_units": total, "share_spent": spent / total,
            "budget_simulated": free_judge, "judge_calls": 0 if free_judge else 2 * spent,
            "simulated_judge_calls": 2 * spent if free_judge else 0, "models": n_models, "questions": n_questions}
