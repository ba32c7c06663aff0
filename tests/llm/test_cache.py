"""The durable cache: hits never reach the backend, each response is stored as it arrives."""

from __future__ import annotations

import logging
import os
import re
import sqlite3

import pytest

from polyrag.errors import LLMUnavailable
from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.types import Request, Response
from polyrag.sqlite_cache import CacheDamaged


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


# --- A damaged cache file (issue 36, item 13) ---------------------------------------------------

def filled_cache(path, n: int = 300) -> list[Request]:
    """A real cache of ``n`` responses written through the client (a few hundred bytes each: many pages)."""
    requests = [chat(f"question {k:04d} " + "x" * 300) for k in range(n)]
    llm = LLM(Echo(), ResponseCache(path))
    llm.generate(requests)
    llm.close()  # the WAL is checkpointed into the file, as after a finished job
    return requests


def damaged_files(path):
    return sorted(p.name for p in path.parent.iterdir() if ".damaged-" in p.name)


@pytest.mark.parametrize("damage", ["truncated", "header"])
def test_a_damaged_cache_is_moved_aside_and_its_readable_rows_kept(tmp_path, caplog, damage):
    """Before: `sqlite3.DatabaseError: database disk image is malformed` (or `file is not a database`)
    as a traceback on every rerun, until the user found and deleted the file."""
    path = tmp_path / "llm" / "m.sqlite"
    requests = filled_cache(path)
    intact = dict(sqlite3.connect(path).execute("SELECT key, response FROM responses").fetchall())
    size = path.stat().st_size
    if damage == "truncated":  # a full disk or a killed copy: the second half is gone
        os.truncate(path, size // 2)
    else:  # the first 100 bytes overwritten
        with open(path, "r+b") as handle:
            handle.write(b"\x00garbage" * 12 + b"oops")
    backend = Echo()
    with caplog.at_level(logging.WARNING):
        llm = LLM(backend, ResponseCache(path, what="the LLM response cache of model 'm'"))
        out = llm.generate(requests, desc="answers")
    [aside] = damaged_files(path)
    assert aside.startswith("m.sqlite.damaged-")
    recovered = len(requests) - len(backend.seen)
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert messages[0].startswith(f"the LLM response cache of model 'm' {path} is damaged (")
    assert f"moved it to {aside} and recovered {recovered} rows into a fresh cache; " in messages[0]
    if damage == "header":  # the rows are all intact: the header is rebuilt and none is paid again
        assert backend.seen == [] and len(messages) == 1
        assert messages[0].endswith("; 0 rows could not be read and will be requested again")
    else:
        assert 0 < recovered < len(requests) and len(backend.seen) < len(requests)
        # Half the file is gone, the key index with it: the keys its readable pages name are counted.
        lost = int(re.search(r"; at least (\d+) rows could not be read \(the key index is damaged too\) "
                             r"and will be requested again$", messages[0])[1])
        assert 0 < lost <= len(backend.seen)
        assert messages[1] == (f"answers: {lost} of the {len(backend.seen)} requests to echo are asked again "
                               f"because the damaged cache {path} lost them")
    # Every recovered row is the intact one; the answers are the same as before the damage.
    rows = dict(sqlite3.connect(path).execute("SELECT key, response FROM responses").fetchall())
    assert all(intact[key] == text for key, text in rows.items())
    assert [r.text for r in out] == [t.messages[0]["content"].upper() for t in requests]
    llm.close()
    # The rerun is clean: no warning, nothing asked again.
    caplog.clear()
    again = Echo()
    with caplog.at_level(logging.WARNING):
        LLM(again, ResponseCache(path)).generate(requests)
    assert again.seen == [] and not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert damaged_files(path) == [aside]


def test_a_cache_with_nothing_readable_is_replaced_and_said_so(tmp_path, caplog):
    path = tmp_path / "m.sqlite"
    requests = filled_cache(path, n=20)
    with open(path, "r+b") as handle:
        handle.write(b"\x00" * path.stat().st_size)  # every page zeroed
    backend = Echo()
    with caplog.at_level(logging.WARNING):
        LLM(backend, ResponseCache(path)).generate(requests)
    assert "and recovered 0 rows into a fresh cache; an unknown number of rows could not be read (the key index " \
           "is damaged too) and will be requested again" in caplog.text
    assert len(backend.seen) == 20 and len(damaged_files(path)) == 1


def test_rows_in_the_write_ahead_log_of_a_damaged_cache_are_kept(tmp_path):
    """A job killed before its WAL was checkpointed: the responses there are recovered too."""
    path = tmp_path / "m.sqlite"
    requests = filled_cache(path, n=40)
    writer = ResponseCache(path)  # kept open: the next responses stay in m.sqlite-wal
    writer._db.execute("PRAGMA wal_autocheckpoint=0")
    LLM(Echo(), writer).generate([chat("late one"), chat("late two")])
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("m.sqlite", "m.sqlite-wal"):
        (copy / name).write_bytes((tmp_path / name).read_bytes())
    writer.close()
    with open(copy / "m.sqlite", "r+b") as handle:
        handle.write(b"\xff" * 16)  # not SQLite's header any more, only its magic
    backend = Echo()
    LLM(backend, ResponseCache(copy / "m.sqlite")).generate(requests + [chat("late one"), chat("late two")])
    assert backend.seen == []


def test_an_empty_cache_file_is_named_in_a_warning(tmp_path, caplog):
    """Before: a cache truncated to 0 bytes was silently an empty cache; every request paid again."""
    path = tmp_path / "m.sqlite"
    requests = filled_cache(path, n=3)
    os.truncate(path, 0)
    backend = Echo()
    with caplog.at_level(logging.WARNING):
        LLM(backend, ResponseCache(path, what="the LLM response cache of model 'm'")).generate(requests)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"the LLM response cache of model 'm' {path} is empty (0 bytes): nothing was cached there, so every "
        "request is made (and paid) again; if it held responses, restore it from a backup before running on"]
    assert len(backend.seen) == 3 and damaged_files(path) == []
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        LLM(Echo(), ResponseCache(path)).generate(requests)  # a new cache is not a warning
    assert not caplog.records
    fresh = tmp_path / "new.sqlite"
    with caplog.at_level(logging.WARNING):
        ResponseCache(fresh).close()
    assert not caplog.records


def test_damage_during_a_job_is_one_clear_error(tmp_path):
    path = tmp_path / "m.sqlite"
    requests = filled_cache(path)
    cache = ResponseCache(path, what="the LLM response cache of model 'm'")
    os.truncate(path, path.stat().st_size // 3)
    with pytest.raises(CacheDamaged, match=rf"^the LLM response cache of model 'm' {path} was damaged during this "
                                           r"job \(database disk image is malformed\); rerun the job"):
        for request in reversed(requests):  # the last rows lie in the lost pages
            cache.get(request.cache_key("echo", "echo-1"))


def test_keys_lost_to_one_damage_are_still_counted_after_another(tmp_path, caplog):
    path = tmp_path / "m.sqlite"
    requests = filled_cache(path)
    os.truncate(path, path.stat().st_size // 2)
    ResponseCache(path).close()  # repaired; the lost keys are noted
    lost = sqlite3.connect(path).execute("SELECT count(*) FROM lost_keys").fetchone()[0]
    with open(path, "r+b") as handle:  # damaged again before any job asked for them
        handle.write(b"\x00" * 100)
    backend = Echo()
    with caplog.at_level(logging.WARNING):
        LLM(backend, ResponseCache(path)).generate(requests, desc="answers")
    assert lost > 0 and f"answers: {lost} of the {len(backend.seen)} requests to echo are asked again" in caplog.text
