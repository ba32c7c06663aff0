"""Fit Bradley-Terry with the reference package ``mirage-bench`` 0.0.4 (``simulate_tournament``).

Runs inside its own environment (``make bench-arena`` builds ``.venv-mirage-bench`` with
``mirage-bench --no-deps`` plus only what the compared modules import: choix, datasets, tqdm),
called by ``bench_arena.py``:

    .venv-mirage-bench/bin/python benchmarks/reference/mirage_bench_bt_reference.py INPUT.json OUTPUT.json

INPUT holds ``models`` (the judged models, in index order), ``seed`` and ``runs``: each with a
``name``, a ``dataset`` folder (a local Hugging Face dataset whose config ``xx``, split ``dev``,
has the reference's columns ``query_id, model_A, model_B, verdict`` with ``A``/``B``/``Tie``) and
``tournaments`` (bootstrap tournaments; 0 for the point fit only). OUTPUT holds per run the
seconds of loading (``LLMJudge``), of the point fit (``simulate_tournament(-1, judge)``) and of
the tournaments (``simulate_tournament(len(questions), judge)`` each, resampling every question
with replacement as ``bradley_terry.py`` does), their parameters, and notes.

The package's ``__init__`` imports every generator client and ``leaderboard/__init__`` imports
scikit-learn (regression.py), so the parent packages are registered empty and only
``leaderboard/{bradley_terry,llm_judge,util}.py`` run, unchanged. ``choix.opt_pairwise`` is
wrapped to count how often the reference falls back to it (its I-LSR raised).
"""

from __future__ import annotations

import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from mirage_packages import register_empty_parents  # beside this script


def import_compared_modules():
    register_empty_parents("leaderboard")
    start = time.perf_counter()
    from mirage_bench.leaderboard import bradley_terry, llm_judge

    return bradley_terry, llm_judge, time.perf_counter() - start


def count_fallbacks(bradley_terry) -> dict:
    """Wrap the choix the reference module uses so that its opt_pairwise fallbacks are counted."""
    calls = {"opt_pairwise": 0}
    original = bradley_terry.choix.opt_pairwise

    def opt_pairwise(*args, **kwargs):
        calls["opt_pairwise"] += 1
        return original(*args, **kwargs)

    bradley_terry.choix.opt_pairwise = opt_pairwise
    return calls


def finite(params) -> list:
    """JSON-safe parameters: non-finite values as None."""
    return [float(p) if np.isfinite(p) else None for p in np.asarray(params, dtype=float)]


def run(bradley_terry, llm_judge, models: list[str], spec: dict, calls: dict) -> dict:
    notes = []
    start = time.perf_counter()
    judge = llm_judge.LLMJudge(spec["dataset"], model_names=models, language="xx", split="dev",
                               cache_dir=str(Path(spec["dataset"]) / "cache"))
    load = time.perf_counter() - start
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls["opt_pairwise"] = 0
        start = time.perf_counter()
        point, _ = bradley_terry.simulate_tournament(num_matches=-1, judge=judge)
        point_seconds = time.perf_counter() - start
        point_fallbacks = calls["opt_pairwise"]
        calls["opt_pairwise"] = 0
        samples = []
        start = time.perf_counter()
        for _ in range(spec["tournaments"]):
            params, _ = bradley_terry.simulate_tournament(num_matches=len(judge.question_ids), judge=judge)
            samples.append(finite(params))
        bootstrap_seconds = time.perf_counter() - start
    if point_fallbacks:
        notes.append("point fit: I-LSR raised, fell back to opt_pairwise (no regularisation)")
    if calls["opt_pairwise"]:
        notes.append(f"{calls['opt_pairwise']} of {spec['tournaments']} tournaments fell back to opt_pairwise")
    kinds = sorted({f"{w.category.__name__}: {str(w.message)[:80]}" for w in caught})
    notes.extend(f"warning {kind}" for kind in kinds)
    games = sum(len(list(judge.all_preference_pairs(q))) for q in judge.question_ids)
    return {"name": spec["name"], "load_seconds": load, "point_seconds": point_seconds,
            "bootstrap_seconds": bootstrap_seconds, "point": finite(point), "bootstrap": samples,
            "games_used": games, "questions": len(judge.question_ids), "notes": notes}


def main(input_path: str, output_path: str) -> None:
    spec = json.loads(Path(input_path).read_text())
    bradley_terry, llm_judge, import_seconds = import_compared_modules()
    # The reference draws questions with the unseeded `random` module, from list(set of ids)
    # (its order depends on PYTHONHASHSEED): seeded here so that a rerun is comparable.
    random.seed(spec["seed"])
    calls = count_fallbacks(bradley_terry)
    runs = [run(bradley_terry, llm_judge, spec["models"], one, calls) for one in spec["runs"]]
    Path(output_path).write_text(json.dumps({"import_seconds": import_seconds, "runs": runs}))


if __name__ == "__main__":
    main(*sys.argv[1:])
