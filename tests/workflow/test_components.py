"""Retriever or generator? end to end (issue 41): mock generators crossed with passage sources,
fitted with a passages effect plus a generator effect (rule component_effects), shown in the
report.

Known truth. A grounded mock is right exactly when a relevant passage is among those given, so
two grounded generators (g1 given its questions' passages, g2 a passage file holding a relevant
passage for half of the questions, each with its closed-book and oracle baselines) give the same
answers wherever they are given the same passages: the generators are equal, and the passages
order closed-book (a refusal) < the half-relevant file < oracle, the question's passages (always
holding a relevant one) with the oracle. A mock with an error rate of 0.5 (given its questions'
passages; an error-rate mock takes no others) is the weaker generator. The only cycle of the
design (both generators' oracle and closed-book systems) holds identical answers, so the systems'
strengths add up exactly there and the interaction test finds nothing.
"""

from __future__ import annotations

import html
import json

import pytest

from polyrag.arena.components import read_components, report_note
from tests.helpers.workflow import run_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

FILE_50 = "resources/demo-retrieval/recall-50/{lang}.jsonl"


def components_config(repo, tmp_path):
    return {
        "languages": ["en", "de"], "seed": 42, "cache_dir": str(tmp_path / "cache"),
        "data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 12, "arena_queries": 12},
        "models": {
            "g1": {"backend": "mock", "grounded": True, "baselines": {"closed_book": "g1-cb", "oracle": "g1-oracle"}},
            "g2": {"backend": "mock", "grounded": True, "passages": {"file": str(repo / FILE_50)},
                   "baselines": {"closed_book": "g2-cb", "oracle": "g2-oracle"}},
            "e50": {"backend": "mock", "error_rate": 0.5},
        },
        "judges": {"reference": {"backend": "reference"}},
        "arena": {"judge": "reference", "surrogate": {"holdout_repeats": 5}},
    }


@pytest.fixture(scope="module")
def fitted(repo, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("components")
    run_config(repo, workdir, components_config(repo, workdir))
    return workdir


def test_the_fitted_effects_order_the_parts_as_the_mocks_are_built(fitted):
    table = read_components(fitted / "results/arena/reference/components.csv")
    effect = table.set_index(["factor", "level"])["effect"]
    passages = effect["passages"]
    assert set(passages.index) == {"closed_book", "oracle", "question", "file:recall-50/{lang}.jsonl"}
    assert passages["closed_book"] < passages["file:recall-50/{lang}.jsonl"] < passages["oracle"], passages
    assert passages["closed_book"] < passages["question"], passages
    generators = table[table["factor"] == "generator"].set_index("level")
    assert generators.loc["e50", "effect"] < min(generators.loc["g1", "effect"], generators.loc["g2", "effect"])
    for mine, other in (("g1", "g2"), ("g2", "g1")):  # equal generators: each interval holds the other's effect
        assert generators.loc[mine, "ci_low"] <= generators.loc[other, "effect"] <= generators.loc[mine, "ci_high"]
    assert generators.loc["g1", "systems"] == "g1 g1-cb g1-oracle" and (table["questions"] == 24).all()

    summary = json.loads((fitted / "results/arena/reference/components.json").read_text())
    assert summary["languages"] == ["en", "de"] and summary["n_questions"] == 24
    assert summary["interaction_df"] == 1 and summary["interaction_p_value"] > 0.5, summary
    assert summary["spread_passages"] > summary["spread_generator"]


def test_the_report_shows_the_verdict_and_the_effects(fitted):
    page = (fitted / "results/leaderboard.html").read_text(encoding="utf-8")
    summary = json.loads((fitted / "results/arena/reference/components.json").read_text())
    assert "<h3>Retriever or generator?</h3>" in page
    assert html.escape(report_note(summary)) in page
    table = read_components(fitted / "results/arena/reference/components.csv")
    section = page.split("<h3>Retriever or generator?</h3>")[1].split("<h3>")[0]
    for level in table["level"]:
        assert f"<td>{html.escape(level)}</td>" in section
    log = (fitted / "results/logs/arena/reference/components.log").read_text()
    assert summary["verdict"] in log
