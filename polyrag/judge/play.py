"""Playing the games of one pair of models on the arena questions: two per question, one per order.

Every pair is judged in both orders (A/B swapped) so that a judge's position bias cancels in
the Bradley-Terry fit; ``shown_first`` records the order. LLM verdicts that cannot be read are
asked again up to ``max_attempts`` and then recorded as ``invalid``: never dropped, never a tie.
A judge that cannot be reached is no verdict at all: ``LLMUnavailable`` fails the job, and its
rerun asks only the games whose responses are not cached yet.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.errors import DataError, TooManyFailures
from polyrag.features.embedding import embed
from polyrag.judge.reference import answer_scores, reference_letter
from polyrag.judge.verdicts import game_verdict, parse_verdict
from polyrag.llm.client import LLM
from polyrag.llm.retry import ask_until_parsed
from polyrag.generate.prompts import language_name
from polyrag.prompts import render
from polyrag.systems.passages import given_passages, passages_shown_to_compare

log = logging.getLogger(__name__)

SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("model_a", pa.string()),
    ("model_b", pa.string()),
    ("shown_first", pa.string()),
    ("verdict", pa.string()),
    ("raw_output", pa.string()),
    ("judge_calls", pa.int32()),
    ("judge_tokens", pa.int64()),
])


def arena_items(records: list[dict], answers_a: list[dict], answers_b: list[dict],
                max_questions: int | None = None) -> list[tuple[dict, dict, dict]]:
    """(question, answer of model_a, answer of model_b) for the arena sample (its first
    ``max_questions`` questions, in data order, when given); inputs aligned by question."""
    items = [(r, a, b) for r, a, b in zip(records, answers_a, answers_b) if r["arena"]]
    return items[:max_questions] if max_questions is not None else items


def shown_text(answer: dict) -> str:
    """What the judge reads: the parsed answer, or the raw output when none could be parsed."""
    return answer["answer"] if answer["answer"] is not None else (answer["raw_output"] or "")


def game_row(record, model_a, model_b, a_first, verdict, raw, calls, tokens) -> dict:
    return {"query_id": record["query_id"], "model_a": model_a, "model_b": model_b,
            "shown_first": model_a if a_first else model_b, "verdict": verdict, "raw_output": raw,
            "judge_calls": calls, "judge_tokens": tokens}


def judge_with_reference(items, model_a: str, model_b: str, options: dict, embed=embed) -> list[dict]:
    rows = []
    for record, answer_a, answer_b in items:
        # Only the similarity part reads the reference answer: a judge that gives it no weight
        # (citations and language) judges data without reference answers too.
        if options["weights"]["similarity"] and not record.get("reference_answer"):
            raise DataError(f"question {record['query_id']}: the reference judge needs a reference answer "
                            "(or weights.similarity: 0)")
        score_a, score_b = answer_scores(record, [answer_a, answer_b], options["weights"], embed)
        for a_first in (True, False):
            first, second = (score_a, score_b) if a_first else (score_b, score_a)
            letter = reference_letter(first, second, options["tie_margin"])
            raw = json.dumps({"letter": letter, model_a: score_a, model_b: score_b})
            rows.append(game_row(record, model_a, model_b, a_first, game_verdict(letter, a_first), raw, 0, None))
    return rows


#: Who was given a passage, in the judge's words (the first answer shown is assistant A).
GIVEN_TO = {"first": "A", "second": "B", "both": "A and B"}


def judge_prompt(record: dict, first: dict, second: dict) -> list[dict[str, str]]:
    """The judge's prompt for one game (``first`` shown as assistant A). Answers given the same
    passages get MIRAGE-BENCH's prompt with those passages, exactly as before answers recorded their
    passages (the LLM cache still answers it); answers given different passages (a baseline, another
    retriever) get the union, each passage naming the assistants that were given it."""
    first_given = given_passages(first, record)
    union = passages_shown_to_compare(first_given, given_passages(second, record))
    shared = union is None and bool(first_given)  # two closed-book answers: say that neither had any
    passages = first_given if shared else [{**p, "given_to": GIVEN_TO[p["given"]]} for p in union or []]
    content = render(
        "judge/mirage_pairwise.j2", query=record["query"], passages=passages, shared=shared,
        language_name=language_name(record["language"]), answer_a=shown_text(first), answer_b=shown_text(second),
    )
    return [{"role": "user", "content": content}]


def judge_pairs_with_llm(llm: LLM, matchups: list[tuple[str, str, list]], settings: dict) -> list[list[dict]]:
    """The games of each ``(model_a, model_b, items)``, all asked in one batch ordered by question:
    the prompts of one question share their start (instructions, question, passages), which a
    local model (llama.cpp, vLLM) then reads once rather than once per pair."""
    games = [(m, item, a_first) for m, (_, _, items) in enumerate(matchups) for item in items for a_first in (True, False)]
    first_seen = {}
    for _, (record, _, _), _ in games:
        first_seen.setdefault(record["query_id"], len(first_seen))
    games.sort(key=lambda game: first_seen[game[1][0]["query_id"]])  # stable: pairs and orders keep their order
    prompts = [judge_prompt(record, *((a, b) if a_first else (b, a))) for _, (record, a, b), a_first in games]
    names = ", ".join(f"{a} vs {b}" for a, b, _ in matchups[:3]) + (f" (+{len(matchups) - 3} pairs)" if len(matchups) > 3 else "")
    results = ask_until_parsed(
        llm, prompts, parse_verdict, max_attempts=settings["max_attempts"],
        max_failure_fraction=settings["max_failure_fraction"], failure_setting="judging.max_failure_fraction",
        temperature=settings["temperature"],
        max_tokens=settings["max_tokens"], seed=settings["seed"], desc=f"judge {names}",
        response_prefix=settings.get("response_prefix"), stop=settings.get("stop"),
    )
    rows: list[list[dict]] = [[] for _ in matchups]
    for (m, (record, _, _), a_first), r in sorted(zip(games, results), key=lambda done: done[0][0]):
        model_a, model_b, _ = matchups[m]
        rows[m].append(game_row(record, model_a, model_b, a_first, game_verdict(r.value, a_first), r.raw_output,
                                r.calls, r.tokens))
    for (model_a, model_b, _), pair_rows in zip(matchups, rows):
        invalid = sum(r["verdict"] == "invalid" for r in pair_rows)
        log.info("%s vs %s: %d games, %d invalid after %d attempts", model_a, model_b, len(pair_rows), invalid,
                 settings["max_attempts"])
        if pair_rows and invalid == len(pair_rows):
            raise TooManyFailures(
                f"the judge returned no readable verdict ([[A]], [[B]] or [[C]]) in any of the {len(pair_rows)} games "
                f"of {model_a} vs {model_b} after {settings['max_attempts']} attempts each"
            )
    return rows


def write_games(rows: list[dict], path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
