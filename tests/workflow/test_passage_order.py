"""Known truth for the passages a system is given, end to end: grounded mocks (right exactly when a
relevant passage is among those given) read the demo's retrieval runs of known recall
(resources/demo-retrieval), with the closed-book and oracle baselines of one of them; the arena must
rank them by the share of questions they were given a relevant passage for, and the check says so."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from tests.helpers.workflow import snakemake

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

RUNS = {"mock-recall-83": 5 / 6, "mock-recall-50": 3 / 6, "mock-recall-17": 1 / 6}


def test_grounded_mocks_rank_by_the_recall_of_the_passages_they_were_given(repo, tmp_path):
    models = {"mock-perfect": {"backend": "mock", "error_rate": 0.0}}
    for name in RUNS:
        models[name] = {"backend": "mock", "grounded": True,
                        "passages": {"file": str(repo / f"resources/demo-retrieval/{name.removeprefix('mock-')}/{{lang}}.jsonl")}}
    models["mock-recall-83"]["baselines"] = {"closed_book": "mock-closed-book", "oracle": "mock-oracle"}
    config = {  # the demo's questions (seed 42, 6 of 12), on which the runs' shares are exact
        "languages": ["en", "hi"], "seed": 42, "cache_dir": str(tmp_path / "cache"),
        "data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 6, "arena_queries": 6},
        "models": models, "judges": {"reference": {"backend": "reference"}},
        "arena": {"judge": "reference", "surrogate": {"holdout_repeats": 5}},
        "checks": {"passage_order": True},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(repo, tmp_path, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]

    # What each system was given, read back from its answers: the runs' shares, none, every relevant one.
    for lang in config["languages"]:
        questions = pd.read_parquet(tmp_path / f"results/data/{lang}.parquet").set_index("query_id")
        for name, share in {**RUNS, "mock-closed-book": 0.0, "mock-oracle": 1.0}.items():
            answers = pd.read_parquet(tmp_path / f"results/answers/{name}/{lang}.parquet")
            found = [bool({p["docid"] for p in passages} & set(questions.loc[q, "relevant_docids"]))
                     for q, passages in zip(answers["query_id"], answers["passages"])]
            assert sum(found) / len(found) == pytest.approx(share), (name, lang)
            # right exactly when a relevant passage was given: it then cites a relevant one, else none
            cites_relevant = [bool(set(cited) & set(questions.loc[q, "relevant_docids"]))
                              for q, cited in zip(answers["query_id"], answers["cited_docids"])]
            assert cites_relevant == found, (name, lang)

    board = pd.read_csv(tmp_path / "results/leaderboard.csv").set_index("model")["rank"]
    order = ["mock-oracle", "mock-recall-83", "mock-recall-50", "mock-recall-17", "mock-closed-book"]
    assert board[order].is_monotonic_increasing and board[order].is_unique, board.to_dict()
    assert board["mock-oracle"] == board["mock-perfect"] == 1  # the oracle answers every question right
    checks = pd.read_csv(tmp_path / "results/checks.csv")
    assert checks["check"].eq("passage_order").all() and checks["passed"].all(), checks.to_dict("records")
    assert "mock-oracle (1.00) > mock-recall-83 (0.83) > mock-recall-50 (0.50)" in checks.loc[0, "expected"]
