"""The llama_cpp backend on the real Gemma 3 270M GGUF shipped by a PyPI package."""

from __future__ import annotations

import pytest

from polyrag.data.demo import load_demo
from polyrag.generate.prompts import answer_messages
from polyrag.llm.llama_cpp_backend import LlamaCppBackend
from polyrag.llm.types import Request

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma(gemma_gguf):
    backend = LlamaCppBackend(model_path=str(gemma_gguf), n_ctx=4096, n_threads=2)
    yield backend
    backend.close()


def test_gemma_answers_a_demo_question_deterministically(gemma, repo):
    record = load_demo("de", repo / "resources" / "demo")[0]
    request = Request(messages=answer_messages("mirage", record), temperature=0.1, max_tokens=40, seed=3)
    [(_, first)] = list(gemma.stream([request]))
    [(_, again)] = list(gemma.stream([request]))
    assert first.ok and first.text.strip()
    assert first.text == again.text
    assert gemma.identity == "gemma-3-270m-q4_k_m.gguf"


def test_prompt_longer_than_context_is_an_error_row(gemma_gguf):
    small = LlamaCppBackend(model_path=str(gemma_gguf), n_ctx=256, n_threads=2)
    [(_, response)] = list(small.stream([Request(prompt="word " * 2000, max_tokens=4)]))
    small.close()
    assert response.text is None and "context" in response.error.lower()
