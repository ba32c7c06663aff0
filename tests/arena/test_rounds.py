"""The judging budget in the workflow: which judges judge in rounds, how many, and what the
leaderboard says about the calls spent (polyrag.config.queries' budget queries, polyrag.arena.rounds,
polyrag.arena.leaderboard.with_budget)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from polyrag.arena.adaptive import AdaptiveSettings, round_units, round_zero_units
from polyrag.arena.leaderboard import with_budget
from polyrag.arena.rounds import adaptive_settings, judge_round_count, question_ids, round_record
from polyrag.config.queries import budget_spec, judge_contestants, round_judges
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError
from polyrag.judge.play import arena_items


@pytest.fixture
def demo_config(repo, monkeypatch):
    monkeypatch.chdir(repo)
    with open(repo / "config.yaml") as handle:
        return yaml.safe_load(handle)


def five_systems(config):
    """The demo's error-rate mocks and Gemma, without the grounded mocks, the baselines, the
    retrieved systems (and the check whose known truth they are)."""
    for name in ("mock-recall-83", "mock-recall-50", "mock-recall-17"):
        del config["models"][name]
    del config["systems"], config["retrieval"], config["models"]["gemma-270m"]["baselines"]
    del config["judges"]["cite-check"]["contestants"]
    config["checks"].update(passage_order=False)


def check(config, repo):
    return validate_config(copy.deepcopy(config), repo / "schemas" / "config.schema.yaml", source="my.yaml")


def test_exhaustive_is_the_default_and_judges_no_rounds(demo_config, repo):
    config = check(demo_config, repo)
    assert config["arena"]["budget"] == "exhaustive" and config["arena"]["budget_by_language"] == {}
    assert round_judges(config) == []
    assert adaptive_settings(config) == AdaptiveSettings(regularization=config["arena"]["regularization"])


def test_demo_budget_rounds(demo_config, repo):
    with open(repo / "configs" / "demo-budget.yaml") as handle:
        demo_config["arena"].update(yaml.safe_load(handle)["arena"])
    config = check(demo_config, repo)
    # the judges called per pair (reference, cite-check)
    assert sorted(round_judges(config)) == ["cite-check", "reference"]
    settings = adaptive_settings(config)
    assert settings.block == 3 and settings.criterion == "ranking"
    # reference judges 14 systems (the grounded mocks, baselines and retrieved systems included) x 6
    # questions: 546 units, half is 273 = 42 (a 14-cycle x 3 questions) + 63 + 95 + the 73 left of
    # round 3's 142; cite-check judges its 5 contestants: 60 units, half is 30 = 15 + the 15 left of
    # round 1's 23
    assert config["data"]["arena_queries"] == 6
    for judge, models, rounds_expected in (("reference", 14, 4), ("cite-check", 5, 2)):
        assert len(judge_contestants(config, judge)) == models
        budget = models * (models - 1) // 2 * 6 // 2
        spent, rounds = round_zero_units(models, settings), 1
        while spent < budget:
            spent, rounds = spent + round_units(models, settings, rounds), rounds + 1
        assert rounds == rounds_expected == judge_round_count(config, judge, "en")
    assert round_zero_units(14, settings) == 42 and round_units(14, settings, 1) == 63


def test_budget_by_language_overrides_and_bad_budgets_are_named(demo_config, repo):
    five_systems(demo_config)
    demo_config["arena"]["budget_by_language"] = {"zh": {"games": 40}}
    config = check(demo_config, repo)
    assert budget_spec(config, "zh") == ({"games": 40}, "arena.budget_by_language.zh")
    assert budget_spec(config, "en") == ("exhaustive", "arena.budget")
    assert round_judges(config) == ["reference", "cite-check"]  # one budgeted language puts the judges in rounds
    # 20 units: round 0 alone (5 pairs x 10 questions = 50 units) is cut to the budget
    assert judge_round_count(config, "reference", "zh") == 1
    assert judge_round_count(config, "reference", "en") == planned_exhaustive(config)
    too_small = copy.deepcopy(demo_config)
    too_small["arena"]["budget_by_language"] = {"zh": {"games": 6}}  # 3 units cannot connect 5 models
    with pytest.raises(ConfigError, match=r"arena.budget_by_language.zh: .* fewer than the 5"):
        judge_round_count(check(too_small, repo), "reference", "zh")
    for budget, message in (({"share": 1.5}, "arena.budget"), ({"share": 0.5, "games": 10}, "arena.budget"),
                            ("half", "arena.budget")):
        bad = copy.deepcopy(demo_config)
        bad["arena"]["budget"] = budget
        with pytest.raises(ConfigError, match=message):
            check(bad, repo)
    bad = copy.deepcopy(demo_config)
    bad["arena"]["adaptive"] = {"criterion": "fisher"}
    with pytest.raises(ConfigError, match="arena.adaptive.criterion"):
        check(bad, repo)


def planned_exhaustive(config):
    from polyrag.arena.adaptive import planned_rounds

    return planned_rounds(5 * 4 // 2 * 12, 5, adaptive_settings(config))


def test_question_ids_are_the_arena_items():
    questions = pd.DataFrame({"query_id": ["q1", "q2", "q3", "q4", "q5"], "arena": [True, False, True, True, True]})
    records = questions.to_dict("records")
    answers = [{"answer": "x"}] * len(records)
    for limit in (None, 2):
        expected = [item[0]["query_id"] for item in arena_items(records, answers, answers, limit)]
        assert question_ids(questions, limit) == expected
    assert question_ids(questions, 2) == ["q1", "q3"]


def test_round_record_counts_units_and_calls():
    units = pd.DataFrame({"model_a": ["a"] * 7, "model_b": ["b"] * 7, "query_id": list("abcdefg")})
    record = round_record(2, "ranking", units, 30, 60, 5, 12)
    assert record["spent_units"] == 37 and record["judge_calls"] == 74 and not record["budget_simulated"]
    assert record["exhaustive_units"] == 120 and record["share_spent"] == pytest.approx(37 / 120)
    # A judge that calls no language model spends nothing: the budget is a simulation, and says so.
    free = round_record(2, "ranking", units, 30, 60, 5, 12, free_judge=True)
    assert free["budget_simulated"] and free["judge_calls"] == 0 and free["simulated_judge_calls"] == 74


def test_with_budget_adds_games_and_share_spent():
    table = pd.DataFrame({"model": ["x", "y", "z"], "rank": [1, 2, 3]})
    by_language = pd.DataFrame({"model": ["x", "y", "z"] * 2, "lang": ["en"] * 3 + ["hi"] * 3, "rank": [1, 2, 3] * 2})
    bt = {"en": pd.DataFrame({"model": ["x", "y"], "games": [10, 6]}),  # z unjudged: surrogate only
          "hi": pd.DataFrame({"model": ["y", "x"], "games": [8, 4]})}
    records = {"en": {"share_spent": 0.5}, "hi": {"share_spent": 0.25}}
    table, by_language = with_budget(table, by_language, bt, records)
    assert table["games"].iloc[:2].tolist() == [14, 14]
    assert table["games"].isna().tolist() == [False, False, True]
    assert np.allclose(table["share_spent"], 0.375)
    en = by_language[by_language["lang"] == "en"].set_index("model")
    assert en.loc["x", "games"] == 10 and pd.isna(en.loc["z", "games"]) and (en["share_spent"] == 0.5).all()


def test_a_model_joining_later_keeps_the_earlier_rounds(demo_config, repo):
    from polyrag.config.queries import models_at, placement_round

    five_systems(demo_config)
    demo_config["data"].update(max_questions=12, arena_queries=12)  # 12 questions: rounds of 3 have room to grow
    demo_config["arena"]["budget"] = {"share": 0.5}
    demo_config["arena"]["adaptive"] = {"block": 3, "joined": {"mock-80": 3}}
    config = check(demo_config, repo)
    old = ["gemma-270m", "mock-20", "mock-50", "mock-perfect"]
    assert [models_at(config, "reference", k) for k in (0, 2)] == [old, old]
    assert models_at(config, "reference", 3) == sorted(old + ["mock-80"])
    assert [placement_round(config, "reference", k) for k in (0, 2, 3, 4)] == [False, False, True, False]
    # 4 models: 36 units in 3 rounds (12, 18, 6); 5 models from scratch: 60 units in 3 rounds
    # (15, 23, 22): the chain is round 3 (placement) plus 3 rounds, 7 in all
    assert judge_round_count(config, "reference", "en") == 7
    assert "joined" not in adaptive_settings(config).__dict__
    demo_config["arena"]["adaptive"]["joined"] = {"not-a-model": 2}
    with pytest.raises(ConfigError, match="arena.adaptive.joined.not-a-model: not a judged model"):
        judge_round_count(check(demo_config, repo), "reference", "en")


def test_round_params_do_not_depend_on_the_order_of_config_keys(demo_config, repo):
    from polyrag.config.queries import settings_entry

    demo_config["arena"]["adaptive"] = {"block": 3, "bootstrap": 0}
    first = settings_entry(check(demo_config, repo))
    demo_config["arena"]["adaptive"] = {"neighbours": 4, "bootstrap": 0, "block": 3, "joined": {"mock-80": 3}}
    second = settings_entry(check(demo_config, repo))
    assert list(first.items()) == list(second.items()) and "joined" not in second



def test_a_language_plans_its_rounds_for_the_models_that_answer_it(demo_config, repo):
    """Under a budget, a language's rounds are planned for the contestants that answer it: an
    English-only model (languages: [en]) is not one of Chinese's. Chinese's budget of 14 units connects
    the 14 systems that answer Chinese (a cycle through them), and would not connect 15."""
    demo_config["models"]["mock-en"] = {"backend": "mock", "error_rate": 0.3, "languages": ["en"]}
    demo_config["checks"]["mock_order"] = False  # two mocks of one error rate otherwise
    demo_config["arena"]["budget_by_language"] = {"zh": {"games": 28}}
    config = check(demo_config, repo)
    assert len(judge_contestants(config, "reference")) == 15
    assert judge_round_count(config, "reference", "zh") == 1
    demo_config["models"]["mock-en"]["languages"] = ["en", "zh"]
    with pytest.raises(ConfigError, match=r"arena.budget_by_language.zh: .* fewer than the 15"):
        judge_round_count(check(demo_config, repo), "reference", "zh")
