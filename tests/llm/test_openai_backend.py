"""The openai backend against a real OpenAI-compatible server (llama.cpp on 127.0.0.1),
behind a proxy that injects 429, 500 and timeouts and counts what reaches it."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from polyrag.errors import BackendUnavailable, LLMUnavailable, TooManyFailures
from polyrag.features.llm_scores import llm_scores
from polyrag.generate.answers import generate_answers
from polyrag.judge.play import arena_items, judge_pairs_with_llm
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.openai_backend import OpenAIBackend
from polyrag.llm.types import Request
from polyrag.meta_eval.llm_judge import llm_predictions

from tests.helpers.proxy import FaultProxy

SECRET = "sk-polyrag-test-secret-0123456789"


def backend(url: str, **options) -> OpenAIBackend:
    # Gemma 270M is a base model without a chat template: completion requests.
    defaults = {"api_key_env": "POLYRAG_TEST_KEY", "backoff_initial": 0.05, "backoff_max": 0.2, "timeout": 30,
                "mode": "completion"}
    return OpenAIBackend(model="gemma-270m", base_url=url, **{**defaults, **options})


def question(k: int) -> Request:
    return Request(prompt=f"Count from {k} to {k + 3}: {k},", max_tokens=8, seed=1)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("POLYRAG_TEST_KEY", SECRET)


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("POLYRAG_TEST_KEY")
    with pytest.raises(BackendUnavailable, match="environment variable POLYRAG_TEST_KEY is not set"):
        backend("http://127.0.0.1:9/v1")


def test_persistent_failures_fail_after_retries():
    with FaultProxy("http://127.0.0.1:9", plan=["500"] * 100) as proxy:
        with pytest.raises(LLMUnavailable, match=r"'gemma-270m' at .* is unavailable: InternalServerError after 4 attempt"):
            LLM(backend(proxy.url, max_retries=3)).generate([question(0)])
    assert proxy.requests == 4  # one try and three retries


def test_an_outage_stops_new_requests():
    """Once one request has spent its retries, the others are not sent (nor retried) any more."""
    with FaultProxy("http://127.0.0.1:9", plan=["500"] * 100) as proxy:
        with pytest.raises(LLMUnavailable, match=r"0 of 20 new responses arrived"):
            LLM(backend(proxy.url, max_retries=0, concurrency=2)).generate([question(k) for k in range(20)])
    assert proxy.requests <= 2


def test_refused_connections_and_keys_fail_the_job():
    with FaultProxy("http://127.0.0.1:9") as proxy:
        port = proxy.port
    with pytest.raises(LLMUnavailable, match="APIConnectionError after 2 attempt"):  # nothing listens there now
        LLM(backend(f"http://127.0.0.1:{port}/v1", max_retries=1)).generate([question(0)])
    with FaultProxy("http://127.0.0.1:9", plan=["401"] * 10) as proxy:
        with pytest.raises(LLMUnavailable, match="AuthenticationError after 1 attempt"):
            LLM(backend(proxy.url, max_retries=3)).generate([question(0)])
    assert proxy.requests == 1  # a refused key is not retried


def test_client_errors_are_not_retried():
    with FaultProxy("http://127.0.0.1:9", plan=["400"] * 10) as proxy:
        responses = LLM(backend(proxy.url, max_retries=3)).generate([question(0)])
    assert proxy.requests == 1 and "BadRequestError" in responses[0].error


def test_generation_fails_above_the_share_of_rejected_requests(repo):
    from polyrag.data.demo import load_demo

    records = load_demo("en", repo / "resources" / "demo")
    settings = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 8, "seed": 1, "max_failure_fraction": 0.05}
    with FaultProxy("http://127.0.0.1:9", plan=["400"] * 1000) as proxy:
        with pytest.raises(TooManyFailures, match=r"rejected 12 of 12 requests \(100.0% > .* 5.0%\), e.g. llm: BadRequest"):
            generate_answers(LLM(backend(proxy.url)), records, settings)
        rows = generate_answers(LLM(backend(proxy.url)), records, {**settings, "max_failure_fraction": 1.0})
    assert [r["error"].startswith("llm: BadRequestError") for r in rows] == [True] * 12
    assert all(r["answer"] is None and r["raw_output"] is None for r in rows)


def memerag_sentences() -> pd.DataFrame:
    return pd.DataFrame([{"lang": "en", "query_id": str(k), "query": "Where is Paris?", "context": ["Paris is in France."],
                          "sentence_id": 0, "sentence": sentence, "fine_grained_factuality": None,
                          "faithful": label, "relevant": 1}
                         for k, (sentence, label) in enumerate([("Paris is in France.", 1), ("It is in Peru.", 0)])])


def every_llm_caller(repo):
    """Each stage that reads an LLM's output into rows, as a call on one LLM."""
    from polyrag.data.demo import load_demo

    records = [{**r, "arena": k < 2} for k, r in enumerate(load_demo("en", repo / "resources" / "demo")[:4])]
    answers = [{"query_id": r["query_id"], "answer": r["reference_answer"], "cited_docids": [], "raw_output": ""}
               for r in records]
    other = [{**a, "answer": f"{a['answer']} (b)"} for a in answers]
    judging = {"max_attempts": 2, "max_failure_fraction": 0.05, "temperature": 0.1, "max_tokens": 8, "seed": 1}
    generation = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 8, "seed": 1, "max_failure_fraction": 1.0}
    return {
        "judge": lambda llm: judge_pairs_with_llm(llm, [("m1", "m2", arena_items(records, answers, other))], judging)[0],
        "llm features": lambda llm: llm_scores(llm, records, answers, judging),
        "meta-evaluation": lambda llm: llm_predictions(llm, memerag_sentences(), ["faithfulness", "relevance"], ["zero_shot"],
                                                       {**judging, "include_question": True}),
        "generation": lambda llm: generate_answers(llm, records, generation),
    }


