"""Ask until the answer can be read: for judges and scorers whose output must hold a label."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.client import LLM
from polyrag.llm.types import Request


@dataclass
class Parsed:
    value: Any  # None when no attempt could be read
    raw_output: str | None
    calls: int
    tokens: int


def ask_until_parsed(
    llm: LLM,
    prompts: list[list[dict[str, str]]],
    parse: Callable[[str | None], Any],
    *,
    max_attempts: int,
    temperature: float,
    max_tokens: int,
    seed: int,
    desc: str = "LLM requests",
    response_prefix: str | None = None,
    stop: list[str] | None = None,
) -> list[Parsed]:
    """Send every prompt; those whose output ``parse`` cannot read (None) are asked again, with a
    new seed per attempt so that a retry is a new sample rather than the same cached output.

    With ``response_prefix`` (for base models) each prompt becomes a plain-text completion ending
    in that prefix, which is put back in front of the output before parsing and recording it.

    Only an answer (or a request the model rejected) can end up unread: when the model cannot be
    reached, ``llm.generate`` raises ``LLMUnavailable`` and so does this function."""
    results = [Parsed(None, None, 0, 0) for _ in prompts]
    for attempt in range(max_attempts):
        todo = [i for i, r in enumerate(results) if r.value is None]
        if not todo:
            break
        sampling = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed + attempt, "stop": list(stop or [])}
        requests = [Request(prompt=f"{messages_to_text(prompts[i])}\n\n{response_prefix}", **sampling)
                    if response_prefix else Request(messages=prompts[i], **sampling) for i in todo]
        for i, response in zip(todo, llm.generate(requests, desc=f"{desc}, attempt {attempt + 1}")):
            result = results[i]
            result.calls += 1
            result.tokens += response.tokens or 0
            text = (response_prefix or "") + response.text if response.ok else None
            result.raw_output = text if response.ok else f"error: {response.error}"
            result.value = parse(text) if response.ok else None
    return results
