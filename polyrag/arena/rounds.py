"""The arena's judging budget in the workflow: which judges judge in rounds, how many rounds a
language gets, and each round's record (docs/adaptive_arena.md).

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

from polyrag.arena.adaptive import EXHAUSTIVE, AdaptiveSettings, exhaustive_units, parse_budget, planned_rounds
from polyrag.config.queries import judge_contestants, judged_models
from polyrag.judge.kinds import judges_scheduled
from polyrag.errors import ConfigError


def budget_spec(config: dict, lang: str) -> tuple[object, str]:
    """The budget of one language and the config key it comes from (for error messages)."""
    by_language = config["arena"]["budget_by_language"]
    if lang in by_language:
        return by_language[lang], f"arena.budget_by_language.{lang}"
    return config["arena"]["budget"], "arena.budget"


def budgeted(config: dict) -> bool:
    return any(budget_spec(config, lang)[0] != EXHAUSTIVE for lang in config["languages"])


def round_judges(config: dict) -> list[str]:
    """Judges that judge in rounds: under a budget, every judge called per pair (in every
    language: a language left ``exhaustive`` spends the whole design in rounds)."""
    if not budgeted(config):
        return []
    return judges_scheduled(config, "per_pair")


def settings_entry(config: dict) -> dict:
    """``arena.adaptive`` without ``joined``: the keyword arguments of ``AdaptiveSettings``, in
    sorted order (a rule's params: Snakemake reruns a job whose params read differently, and the
    schema fills defaults after the keys a config names, so the order follows the config)."""
    return {key: value for key, value in sorted(config["arena"]["adaptive"].items()) if key != "joined"}


def adaptive_settings(config: dict) -> AdaptiveSettings:
    return AdaptiveSettings(**settings_entry(config), alpha=config["arena"]["regularization"])


def joined(config: dict, judge: str) -> dict[str, int]:
    """The round at which each of this judge's contestants joins (0: from the start), checked:
    a model under ``arena.adaptive.joined`` must be judged."""
    late = config["arena"]["adaptive"].get("joined") or {}
    judged = judged_models(config)
    for model in late:
        if model not in judged:
            raise ConfigError(f"arena.adaptive.joined.{model}: not a judged model (models: with judge: true)")
    return {model: late.get(model, 0) for model in judge_contestants(config, judge)}


def models_at(config: dict, judge: str, round_index: int) -> list[str]:
    """The contestants in round ``round_index``: those that joined at or before it."""
    return [model for model, first in joined(config, judge).items() if first <= round_index]


def placement_round(config: dict, judge: str, round_index: int) -> bool:
    """Whether a model joins in this round (round 0 excepted): its arena_round needs the
    surrogate's predictions, fitted from every model's features."""
    return round_index > 0 and round_index in joined(config, judge).values()


def arena_questions(config: dict, judge: str) -> int:
    """The most arena questions a language can give this judge (the data may have fewer)."""
    limit = config["judges"][judge].get("max_questions")
    queries = config["data"]["arena_queries"]
    return queries if limit is None else min(queries, limit)


def judge_round_count(config: dict, judge: str, lang: str) -> int:
    """Rounds of one judge and language that can spend its budget (round 0 included): the budget
    computed with the most arena questions a language can have; a ConfigError names a bad key.
    With models joining later: the rounds of the models there from the start, or the last
    joining round plus the rounds that spend the whole budget from scratch (an upper bound:
    rounds after the budget is spent are empty and cost no call)."""
    spec, key = budget_spec(config, lang)
    settings, questions = adaptive_settings(config), arena_questions(config, judge)
    first = joined(config, judge)
    counts = []
    for start in sorted(set(first.values())):
        models = [model for model, joins in first.items() if joins <= start]
        units = parse_budget(spec, len(models), questions, key)
        counts.append((start + 1 if start else 0) + planned_rounds(units, len(models), settings))
    return max(counts)


def question_ids(questions: pd.DataFrame, max_questions: int | None) -> list[str]:
    """The arena questions of a data file, as ``polyrag.judge.games.arena_items`` takes them."""
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
