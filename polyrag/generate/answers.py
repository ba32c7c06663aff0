"""The generation stage: prompts for every question, one batch through the LLM layer, parsed answers."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.answer_parsing import parse_plain, parse_sectioned
from polyrag.data.records import PASSAGE
from polyrag.errors import DataError, TooManyFailures
from polyrag.generate.prompts import ANSWER_FORMAT, answer_messages, refusal
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.client import LLM
from polyrag.llm.types import Request
from polyrag.seeds import rng_for
from polyrag.systems.passages import DEFAULT_MODE, FILE, PARALLEL_DOCID, passages_for

log = logging.getLogger(__name__)

#: A passage as an answer records it: ``PARALLEL_DOCID`` true where polyrag's own retrieval took it
#: from the question data's parallel corpus (null otherwise; ``polyrag.systems.passages.judged_docids``).
ANSWER_PASSAGE = pa.struct([*PASSAGE, pa.field(PARALLEL_DOCID, pa.bool_())])
SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("raw_output", pa.string()),
        ("reason", pa.string()),
        ("answer", pa.string()),
        ("cited_docids", pa.list_(pa.string())),
        ("error", pa.string()),
        # What the system was given, in the order given (an empty list for closed-book), copied in
        # full so that an answer file is self-contained: what it saw beside what it said.
        ("passages", pa.list_(ANSWER_PASSAGE)),
        # question | oracle | closed_book | file | retriever:<name> (polyrag.systems.passages)
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


def passages_mode(settings: dict) -> str:
    """Which passages the system is given (``generation_settings``' ``passages``; default question):
    the answers' ``passage_source``, ``file`` for passages read from a file."""
    mode = settings.get("passages", DEFAULT_MODE)
    return FILE if isinstance(mode, dict) else mode


def given_passages(records: list[dict], settings: dict, from_file: dict[str, list[dict]] | None) -> list[list[dict]]:
    """Per question, the passages the system is given: read from its file (``from_file``, by query
    id) or those of its mode (``settings["passages"]``)."""
    mode = passages_mode(settings)
    if (mode == FILE) != (from_file is not None):
        raise ValueError("passages from a file need the file's passages (answer_files.given_from_file), and only they")
    return [from_file[r["query_id"]] if from_file is not None else passages_for(r, mode) for r in records]


def build_requests(records: list[dict], settings: dict, foreign: dict[str, str] | None = None,
                   from_file: dict[str, list[dict]] | None = None) -> list[Request]:
    """One request per question, its prompt built from the passages the system is given
    (``given_passages``); a mock system reads the same passages from its context."""
    style = settings["prompt"]
    requests = []
    for record, passages in zip(records, given_passages(records, settings, from_file)):
        given = {**record, "passages": passages}
        context = {
            **given,
            "answer_format": ANSWER_FORMAT[style],
            "refusal": refusal(record["language"]),
            "foreign_answer": (foreign or {}).get(record["query_id"]),
        }
        messages = answer_messages(style, given)
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


def generate_answers(llm: LLM, records: list[dict], settings: dict, foreign: dict[str, str] | None = None,
                     from_file: dict[str, list[dict]] | None = None, source: str | None = None) -> list[dict]:
    """One answer row per question, with the passages the system was given (``given_passages``).
    A citation counts only when it names one of those passages. A request the model rejected (e.g. a
    prompt longer than its context) is a row with ``error`` set, and the job fails when more than
    ``max_failure_fraction`` were; a model that cannot be reached raises ``LLMUnavailable``.
    ``source``: the rows' ``passage_source`` (``polyrag.config.queries.passage_source`` of the
    model's entry; default the passages mode of ``settings``)."""
    requests = build_requests(records, settings, foreign, from_file)
    responses = llm.generate(requests, desc=f"answers ({llm.backend.identity})")
    parse = parse_sectioned if ANSWER_FORMAT[settings["prompt"]] == "sections" else parse_plain
    mode = passages_mode(settings)
    rows, failed = [], 0
    for record, response, given in zip(records, responses, given_passages(records, settings, from_file)):
        shown = {"passages": given, "passage_source": source or mode}
        if not response.ok:
            failed += 1
            rows.append({"query_id": record["query_id"], "raw_output": None, "reason": None, "answer": None,
                         "cited_docids": [], "error": f"llm: {response.error}", **shown})
            continue
        raw_output = (settings.get("response_prefix") or "") + response.text
        parsed = parse(raw_output, [p["docid"] for p in given])
        rows.append({
            "query_id": record["query_id"],
            "raw_output": raw_output,
            "reason": parsed.reason,
            "answer": parsed.answer,
            "cited_docids": parsed.cited_docids,
            "error": f"parse: {parsed.error}" if parsed.error else None,
            **shown,
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
    """An answers file; every row names the passages its system was given and their source."""
    for row in rows:
        missing = [name for name in ("passages", "passage_source") if row.get(name) is None]
        if missing:
            raise DataError(f"{path}: the answer to question {row.get('query_id')!r} has no {' or '.join(missing)} "
                            "(an answer records what its system was given: an empty list for none)")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
