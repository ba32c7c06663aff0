"""``nthakur/mirage-bench``: questions and passages parsed out of the MIRAGE prompt.

The ``prompt`` field reads ``Question: <q>\\n\\nContexts:\\n[docid] title - text\\n...\\n\\nInstruction: ...``.
Passages are located by their known docids (``positive_ids + negative_ids``), so a passage text
that spans lines or contains brackets is still cut at the right place.
"""

from __future__ import annotations

import re

from polyrag.data.hub import hub_rows
from polyrag.data.records import make_record, require
from polyrag.errors import DataError

QUESTION = re.compile(r"Question:\s*(.*?)\s*\n\s*\n\s*Contexts?:\s*\n", re.DOTALL)
INSTRUCTION = re.compile(r"\n\s*\n\s*Instruction:", re.DOTALL)


def split_title(body: str) -> tuple[str, str]:
    """``title - text`` into its parts (no title when the separator is absent)."""
    title, sep, text = body.partition(" - ")
    return (title.strip(), text.strip()) if sep and text.strip() else ("", body.strip())


def parse_prompt(prompt: str, docids: list[str], where: str) -> tuple[str, list[dict]]:
    match = QUESTION.search(prompt)
    if not match:
        raise DataError(f"{where}: no 'Question: ... Contexts:' block in the prompt")
    query = match.group(1).strip()
    end = INSTRUCTION.search(prompt, match.end())
    contexts = prompt[match.end() : end.start() if end else len(prompt)]
    starts = []
    for docid in docids:
        position = contexts.find(f"[{docid}]")
        if position < 0:
            raise DataError(f"{where}: docid {docid!r} from positive_ids/negative_ids is not in the prompt's contexts")
        starts.append((position, docid))
    starts.sort()
    passages = []
    for k, (position, docid) in enumerate(starts):
        stop = starts[k + 1][0] if k + 1 < len(starts) else len(contexts)
        title, text = split_title(contexts[position + len(docid) + 2 : stop])
        passages.append({"docid": docid, "title": title, "text": text})
    return query, passages


def load_mirage_bench(language: str, options: dict, directory: str | None, cache_dir: str) -> list[dict]:
    source, rows = hub_rows(options["dataset"], language, options["split"], options["revision"], directory, cache_dir)
    records = []
    for number, row in rows:
        require(row, ("query_id", "prompt", "positive_ids", "negative_ids"), source, number)
        positives = [str(d) for d in row["positive_ids"]]
        docids = positives + [str(d) for d in row["negative_ids"]]
        query, passages = parse_prompt(row["prompt"], docids, f"{source}: row {number}")
        records.append(make_record(source, number, query_id=row["query_id"], query=query, passages=passages,
                                   relevant_docids=positives, language=language))
    return records
