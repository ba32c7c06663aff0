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


class FakeOutput:
    def __init__(self, prompt: str):
        self.prompt_token_ids = prompt.split()
        self.outputs = [type("Completion", (), {"text": prompt.upper(), "token_ids": [1, 2]})()]


class DyingEngine:
    """The parts of ``vllm.LLM`` the backend uses (vllm needs a GPU, absent here): a whitespace
    tokenizer, a context of 8 tokens, and ``generate`` that raises CUDA's out-of-memory error
    from its second call on."""

    def __init__(self):
        self.calls: list[list[str]] = []
        self.llm_engine = type("Engine", (), {"model_config": type("Config", (), {"max_model_len": 8})()})()

    def get_tokenizer(self):
        return type("Tokenizer", (), {"encode": staticmethod(str.split)})()

    def generate(self, prompts, sampling_params, use_tqdm, lora_request):
        self.calls.append(list(prompts))
        if len(self.calls) > 1:
            raise RuntimeError("CUDA error: out of memory")
        return [FakeOutput(p) for p in prompts]


def test_a_long_prompt_is_a_row_and_a_dead_engine_fails_the_job_after_caching(tmp_path):
    from polyrag.errors import LLMUnavailable
    from polyrag.llm.cache import ResponseCache
    from polyrag.llm.client import LLM
    from polyrag.llm.vllm_backend import VLLMBackend

    backend = VLLMBackend.__new__(VLLMBackend)  # the engine is the fake above; the rest is the backend's own code
    backend.identity, backend.mode, backend.chunk_size, backend.lora_request = "fake", "completion", 2, None
    backend._vllm = type("vllm", (), {"SamplingParams": dict})
    backend.llm = DyingEngine()
    requests = [Request(prompt=p) for p in ("a b", "one two three four five six seven eight", "c d", "e f", "g h")]
    with pytest.raises(LLMUnavailable, match=r"^answers: the vllm engine of fake failed: RuntimeError: CUDA error: "
                                             r"out of memory; 3 of 5 new responses arrived and are cached"):
        LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests, desc="answers")
    assert backend.llm.calls == [["a b", "c d"], ["e f", "g h"]]  # the long prompt never reached the engine
    backend.llm = DyingEngine()
    again = LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    assert [r.text for r in again] == ["A B", None, "C D", "E F", "G H"]
    assert again[1].error == "prompt of 8 tokens does not fit the model's context of 8"
    assert [r.cached for r in again] == [True, False, True, False, False]
    assert backend.llm.calls == [["e f", "g h"]]


def test_identity_follows_the_checkpoint_adapter_and_engine_options(tmp_path, monkeypatch):
    """Before: the model id (and revision) alone: a checkpoint folder retrained in place, or the same
    model served with `quantization: awq`, reused the old answers. (vllm needs a GPU: a stand-in
    module records the engine's arguments; the identity is the backend's own code.)"""
    import sys
    import types

    from polyrag.llm.vllm_backend import VLLMBackend

    engines = []

    class RecordingLLM:
        def __init__(self, **kwargs):
            engines.append(kwargs)

    fake = types.ModuleType("vllm")
    fake.LLM = RecordingLLM
    lora = types.ModuleType("vllm.lora.request")
    lora.LoRARequest = lambda name, number, path: (name, number, path)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.lora", types.ModuleType("vllm.lora"))
    monkeypatch.setitem(sys.modules, "vllm.lora.request", lora)

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"weights one")
    first = VLLMBackend(str(folder)).identity
    assert first.startswith("ckpt#") and VLLMBackend(str(folder)).identity == first
    quantized = VLLMBackend(str(folder), engine_kwargs={"quantization": "awq"}, dtype="half").identity
    assert quantized == first + '+dtype=half+engine={"quantization": "awq"}'
    assert engines[-1]["quantization"] == "awq"
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"lora one")
    with_lora = VLLMBackend(str(folder), adapter=str(adapter)).identity
    (adapter / "adapter_model.safetensors").write_bytes(b"lora two")
    assert with_lora.startswith(first + "+lora:") and VLLMBackend(str(folder), adapter=str(adapter)).identity != with_lora
    (folder / "model.safetensors").write_bytes(b"weights two")  # retrained in place
    assert VLLMBackend(str(folder)).identity != first
