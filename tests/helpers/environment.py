"""What this machine gives the tests: the torch device, Gemma's threads, and services a test may
skip without (except where a variable says it must run)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

# The device of the tests that run torch models (the transformers backend, the NLI scorer and
# reranker, the MARS encoder judge, LoRA fine-tuning). CPU everywhere by default; the same tests
# exercise the CUDA code paths (tensors and models moved to the device, seeding, bf16 training) when
# run on a GPU machine with POLYRAG_TEST_DEVICE=cuda (benchmarks/gpu_check.sh does that).
TORCH_TEST_DEVICE = os.environ.get("POLYRAG_TEST_DEVICE", "cpu")
ON_CUDA = TORCH_TEST_DEVICE.startswith("cuda")


# Gemma on one llama.cpp thread in every test: the suite's two workers share 2 cores, and llama.cpp's
# threads wait for each other at every layer, so a second thread whose core is taken stalls the first
# (4 demo answers beside a 2-thread torch process: 32 s on one thread, 41 s on two).
GEMMA_THREADS = 1


def skip_unless_required(reason: str, variable: str) -> NoReturn:
    """A test whose service or data is missing here: skipped with the reason on a user's clone,
    failed where ``variable`` is set (CI sets it, so there the test must run)."""
    if os.environ.get(variable):
        pytest.fail(f"{reason}: {variable} is set, so this test must run")
    pytest.skip(reason)
