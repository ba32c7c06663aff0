"""The durable cache: hits never reach the backend, each response is stored as it arrives."""

from __future__ import annotations

import sqlite3

import pytest

from polyrag.errors import LLMUnavailable
from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.types import Request, Response


class Echo(Backend):
    """A deterministic backend that records what it was asked and can die mid-batch."""

    name = "echo"
    identity = "echo-1"

    def __init__(self, die_after: int | None = None, down_after: int | None = None):
        self.seen: list[str] = []
        self.die_after = die_after
        self.down_after = down_after

    def stream(self, requests):
        for i, request in enumerate(requests):
            if self.die_after is not None and len(self.seen) >= self.die_after:
                raise KeyboardInterrupt("job killed")
            if self.down_after is not None and len(self.seen) >= self.down_after:
                raise LLMUnavailable("connection refused")
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


def test_calls_and_tokens_count_each_distinct_request_once(tmp_path):
    """Duplicates in a batch are one call; a cache hit reports the tokens it cost when it was made,
    so the cost of a result is the same computed fresh or read back (issue: judge tokens +33%)."""
    requests = [chat(t) for t in ("a", "b", "a", "c", "a", "b")]
    backend = Echo()
    fresh = LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert backend.seen == ["a", "b", "c"]
    assert [r.calls for r in fresh] == [1, 1, 0, 1, 0, 0]
    assert sum(r.cost_tokens for r in fresh) == 7 * len(backend.seen)
    again = LLM(Echo(), ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert all(r.cached for r in again)
    assert [(r.calls, r.cost_tokens) for r in again] == [(r.calls, r.cost_tokens) for r in fresh]
    assert [r.text for r in again] == [r.text for r in fresh] == ["A", "B", "A", "C", "A", "B"]


def test_a_killed_job_keeps_what_returned(tmp_path):
    requests = [chat(t) for t in "abcdef"]
    with pytest.raises(KeyboardInterrupt):
        LLM(Echo(die_after=3), ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT response FROM responses").fetchall()
    assert sorted(r[0] for r in rows) == ["A", "B", "C"]
    backend = Echo()
    LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert backend.seen == ["d", "e", "f"]


def test_an_outage_fails_after_caching_what_arrived(tmp_path):
    requests = [chat(t) for t in "abcdef"]
    with pytest.raises(LLMUnavailable, match=r"^outage test: connection refused; 2 of 6 new responses arrived"):
        LLM(Echo(down_after=2), ResponseCache(tmp_path / "c.sqlite")).generate(requests, desc="outage test")
    backend = Echo()
    out = LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert backend.seen == ["c", "d", "e", "f"] and [r.text for r in out] == list("ABCDEF")


def test_identical_requests_in_a_batch_are_sent_once(tmp_path):
    texts = ["a", "b", "a", "fail c", "a", "b", "fail c"]
    requests = [chat(t) for t in texts] + [chat("a", seed=5)]  # another seed is another request
    backend = Echo()
    out = LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert backend.seen == ["a", "b", "fail c", "a"]  # 4 distinct cache keys among 8 requests
    assert [r.text for r in out] == ["A", "B", "A", None, "A", "B", None, "A"]
    assert out[3].error == out[6].error == "boom"  # a rejected request's error reaches every asker
    again = Echo()
    LLM(again).generate(requests)  # without a cache too
    assert again.seen == ["a", "b", "fail c", "a"]


def test_a_backend_outside_the_cache_answers_every_request():
    """The mock systems answer from each request's question record, which the key leaves out."""
    class Contextual(Echo):
        cacheable = False

    backend = Contextual()
    LLM(backend).generate([chat("a"), chat("a")])
    assert backend.seen == ["a", "a"]
