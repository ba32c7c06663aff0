"""``answer_overlap_llm`` and ``fluency_llm``: 1-5 scores by an LLM with the MIRAGE-BENCH rubrics.

The score is the last ``[[n]]`` (n in 1-5) in the output; an output without one is asked again
up to ``max_attempts`` and then left null, never 0. Answer overlap needs a reference answer.
A scorer that cannot be reached fails the job (``LLMUnavailable``) instead of leaving nulls.
"""

from __future__ import annotations

import logging
import re

from polyrag.answer_parsing import strip_citations
from polyrag.generate.prompts import language_name
from polyrag.llm.client import LLM
from polyrag.llm.retry import ask_until_parsed
from polyrag.prompts import render
from polyrag.systems.passages import given_docids, question_docids

log = logging.getLogger(__name__)
SCORE = re.compile(r"\[\[\s*([1-5])\s*\]\]")
TEMPLATES = {"answer_overlap_llm": "features/answer_overlap.j2", "fluency_llm": "features/fluency.j2"}


def parse_score(text: str | None) -> int | None:
    found = SCORE.findall(text or "")
    return int(found[-1]) if found else None


def score_prompts(records: list[dict], answers: list[dict]) -> dict[str, list[tuple[int, list[dict[str, str]]]]]:
    """Per feature, ``(answer index, prompt)`` of every answer it scores: an answer that is empty (or,
    for answer_overlap_llm, a question without a reference answer) is not asked (the ledger counts these)."""
    prompts = {}
    for feature, template in TEMPLATES.items():
        jobs = []
        for k, (record, answer) in enumerate(zip(records, answers)):
            if not answer["answer"] or (feature == "answer_overlap_llm" and not record.get("reference_answer")):
                continue
            variables = {"query": record["query"], "answer": strip_citations(answer["answer"], given_docids(answer, record)),
                         "language_name": language_name(record["language"])}
            if feature == "answer_overlap_llm":  # the reference cites the question's passages
                variables["reference"] = strip_citations(record["reference_answer"], question_docids(record))
            jobs.append((k, [{"role": "user", "content": render(template, **variables)}]))
        prompts[feature] = jobs
    return prompts


def llm_scores(llm: LLM, records: list[dict], answers: list[dict], settings: dict) -> list[dict]:
    rows = [{"query_id": r["query_id"], **dict.fromkeys(TEMPLATES)} for r in records]
    for feature, jobs in score_prompts(records, answers).items():
        results = ask_until_parsed(llm, [prompt for _, prompt in jobs], parse_score, desc=feature,
                                   failure_setting="features.llm.max_failure_fraction", **settings)
        for (k, _), result in zip(jobs, results):
            rows[k][feature] = result.value
        unread = sum(r.value is None for r in results)
        log.info("%s: %d of %d answers scored, %d without a readable score after retries, %d without inputs",
                 feature, len(results) - unread, len(records), unread, len(records) - len(jobs))
    return rows
