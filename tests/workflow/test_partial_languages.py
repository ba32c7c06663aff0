"""A system that answers only some languages (``languages:``) in a tiny run: an English-only user
system file beside two languages' mocks runs to completion with no file, job or games of it in
Hindi, and the leaderboards rank it where it answered (docs/systems.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from tests.helpers.workflow import dry_run, scheduled_jobs, snakemake, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def english_answers(repo, folder):
    """The English-only system: each question's reference answer, which cites its relevant passage
    (the reference judge's best answer); no file for any other language."""
    questions = [json.loads(line) for line in (repo / "resources/demo/en.jsonl").read_text().splitlines() if line]
    (folder / "answers").mkdir()
    (folder / "answers/en.jsonl").write_text("".join(
        json.dumps({"query_id": q["query_id"], "answer": q["reference_answer"],
                    "passages": q["passages"]}) + "\n" for q in questions))


@pytest.fixture(scope="module")
def run(repo, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("partial")
    english_answers(repo, workdir)
    models = {
        "mock-0": {"backend": "mock", "error_rate": 0.0},
        "mock-50": {"backend": "mock", "error_rate": 0.5},
        "mock-90": {"backend": "mock", "error_rate": 0.9},
        "user-en": {"backend": "file", "answers": str(workdir / "answers/{lang}.jsonl"), "unknown": "ignore",
                    "languages": ["en"]},
    }
    # a second judge, a panel of both, and the label-anchored arena (the reference judge standing in
    # for people) beside the leaderboard's judge: each plans its pairs and units per language
    judges = {"reference": {"backend": "reference"},
              "cite-check": {"backend": "reference", "weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}},
              "panel": {"backend": "panel", "members": ["reference", "cite-check"]}}
    config = tiny_config(repo, workdir, checks={"mock_order": True}, judges=judges, **models)
    config["data"]["arena_queries"] = 4
    config["arena"]["human_labels"] = {"judge": "cite-check", "sample": {"count": 8}, "stand_in": "reference"}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    result = snakemake(repo, workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir, config


def test_it_has_files_and_games_only_in_its_language(run):
    workdir, _ = run
    results = workdir / "results"
    assert (results / "answers/user-en/en.parquet").is_file() and (results / "features/user-en/en.parquet").is_file()
    assert not (results / "answers/user-en/hi.parquet").exists() and not (results / "features/user-en/hi").exists()
    assert not (results / "features/user-en/hi.parquet").exists()
    manifest = json.loads((results / "answers/user-en/manifest.json").read_text())
    assert set(manifest["answers"]) == {"en"}
    games = {lang: pd.read_parquet(results / f"judgments/reference/{lang}/games.parquet") for lang in ("en", "hi")}
    played = {lang: set(g["model_a"]) | set(g["model_b"]) for lang, g in games.items()}
    assert "user-en" in played["en"] and "user-en" not in played["hi"]
    assert played["hi"] == {"mock-0", "mock-50", "mock-90"}
    assert not list((results / "judgments/reference/hi").glob("*user-en*"))
    bt = {lang: pd.read_csv(results / f"arena/reference/{lang}/bradley_terry.csv", dtype={"model": str}) for lang in ("en", "hi")}
    assert "user-en" in set(bt["en"]["model"]) and "user-en" not in set(bt["hi"]["model"])
    surrogate_hi = pd.read_csv(results / "arena/reference/hi/surrogate.csv", dtype={"model": str})
    assert "user-en" not in set(surrogate_hi["model"])
    for judge in ("cite-check", "panel"):  # every judge's games: in English only
        hi = pd.read_parquet(results / f"judgments/{judge}/hi/games.parquet")
        en = pd.read_parquet(results / f"judgments/{judge}/en/games.parquet")
        assert "user-en" not in set(hi["model_a"]) | set(hi["model_b"])
        assert "user-en" in set(en["model_a"]) | set(en["model_b"])
    style_hi = pd.read_csv(results / "arena/reference/hi/style_controlled.csv", dtype={"model": str})
    assert "user-en" not in set(style_hi["model"])
    tasks_hi = pd.read_csv(results / "human_labels/hi/key.csv", dtype=str)
    assert "user-en" not in set(tasks_hi.filter(like="model").stack())
    anchored = pd.read_csv(results / "arena/cite-check/hi/label_anchored.csv", dtype={"model": str})
    assert "user-en" not in set(anchored["model"])
    assert "user-en" in set(pd.read_csv(results / "arena/cite-check/all/label_anchored.csv", dtype={"model": str})["model"])


def test_the_leaderboards_rank_it_where_it_answered(run):
    workdir, _ = run
    board = pd.read_csv(workdir / "results/leaderboard_detailed.csv", dtype={"model": str, "languages": str})
    by_language = pd.read_csv(workdir / "results/leaderboard_by_language.csv", dtype={"model": str})
    rows = board.set_index("model")
    user = rows.loc["user-en"]
    assert user["languages"] == "en" and rows.loc["mock-0", "languages"] == "en,hi"
    # style-controlled: ranked over English too, not dropped
    assert pd.notna(user["rank_style_controlled"]) and pd.notna(user["score_style_controlled"])
    assert pd.isna(user["rank_hi"]) and user["rank_en"] == 1  # the reference answers: first in English
    # its overall score is its English logit: never below what it earns in English
    en_logit = by_language.query("model == 'user-en' and lang == 'en'")["arena_logit"].iloc[0]
    assert user["score"] == pytest.approx(en_logit)
    assert set(by_language.loc[by_language["model"] == "user-en", "lang"]) == {"en"}
    assert user["ci_low"] <= user["score"] <= user["ci_high"] and user["rank_best"] <= user["rank"] <= user["rank_worst"]
    short = pd.read_csv(workdir / "results/leaderboard.csv", dtype={"model": str, "languages": str})
    assert short.set_index("model").loc["user-en", "languages"] == "en"
    # the known-truth checks still pass with it in the run
    checks = pd.read_csv(workdir / "results/checks.csv")
    assert checks["passed"].all(), checks


def test_a_language_it_declares_and_lacks_is_still_refused_and_one_it_does_not_declare_is_not_required(run, repo):
    workdir, config = run
    entry = config["models"]["user-en"]
    (workdir / "config.yaml").write_text(yaml.safe_dump({**config, "models": {
        **config["models"], "user-en": {**entry, "languages": ["en", "hi"]}}}))
    result = snakemake(repo, workdir, "-n")
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "models.user-en.answers:" in message and "answers/hi.jsonl does not exist" in message
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    assert scheduled_jobs(dry_run(repo, workdir)) == {}  # as it was: nothing to do


def test_a_demo_run_plans_an_english_only_system_in_english_only(repo, tmp_path):
    """The demo's config with a user's English-only system: its jobs, MARS's included, read and
    write English only, and its pairs are judged in English only."""
    english_answers(repo, tmp_path)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"models": {"user-en": {
        "backend": "file", "answers": str(tmp_path / "answers/{lang}.jsonl"), "unknown": "ignore", "languages": ["en"]}}}))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-n", "--forceall",
                             "--configfile", str(repo / "config.yaml"), str(tmp_path / "mine.yaml")],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    output = result.stdout
    assert "results/answers/user-en/en.parquet" in output
    for lang in ("de", "hi", "zh"):
        assert f"results/answers/user-en/{lang}.parquet" not in output
        assert f"results/features/user-en/{lang}.parquet" not in output
        assert f"user-en/{lang}/" not in output and f"/{lang}/mock-20__user-en" not in output
    assert "results/judgments/reference/en/mock-20__user-en.parquet" in output
    assert "results/judgments/reference/de/mock-20__user-en.parquet" not in output
    assert "results/mars/scores/user-en.csv" in output
