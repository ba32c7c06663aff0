"""Start llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (tests, benchmarks, local use)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


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


@contextlib.contextmanager
def llama_server(
    model_path: str | Path, *, alias: str, log_path: str | Path, n_ctx: int = 2048, n_threads: int = 2
) -> Iterator[str]:
    """Yield the server's base URL (``http://127.0.0.1:PORT/v1``); stop the server on exit. Its llama.cpp
    threads: ``n_threads`` for the prompt too."""
    port = free_port()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
             "--n_threads_batch", str(n_threads), "--model_alias", alias],
            stdout=log, stderr=subprocess.STDOUT,
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
