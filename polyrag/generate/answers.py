"""The generation stage: prompts for every question, one batch through the LLM layer, parsed answers."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.data.records import PASSAGE
from polyrag.errors import TooManyFailures
from polyrag.generate.parsing import parse_plain, parse_sectioned
from polyrag.generate.prompts import ANSWER_FORMAT, answer_messages, refusal
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.client import LLM
from polyrag.llm.types import Request
from polyrag.seeds import rng_for

log = logging.getLogger(__name__)

SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("raw_output", pa.string()),
        ("reason", pa.string()),
        ("answer", pa.string()),
        ("cited_docids", pa.list_(pa.string())),
        ("error", pa.string()),
        # The passages the system was given, and where they came from (``file``: a system read from
        # files, polyrag.systems.answer_files).
        ("passages", pa.list_(PASSAGE)),
        ("passage_source", pa.string()),
    ]
)


def foreign_answers(records: list[dict], foreign: list[dict], *seed_parts: object) -> dict[str, str]:
    """A reference answer in another language for every question: the parallel question's when
    the data are parallel (same query_id), otherwise a seeded pick among the foreign answers."""
    by_id = {r["query_id"]: r["reference_answer"] for r in foreign if r.get("reference_answer")}
    pool = sorted(by_id.values())
    if not pool:
        return {}
    rng = rng_for("foreign", *seed_parts)
    return {r["query_id"]: by_id.get(r["query_id"]) or pool[int(rng.integers(len(pool)))] for r in records}


def build_requests(records: list[dict], settings: dict, foreign: dict[str, str] | None = None) -> list[Request]:
    style = settings["prompt"]
    requests = []
    for record in records:
        context = {
            **record,
            "answer_format": ANSWER_FORMAT[style],
            "refusal": refusal(record["language"]),
            "foreign_answer": (foreign or {}).get(record["query_id"]),
        }
        messages = answer_messages(style, record)
        prefix = settings.get("response_prefix")
        prompt = {"prompt": f"{messages_to_text(messages)}\n\n{prefix}"} if prefix else {"messages": messages}
        requests.append(
            Request(
                **prompt,
                temperature=settings["temperature"],
                max_tokens=settings["max_tokens"],
                seed=settings["seed"],
                stop=list(settings.get("stop", [])),
                context=context,
            )
        )
    return requests


def generate_answers(llm: LLM, records: list[dict], settings: dict, foreign: dict[str, str] | None = None) -> list[dict]:
    """One answer row per question. A request the model rejected (e.g. a prompt longer than its
    context) is a row with ``error`` set, and the job fails when more than
    ``max_failure_fraction`` were; a model that cannot be reached raises ``LLMUnavailable``."""
    requests = build_requests(records, settings, foreign)
    responses = llm.generate(requests, desc=f"answers ({llm.backend.identity})")
    parse = parse_sectioned if ANSWER_FORMAT[settings["prompt"]] == "sections" else parse_plain
    rows, failed = [], 0
    for record, response in zip(records, responses):
        docids = [p["docid"] for p in record["passages"]]
        if not response.ok:
            failed += 1
            rows.append({"query_id": record["query_id"], "raw_output": None, "reason": None, "answer": None,
                         "cited_docids": [], "error": f"llm: {response.error}"})
            continue
        raw_output = (settings.get("response_prefix") or "") + response.text
        parsed = parse(raw_output, docids)
        rows.append({
            "query_id": record["query_id"],
            "raw_output": raw_output,
            "reason": parsed.reason,
            "answer": parsed.answer,
            "cited_docids": parsed.cited_docids,
            "error": f"parse: {parsed.error}" if parsed.error else None,
        })
    unparsed = sum(1 for row in rows if row["error"] and row["error"].startswith("parse:"))
    log.info("%d answers: %d requests rejected, %d unparseable outputs (kept with an error)", len(rows), failed, unparsed)
    allowed = settings["max_failure_fraction"]
    if rows and failed / len(rows) > allowed:
        first = next(row["error"] for row in rows if row["error"] and row["error"].startswith("llm:"))
        raise TooManyFailures(
            f"the model rejected {failed} of {len(rows)} requests ({failed / len(rows):.1%} > "
            f"generation.max_failure_fraction {allowed:.1%}), e.g. {first}"
        )
    return rows


def write_answers(rows: list[dict], path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
