"""What the rules ask of a config about systems' parts (polyrag.config.queries): each model's
passage source, and the contestants of a judge that cross passage sources and generators."""

from __future__ import annotations

import copy
import shutil

import pytest

from polyrag.arena.components import crossed_systems
from polyrag.config.queries import passage_sources
from polyrag.config.validate import validate_config

RECALL_83 = "resources/demo-retrieval/recall-83/{lang}.jsonl"


@pytest.fixture
def config(repo, monkeypatch):
    monkeypatch.chdir(repo)
    return {
        "languages": ["en", "de"], "seed": 1,
        "data": {"source": "demo", "max_questions": 4},
        "models": {
            "gen-a": {"backend": "mock", "grounded": True, "passages": {"file": RECALL_83},
                      "baselines": ["closed_book", "oracle"]},
            "gen-b": {"backend": "mock", "grounded": True, "passages": {"file": RECALL_83},
                      "baselines": ["closed_book"]},
            "gen-c": {"backend": "mock", "error_rate": 0.2},
        },
        "judges": {"reference": {"backend": "reference"}},
        "retrieval": {"corpora": {"demo": {"source": "demo"}},
                      "retrievers": {"bm25": {"kind": "bm25", "corpus": "demo"}}},
        "systems": {"a-bm25": {"generator": "gen-a", "retriever": "bm25", "top_k": 3},
                    "b-bm25": {"generator": "gen-b", "retriever": "bm25", "top_k": 3}},
    }


def check(config, repo):
    return validate_config(copy.deepcopy(config), repo / "schemas" / "config.schema.yaml", source="my.yaml")


def test_each_models_passage_source(config, repo, tmp_path):
    resolved = check(config, repo)
    assert passage_sources(resolved) == {
        "gen-a": "file:recall-83/{lang}.jsonl", "gen-b": "file:recall-83/{lang}.jsonl", "gen-c": "question",
        "gen-a-closed-book": "closed_book", "gen-a-oracle": "oracle", "gen-b-closed-book": "closed_book",
        "a-bm25": "bm25@3", "b-bm25": "bm25@3"}
    # two files whose last two parts agree are told apart by their whole paths
    elsewhere = tmp_path / "recall-83"
    elsewhere.mkdir()
    for lang in config["languages"]:
        shutil.copy(repo / RECALL_83.format(lang=lang), elsewhere / f"{lang}.jsonl")
    config["models"]["gen-c"] = {"backend": "mock", "grounded": True,
                                 "passages": {"file": f"{elsewhere}/{{lang}}.jsonl"}}
    sources = passage_sources(check(config, repo))
    assert sources["gen-c"] == f"file:{elsewhere}/{{lang}}.jsonl" and sources["gen-a"] == f"file:{RECALL_83}"


def test_the_crossed_contestants_of_a_judge(config, repo):
    resolved = check(config, repo)
    cells = crossed_systems(resolved, "reference")
    # gen-c answers from its questions' passages, which no other generator is given: not connected
    assert sorted(cells) == ["a-bm25", "b-bm25", "gen-a", "gen-a-closed-book", "gen-a-oracle", "gen-b",
                             "gen-b-closed-book"]
    assert cells["gen-b-closed-book"] == ("closed_book", "gen-b") and cells["a-bm25"] == ("bm25@3", "gen-a")
    # a judge whose contestants do not cross (gen-b given one source) gets none
    config["judges"]["narrow"] = {"backend": "reference",
                                  "contestants": ["gen-a", "gen-a-closed-book", "gen-a-oracle", "gen-b"]}
    assert crossed_systems(check(config, repo), "narrow") == {}
