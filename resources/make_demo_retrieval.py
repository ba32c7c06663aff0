"""Write the demo's mock retrieval runs: per question, the docids a retriever of known recall gave.

    python resources/make_demo_retrieval.py

For each run (recall-83, recall-50, recall-17) and each language of resources/demo, every question
gets 3 of its own passages: its relevant ones and distractors when the run found it, 3 distractors
when it did not. A run finds 5, 3 and 1 of the 6 questions the demo config selects (seed 42,
max_questions 6: polyrag.data.records.subsample) and likewise of the 6 others, so that the share of
questions with a relevant passage is exactly 5/6, 1/2 and 1/6 of the demo's questions and of the
whole file; the questions a run finds are nested (a better run finds what a worse one finds), drawn
by a seeded permutation, the same in every language (the demo's questions are parallel). Every
docid is one of the question's own, judged passages. Passages are listed by docid only
(docs/systems.md: docids resolve among the question's passages).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from polyrag.data.demo import load_demo
from polyrag.data.records import subsample

HERE = Path(__file__).resolve().parent
LANGUAGES = ("ar", "de", "en", "es", "hi", "zh")
FOUND = {"recall-83": 5, "recall-50": 3, "recall-17": 1}  # questions found of every 6
GIVEN = 3  # passages per question
SEED, DEMO_QUESTIONS = 42, 6  # config.yaml's seed and data.max_questions


def found_questions(query_ids: list[str], selected: set[str]) -> dict[str, set[str]]:
    """Per run, the questions it finds: the first FOUND[run] of a seeded order of the selected
    questions, and of the others."""
    rng = np.random.default_rng(SEED)
    selected_order = [sorted(selected)[i] for i in rng.permutation(len(selected))]
    others = sorted(set(query_ids) - selected)
    other_order = [others[i] for i in rng.permutation(len(others))]
    return {run: set(selected_order[:n]) | set(other_order[:n]) for run, n in FOUND.items()}


def given_docids(record: dict, found: bool, rng: np.random.Generator) -> list[str]:
    relevant = [p["docid"] for p in record["passages"] if p["docid"] in set(record["relevant_docids"])]
    distractors = [p["docid"] for p in record["passages"] if p["docid"] not in set(relevant)]
    docids = (relevant if found else []) + distractors
    docids = docids[:GIVEN]
    return [docids[i] for i in rng.permutation(len(docids))]


def main() -> None:
    english = load_demo("en", HERE / "demo")
    selected = {r["query_id"] for r in subsample(english, DEMO_QUESTIONS, SEED, "questions")}
    runs = found_questions([r["query_id"] for r in english], selected)
    for run, found in runs.items():
        for lang in LANGUAGES:
            rng = np.random.default_rng([SEED, sorted(FOUND).index(run)])  # the same order in every language
            rows = [{"query_id": r["query_id"], "docids": given_docids(r, r["query_id"] in found, rng)}
                    for r in load_demo(lang, HERE / "demo")]
            path = HERE / "demo-retrieval" / run / f"{lang}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
