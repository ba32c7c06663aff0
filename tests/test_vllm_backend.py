"""The vllm backend: request mapping, and a clear message where vllm is not installed."""

import importlib.util

import pytest

from polyrag.errors import BackendUnavailable
from polyrag.llm.factory import make_backend
from polyrag.llm.types import Request
from polyrag.llm.vllm_backend import sampling_params_kwargs


def test_sampling_params_mapping():
    request = Request(messages=[{"role": "user", "content": "x"}], temperature=0.1, max_tokens=300, seed=7, stop=["##"])
    assert sampling_params_kwargs(request) == {"temperature": 0.1, "max_tokens": 300, "seed": 7, "stop": ["##"]}
    assert sampling_params_kwargs(Request(prompt="x"))["stop"] is None


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_is_a_clear_error():
    entry = {"backend": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct"}
    with pytest.raises(BackendUnavailable, match=r"backend 'vllm' for model 'Qwen/Qwen2.5-7B-Instruct' needs the vllm package"):
        make_backend("qwen", entry, cache_dir="unused", seed=0)
