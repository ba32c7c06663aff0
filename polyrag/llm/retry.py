"""Ask until the answer can be read: for judges and scorers whose output must hold a label."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polyrag.errors import TooManyFailures
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.client import LLM
from polyrag.llm.types import Request


@dataclass
class Parsed:
    value: Any  # None when no attempt could be read
    raw_output: str | None
    calls: int  # model calls this prompt accounts for (repeats of an identical prompt count 0)
    tokens: int
    rejected: bool = False  # the model rejected the last attempt's request (e.g. a prompt too long)


def attempt_request(prompt: list[dict[str, str]], attempt: int, *, temperature: float, max_tokens: int, seed: int,
                    response_prefix: str | None = None, stop: list[str] | None = None) -> Request:
    """The request of ``prompt`` at ``attempt`` (0: the first), as ``ask_until_parsed`` sends it
    (the ledger computes the same requests' cache keys)."""
    sampling = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed + attempt, "stop": list(stop or [])}
    if response_prefix:
        return Request(prompt=f"{messages_to_text(prompt)}\n\n{response_prefix}", **sampling)
    return Request(messages=prompt, **sampling)


def ask_until_parsed(
    llm: LLM,
    prompts: list[list[dict[str, str]]],
    parse: Callable[[str | None], Any],
    *,
    max_attempts: int,
    max_failure_fraction: float,
    failure_setting: str,
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
    reached, ``llm.generate`` raises ``LLMUnavailable`` and so does this function. When the model
    rejected more than ``max_failure_fraction`` of the prompts (at their last attempt) the job
    fails with ``TooManyFailures`` naming ``failure_setting``, the config key that sets it."""
    results = [Parsed(None, None, 0, 0) for _ in prompts]
    for attempt in range(max_attempts):
        todo = [i for i, r in enumerate(results) if r.value is None]
        if not todo:
            break
        requests = [attempt_request(prompts[i], attempt, temperature=temperature, max_tokens=max_tokens, seed=seed,
                                    response_prefix=response_prefix, stop=stop) for i in todo]
        for i, response in zip(todo, llm.generate(requests, desc=f"{desc}, attempt {attempt + 1}")):
            result = results[i]
            result.calls += response.calls
            result.tokens += response.cost_tokens
            text = (response_prefix or "") + response.text if response.ok else None
            result.raw_output = text if response.ok else f"error: {response.error}"
            result.rejected = not response.ok
            result.value = parse(text) if response.ok else None
    rejected = [r for r in results if r.rejected]
    if results and len(rejected) / len(results) > max_failure_fraction:
        raise TooManyFailures(
            f"{desc}: the model rejected {len(rejected)} of {len(results)} requests ({len(rejected) / len(results):.1%} "
            f"> {failure_setting} {max_failure_fraction:.1%}), e.g. {rejected[0].raw_output}"
        )
    return results
