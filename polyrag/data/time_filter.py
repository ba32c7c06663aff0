"""MEMERAG's optional filter: drop questions whose answer depends on when they are asked."""

from __future__ import annotations

import logging
import re

from polyrag.llm.client import LLM
from polyrag.llm.retry import ask_until_parsed
from polyrag.prompts import render

log = logging.getLogger(__name__)
ANSWER_TAG = re.compile(r"<answer>\s*(yes|no)\s*</answer>", re.IGNORECASE)


def parse_label(text: str | None) -> bool | None:
    """True for time-dependent, False for not, None when no label can be read (the last tag wins)."""
    labels = ANSWER_TAG.findall(text or "")
    return None if not labels else labels[-1].lower() == "yes"


def drop_time_dependent(records: list[dict], llm: LLM, seed: int, max_failure_fraction: float,
                        attempts: int = 3) -> list[dict]:
    """Keep questions the model labels not time-dependent; unreadable labels are retried, then kept.
    The filter is a model under models:, so generation.max_failure_fraction bounds its rejections."""
    prompts = [[{"role": "user", "content": render("data/time_filter.j2", query=r["query"])}] for r in records]
    labels = [r.value for r in ask_until_parsed(llm, prompts, parse_label, max_attempts=attempts,
                                                max_failure_fraction=max_failure_fraction,
                                                failure_setting="generation.max_failure_fraction", temperature=0.1,
                                                max_tokens=256, seed=seed, desc="time filter")]
    unreadable = sum(label is None for label in labels)
    dropped = sum(bool(label) for label in labels)
    log.info("time filter: %d of %d questions dropped as time-dependent, %d kept without a readable label",
             dropped, len(records), unreadable)
    return [record for record, label in zip(records, labels) if not label]
