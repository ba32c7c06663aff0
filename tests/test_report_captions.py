"""The report's captions say how the numbers beside them are made (checked against the code that
makes them: polyrag/retrieval/metrics.py and polyrag/arena/bradley_terry.py)."""

from __future__ import annotations

import inspect
from pathlib import Path

from polyrag.arena import bradley_terry
from polyrag.retrieval import metrics

REPO = Path(__file__).resolve().parents[1]


def flat(path: str) -> str:
    return " ".join((REPO / path).read_text(encoding="utf-8").split())


def test_rank_range_captions_say_the_ranges_come_from_pairwise_tests_not_the_intervals_shown():
    """The retrieval ranks and the arena's come from the one max-|t| stepdown of every two
    estimates' difference (polyrag.stats.rank_ranges): neither from the intervals printed beside
    them (ranks 1-1 and 2-2 can sit beside overlapping intervals)."""
    assert "simultaneous_rank_ranges(" in inspect.getsource(metrics.rank_ranges)
    retrieval = flat("report/retrieval_leaderboard.rst")
    assert ("a run is surely ahead of another when the simultaneous interval of their nDCG@10 difference (the measure "
            "that orders them) lies above 0: a max-|t| stepdown over all pairs") in retrieval
    assert inspect.signature(metrics.retrieval_leaderboard).parameters["rank_measure"].default == "nDCG@10"
    assert "rank_ranges(point, samples" in inspect.getsource(bradley_terry.intervals_and_ranks)
    arena = flat("report/leaderboard.rst")
    assert ("a model is surely ahead of another when the simultaneous interval of their score difference (a max-|t| "
            "critical value over all pairs, stepdown, from the same bootstrap tournaments; docs/intervals.md) lies "
            "above 0") in arena
    table_script = flat("scripts/leaderboard_table.py")
    assert "from simultaneous intervals of every two models' score difference" in table_script
    for text in (retrieval, arena, table_script):
        assert "the ranks the intervals allow" not in text
