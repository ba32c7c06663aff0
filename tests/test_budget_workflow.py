"""The arena under a judging budget, end to end (real Snakemake, mock systems, the reference
judge): the rounds are jobs of the dry run, and half of the judge calls give the exhaustive
leaderboard's order of the mock systems in every language."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from .test_workflow import scheduled_jobs, snakemake, tiny_config

LANGUAGES = ("en", "hi", "de")
# Four mock systems whose corrupted shares order them; 12 arena questions (every demo question).
MOCKS = {f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 20, 50, 80)}
DATA = {"max_questions": 12, "arena_queries": 12}
BUDGET = {"budget": {"share": 0.5}, "adaptive": {"block": 3}}  # as configs/demo-budget.yaml


def budget_config(repo, workdir, budget=True):
    config = tiny_config(repo, workdir, languages=LANGUAGES, **MOCKS)
    config["data"].update(DATA)
    config["arena"].update(BUDGET if budget else {})
    (workdir / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
    return config


def test_dry_run_shows_the_rounds(repo, tmp_path):
    budget_config(repo, tmp_path)
    dry = snakemake(repo, tmp_path, "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    jobs = scheduled_jobs(dry.stdout)
    # 4 models x 12 questions: 72 units, half is 36 = 12 (a 4-cycle x 3 questions) + 18 + 6
    assert jobs["arena_round"] == jobs["judge_round"] == 3 * len(LANGUAGES)
    assert "judge_pair" not in jobs  # the reference judge judges in rounds only
    outputs = set(re.findall(r"output: (results/arena/reference/en/rounds/round_\d+)\.csv", dry.stdout))
    assert outputs == {f"results/arena/reference/en/rounds/round_{k}" for k in range(3)}
    exhaustive = tmp_path / "exhaustive"
    exhaustive.mkdir()
    budget_config(repo, exhaustive, budget=False)
    jobs = scheduled_jobs(snakemake(repo, exhaustive, "-n").stdout)
    assert jobs["judge_pair"] == 6 and "arena_round" not in jobs and "judge_round" not in jobs


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_half_the_calls_give_the_exhaustive_order(repo, tmp_path):
    """Exhaustive first, then the same workdir under the budget (answers and features are reused)."""
    budget_config(repo, tmp_path, budget=False)
    result = snakemake(repo, tmp_path, "--cores", "2", "results/leaderboard.csv")
    assert result.returncode == 0, result.stderr[-3000:]
    exhaustive = pd.read_csv(tmp_path / "results" / "leaderboard_by_language.csv")
    assert "games" not in pd.read_csv(tmp_path / "results" / "leaderboard.csv").columns  # unchanged by default

    budget_config(repo, tmp_path)
    result = snakemake(repo, tmp_path, "--cores", "2", "results/leaderboard.csv")
    assert result.returncode == 0, result.stderr[-3000:]
    budgeted = pd.read_csv(tmp_path / "results" / "leaderboard_by_language.csv")
    board = pd.read_csv(tmp_path / "results" / "leaderboard.csv")
    exhaustive_calls = 2 * 6 * 12
    for lang in LANGUAGES:
        order = {name: table[table["lang"] == lang].sort_values("arena_logit", ascending=False)["model"].tolist()
                 for name, table in (("exhaustive", exhaustive), ("budget", budgeted))}
        assert order["budget"] == order["exhaustive"], lang
        rounds = tmp_path / "results" / "arena" / "reference" / lang / "rounds"
        units = pd.concat([pd.read_csv(rounds / f"round_{k}.csv") for k in range(3)])
        assert not units.duplicated(["model_a", "model_b", "query_id"]).any()  # no unit judged twice
        games = pd.concat([pd.read_parquet(tmp_path / "results" / "judgments" / "reference" / lang / "rounds" /
                                           f"round_{k}.parquet") for k in range(3)])
        assert len(games) == 2 * len(units) <= exhaustive_calls // 2  # both orders of each unit, within budget
        record = json.loads((rounds / "round_2.json").read_text())
        assert record["share_spent"] == len(units) / (exhaustive_calls // 2)
        assert budgeted.loc[budgeted["lang"] == lang, "share_spent"].eq(record["share_spent"]).all()
        bt = pd.read_csv(tmp_path / "results" / "arena" / "reference" / lang / "bradley_terry.csv")
        assert bt["games"].sum() == 2 * len(games)  # every valid game counts for both its models
    assert board["share_spent"].iloc[0] == pytest.approx(budgeted.groupby("lang")["share_spent"].first().mean())
    assert board.set_index("model")["games"].sum() == budgeted["games"].sum()
