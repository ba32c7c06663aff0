"""The arena under a judging budget, end to end (real Snakemake, mock systems, the reference
judge): the rounds are jobs of the dry run, and half of the judge calls give the exhaustive
leaderboard's order of the mock systems in every language."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from tests.helpers.workflow import scheduled_jobs, snakemake, tiny_config

LANGUAGES = ("en", "hi")
# Four mock systems whose corrupted shares order them; 12 arena questions (every demo question).
MOCKS = {f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 20, 50, 80)}
DATA = {"max_questions": 12, "arena_queries": 12}
# as configs/demo-budget.yaml, and 2 placement opponents for a model joining later
BUDGET = {"budget": {"share": 0.5}, "adaptive": {"block": 3, "bootstrap": 0, "neighbours": 2}}


NEWCOMER = {"mock-35": {"backend": "mock", "error_rate": 0.35}}
# after rounds 0-2, mock-35 joins in round 3 and plays first its 2 predicted neighbours, 3 questions each
JOINED = {"budget": {"share": 0.5}, "adaptive": {"block": 3, "bootstrap": 0, "neighbours": 2, "joined": {"mock-35": 3}}}


def budget_config(repo, workdir, budget=True, newcomer=False):
    # no embedding features: the arena is under test, and one e5 load per model job is most of its cost
    config = tiny_config(repo, workdir, languages=LANGUAGES, features={"embedding_similarity": False}, **MOCKS,
                         **(NEWCOMER if newcomer else {}))
    config["data"].update(DATA)
    config["arena"].update((JOINED if newcomer else BUDGET) if budget else {})
    (workdir / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
    return config


@pytest.mark.slow
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
    # a model joining in round 3: 5 models x 12 questions, half is 60 units = 15 + 23 + 22 from
    # scratch, so rounds 3 (placement) to 6 can spend it
    budget_config(repo, tmp_path, newcomer=True)
    dry = snakemake(repo, tmp_path, "-n")
    assert scheduled_jobs(dry.stdout)["arena_round"] == 7 * len(LANGUAGES)
    placing = [block for block in dry.stdout.split("\n\n") if "output: results/arena/reference/en/rounds/round_3.csv" in block]
    assert "results/features/mock-35/en.parquet" in placing[0]  # the surrogate predicts its neighbours
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
        assert len(games) == 2 * len(units) == exhaustive_calls // 2  # both orders of each unit: the budget
        record = json.loads((rounds / "round_2.json").read_text())
        assert record["share_spent"] == len(units) / (exhaustive_calls // 2)
        assert budgeted.loc[budgeted["lang"] == lang, "share_spent"].eq(record["share_spent"]).all()
        bt = pd.read_csv(tmp_path / "results" / "arena" / "reference" / lang / "bradley_terry.csv")
        assert bt["games"].sum() == 2 * len(games)  # every valid game counts for both its models
    assert board["share_spent"].iloc[0] == pytest.approx(budgeted.groupby("lang")["share_spent"].first().mean(), rel=1e-3)  # 4 significant digits
    assert board.set_index("model")["games"].sum() == budgeted["games"].sum()

    # mock-35 joins: the rounds already judged are not rerun, its first games are against 2 neighbours
    budget_config(repo, tmp_path, newcomer=True)
    dry = snakemake(repo, tmp_path, "-n")
    jobs = scheduled_jobs(dry.stdout)
    assert jobs["arena_round"] == jobs["judge_round"] == 4 * len(LANGUAGES)  # rounds 3-6
    assert not re.search(r"output: results/arena/reference/\w+/rounds/round_[012]\.csv", dry.stdout)
    result = snakemake(repo, tmp_path, "--cores", "2", "results/leaderboard.csv")
    assert result.returncode == 0, result.stderr[-3000:]
    for lang in LANGUAGES:
        rounds = tmp_path / "results" / "arena" / "reference" / lang / "rounds"
        placement = pd.read_csv(rounds / "round_3.csv")
        assert set(placement["reason"]) == {"placement"} and len(placement) == 2 * 3
        pairs = placement[["model_a", "model_b"]].drop_duplicates()
        assert len(pairs) == 2 and ((pairs == "mock-35").sum(axis=1) == 1).all()
        record = json.loads((rounds / "round_6.json").read_text())
        assert record["spent_units"] <= 60 and record["exhaustive_units"] == 10 * 12
    board = pd.read_csv(tmp_path / "results" / "leaderboard.csv").set_index("model")
    assert board.loc["mock-35", "games"] > 0 and board.loc["mock-35", "judged"]