@pytest.mark.parametrize("caller", ["judge", "llm features", "meta-evaluation", "generation"])
def test_an_unreachable_model_fails_every_stage_instead_of_writing_rows(repo, caller):
    """Before, an outage became invalid verdicts, null features and predictions, or error rows."""
    with FaultProxy("http://127.0.0.1:9", plan=["500"] * 1000) as proxy:
        with pytest.raises(LLMUnavailable, match="InternalServerError after 2 attempt"):
            every_llm_caller(repo)[caller](LLM(backend(proxy.url, max_retries=1)))


@pytest.mark.slow
def test_real_server_answers(llama_server):
    [response] = LLM(backend(llama_server)).generate([question(1)])
    assert response.ok and response.text.strip()
    chat = Request(messages=[{"role": "user", "content": "Hello"}], max_tokens=4)
    [response] = LLM(backend(llama_server, mode="chat")).generate([chat])
    assert response.ok


@pytest.mark.slow
def test_concurrency_is_bounded(llama_server):
    with FaultProxy(llama_server, delay=0.3) as proxy:
        responses = LLM(backend(proxy.url, concurrency=3)).generate([question(k) for k in range(9)])
    assert all(r.ok for r in responses)
    assert proxy.requests == 9 and proxy.max_in_flight == 3


@pytest.mark.slow
def test_retries_after_429_500_and_timeout_then_cache_hits(llama_server, tmp_path, caplog):
    cache_path = tmp_path / "cache.sqlite"
    requests = [question(k) for k in range(4)]
    timeout = 15
    # The timeout leaves a loaded CI machine time to answer, and the hang outlasts it.
    with FaultProxy(llama_server, plan=["429", "500", "hang"], hang_seconds=2 * timeout) as proxy:
        llm = LLM(backend(proxy.url, concurrency=1, timeout=timeout), ResponseCache(cache_path))
        responses = llm.generate(requests)
        llm.close()
    assert all(r.ok for r in responses)
    # Each request reaches the server once, plus once more for each answer slower than the timeout
    # (the server shares the cores with the other test worker; the client rightly asks again).
    timed_out = sum(seconds > timeout for seconds in proxy.forward_seconds)
    assert proxy.actions[:3] == ["429", "500", "hang"] and proxy.forwarded == len(requests) + timed_out
    # A rerun is answered from the cache: the server (at the same address) never sees it.
    with FaultProxy(llama_server, port=proxy.port) as proxy:
        again = LLM(backend(proxy.url), ResponseCache(cache_path)).generate(requests)
    assert proxy.requests == 0
    assert [r.text for r in again] == [r.text for r in responses] and all(r.cached for r in again)
    # The key never reaches the cache or the logs.
    assert SECRET.encode() not in cache_path.read_bytes()
    assert SECRET not in caplog.text


