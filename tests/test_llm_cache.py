"""The durable cache: hits never reach the backend, each response is stored as it arrives."""

from __future__ import annotations

import sqlite3

import pytest

from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.types import Request, Response


class Echo(Backend):
    """A deterministic backend that records what it was asked and can die mid-batch."""

    name = "echo"
    identity = "echo-1"

    def __init__(self, die_after: int | None = None):
        self.seen: list[str] = []
        self.die_after = die_after

    def stream(self, requests):
        for i, request in enumerate(requests):
            if self.die_after is not None and len(self.seen) >= self.die_after:
                raise KeyboardInterrupt("job killed")
            self.seen.append(request.messages[0]["content"])
            text = None if "fail" in request.messages[0]["content"] else request.messages[0]["content"].upper()
            yield i, Response(text=text, error=None if text else "boom", tokens=7 if text else None)


def chat(text: str, **sampling) -> Request:
    return Request(messages=[{"role": "user", "content": text}], **sampling)


def test_key_covers_input_model_and_sampling():
    base = chat("hi")
    assert base.cache_key("b", "m") == chat("hi").cache_key("b", "m")
    assert len({
        base.cache_key("b", "m"), base.cache_key("b", "m2"), base.cache_key("b2", "m"),
        chat("hi ").cache_key("b", "m"), chat("hi", temperature=0.7).cache_key("b", "m"),
        chat("hi", seed=1).cache_key("b", "m"), chat("hi", max_tokens=5).cache_key("b", "m"),
        Request(prompt="hi").cache_key("b", "m"),
    }) == 8
    # The question record travels to mock systems but does not change what a model is asked.
    assert chat("hi", context={"x": 1}).cache_key("b", "m") == base.cache_key("b", "m")


def test_cached_responses_skip_the_backend(tmp_path):
    requests = [chat(t) for t in ("a", "b", "fail c", "d")]
    first = LLM(Echo(), ResponseCache(tmp_path / "c.sqlite"))
    out = first.generate(requests)
    assert [r.text for r in out] == ["A", "B", None, "D"] and not any(r.cached for r in out)
    first.close()
    backend = Echo()
    again = LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert backend.seen == ["fail c"]  # errors are not cached: only they are asked again
    assert [r.cached for r in again] == [True, True, False, True]


def test_a_killed_job_keeps_what_returned(tmp_path):
    requests = [chat(t) for t in "abcdef"]
    with pytest.raises(KeyboardInterrupt):
        LLM(Echo(die_after=3), ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT response FROM responses").fetchall()
    assert sorted(r[0] for r in rows) == ["A", "B", "C"]
    backend = Echo()
    LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert backend.seen == ["d", "e", "f"]
