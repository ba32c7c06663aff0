"""MEMERAG's optional filter: drop questions whose answer depends on when they are asked."""

from __future__ import annotations

import logging
import re

from polyrag.llm.client import LLM
from polyrag.llm.types import Request
from polyrag.prompts import render

log = logging.getLogger(__name__)
ANSWER_TAG = re.compile(r"<answer>\s*(yes|no)\s*</answer>", re.IGNORECASE)


def parse_label(text: str | None) -> bool | None:
    """True for time-dependent, False for not, None when no label can be read (the last tag wins)."""
    labels = ANSWER_TAG.findall(text or "")
    return None if not labels else labels[-1].lower() == "yes"


def drop_time_dependent(records: list[dict], llm: LLM, seed: int, attempts: int = 3) -> list[dict]:
    """Keep questions the model labels not time-dependent; unreadable labels are retried, then kept."""
    labels: dict[int, bool | None] = dict.fromkeys(range(len(records)))
    for attempt in range(attempts):
        todo = [i for i, label in labels.items() if label is None]
        if not todo:
            break
        requests = [
            Request(messages=[{"role": "user", "content": render("data/time_filter.j2", query=records[i]["query"])}],
                    temperature=0.0 if attempt == 0 else 0.1, max_tokens=256, seed=seed + attempt)
            for i in todo
        ]
        for i, response in zip(todo, llm.generate(requests, desc="time filter")):
            labels[i] = parse_label(response.text) if response.ok else None
    unreadable = sum(1 for label in labels.values() if label is None)
    dropped = sum(1 for label in labels.values() if label)
    log.info("time filter: %d of %d questions dropped as time-dependent, %d kept without a readable label",
             dropped, len(records), unreadable)
    return [record for i, record in enumerate(records) if not labels[i]]