@pytest.mark.slow
def test_duplicates_reach_the_server_once(llama_server):
    requests = [question(k) for k in (0, 1, 0, 2, 1, 0)]
    with FaultProxy(llama_server) as proxy:
        responses = LLM(backend(proxy.url)).generate(requests)
    assert proxy.requests == 3
    assert [r.text for r in responses[:3]] == [responses[2].text, responses[4].text, responses[0].text]


def short_arena(questions: int) -> tuple[list[dict], list[dict], list[dict]]:
    """Questions with one short passage each and two models' answers: a quick judge prompt. Gemma 270M
    is a base model that continues patterns, so each answer ends with a verdict line for it to imitate."""
    records = [{"query_id": str(k), "query": f"What is {k} plus {k}?", "language": "en", "arena": True,
                "passages": [{"docid": f"{k}#0", "title": "Sums", "text": f"{k} plus {k} is {2 * k}."}]}
               for k in range(questions)]

    def answer(k: int, text: str, letter: str) -> dict:
        pattern = f"\n[The End of Assistant B's Answer]\n\nFinal verdict: [[{letter}]]\n\n[The Start of Assistant B's Answer]\n"
        return {"query_id": str(k), "answer": text + pattern + text, "cited_docids": [], "raw_output": ""}

    right = [answer(k, f"It is {2 * k} [{k}#0].", "A") for k in range(questions)]
    wrong = [answer(k, f"It is {k + 1}.", "B") for k in range(questions)]
    return records, right, wrong


@pytest.mark.slow
def test_a_server_outage_fails_the_judge_job_and_the_rerun_completes_it(llama_server, tmp_path):
    """The server dies after 3 answers: the job raises with 3 responses cached; once the server is back
    the rerun sends only the missing requests and writes the verdicts of an uninterrupted run."""
    games = arena_items(*short_arena(3))  # 6 games
    judging = {"max_attempts": 2, "max_failure_fraction": 0.05, "temperature": 0.0, "max_tokens": 10, "seed": 1}
    options = {"concurrency": 2, "max_retries": 2}

    def judge(url, cache):
        llm = LLM(backend(url, **options), ResponseCache(cache))
        try:
            return judge_pairs_with_llm(llm, [("right", "wrong", games)], judging)[0]
        finally:
            llm.close()

    with FaultProxy(llama_server) as proxy:
        uninterrupted = judge(proxy.url, tmp_path / "uninterrupted.sqlite")
    sent = proxy.forwarded
    assert sent >= 6
    with FaultProxy(llama_server, down_after=3) as proxy:
        with pytest.raises(LLMUnavailable, match=r"attempt 1: .* unavailable: APIConnectionError .* 3 of 6 new responses"):
            judge(proxy.url, tmp_path / "cut.sqlite")
    assert sqlite3.connect(tmp_path / "cut.sqlite").execute("SELECT COUNT(*) FROM responses").fetchone() == (3,)
    # The server is back at its address (the cache keys hold the endpoint: another port is another server).
    with FaultProxy(llama_server, port=proxy.port) as proxy:
        resumed = judge(proxy.url, tmp_path / "cut.sqlite")
    assert proxy.forwarded == sent - 3
    assert resumed == uninterrupted
    assert {r["verdict"] for r in resumed} - {"invalid"}, "no verdict to compare"


@pytest.mark.slow
def test_another_endpoint_is_asked_rather_than_answered_from_the_first_ones_cache(llama_server, tmp_path):
    """Before: pointing a model at a second server reran the job, but every answer came from the first
    server's cache and the second server received 0 requests (issue 36, item 1)."""
    cache_path = tmp_path / "cache.sqlite"
    requests = [question(k) for k in range(3)]
    with FaultProxy(llama_server) as first, FaultProxy(llama_server) as second:
        for proxy in (first, second):
            llm = LLM(backend(proxy.url), ResponseCache(cache_path))
            answers = llm.generate(requests)
            llm.close()
            assert all(r.ok and not r.cached for r in answers)
        again = LLM(backend(first.url), ResponseCache(cache_path)).generate(requests)
    assert first.requests == 3 and second.requests == 3 and all(r.cached for r in again)
    models = {model for (model,) in sqlite3.connect(cache_path).execute("SELECT model FROM responses")}
    assert models == {f"gemma-270m@{proxy.url}+mode=completion" for proxy in (first, second)}
    assert SECRET.encode() not in cache_path.read_bytes()
