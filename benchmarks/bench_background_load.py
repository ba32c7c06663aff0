"""Gemma 3 270M's seconds per answer under each llama.cpp threading setting, on idle cores and with
one ``nice -n 19`` busy loop beside it (issue 37: the demo must stay fast when another process
wants a core).

llama-cpp-python 0.3.36 is built here with OpenMP (``ldd libggml-cpu.so`` lists libgomp): ggml's
layer barriers are ``#pragma omp barrier``, so how a waiting thread waits is libgomp's choice
(``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``, read once when libgomp loads) and ggml's own threadpool
options (``poll``, ``prio``, ``strict_cpu``; not bound by llama-cpp-python anyway) do nothing. What
llama-cpp-python exposes is ``n_threads`` (decoding) and ``n_threads_batch`` (the prompt). Each
setting therefore runs in a fresh worker process with its environment.

Answers are the demo's: gemma-270m's prompts for the first questions of the demo's languages, its
sampling settings (seeded), through polyrag's llama.cpp backend. The table says whether each
setting's answers are identical to the first setting's; a cell that answers for longer than its
timeout is stopped and its mean marked as a lower bound (>). The 1-minute load average (``uptime``)
is printed beside each row: on a shared machine a row whose load changed is noise.

    .venv/bin/python benchmarks/bench_background_load.py            # 6 answers a cell, every setting
    .venv/bin/python benchmarks/bench_background_load.py --quick    # 3 answers, four settings, < 3 min idle
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL = "gemma-270m"


def settings(threads: int) -> dict[str, dict]:
    """Candidate settings by name: the backend's options and the worker's environment. A thread
    that waits at libgomp's barrier spins GOMP_SPINCOUNT rounds (300,000 by default, "infinite"
    under OMP_WAIT_POLICY=active, none under passive), then sleeps."""
    both = {"n_threads": threads, "n_threads_batch": threads}
    fewer = max(threads - 1, 1)
    return {
        f"{threads} threads (the backend's default)": {"options": both, "env": {}},
        f"{threads} threads, OMP_WAIT_POLICY=passive": {"options": both, "env": {"OMP_WAIT_POLICY": "passive"}},
        f"{fewer} thread{'s' if fewer > 1 else ''}": {"options": {"n_threads": fewer, "n_threads_batch": fewer},
                                                        "env": {}},
        f"{threads} threads, GOMP_SPINCOUNT=1000": {"options": both, "env": {"GOMP_SPINCOUNT": "1000"}},
        f"{threads} threads, GOMP_SPINCOUNT=10000": {"options": both, "env": {"GOMP_SPINCOUNT": "10000"}},
        f"decode {fewer}, prompt {threads} threads": {"options": {"n_threads": fewer, "n_threads_batch": threads},
                                                      "env": {}},
        f"{threads} threads, OMP_WAIT_POLICY=active": {"options": both, "env": {"OMP_WAIT_POLICY": "active"}},
    }


QUICK = (0, 1, 2, 3)  # the default, sleeping at once, one thread fewer, a short spin


def worker(setting: dict, answers: int) -> None:
    """Answer the demo's first prompts with one setting; print seconds and texts as JSON."""
    import yaml

    from polyrag.config.queries import generation_settings
    from polyrag.config.validate import validate_config
    from polyrag.data.demo import load_demo
    from polyrag.generate.answers import build_requests
    from polyrag.llm.llama_cpp_backend import LlamaCppBackend
    from polyrag.llm.types import Request

    config = validate_config(yaml.safe_load((REPO / "config.yaml").read_text()), REPO / "schemas/config.schema.yaml",
                             "config.yaml", workflow_dir=REPO)
    entry = config["models"][MODEL]
    records = [record for lang in config["languages"] for record in load_demo(lang, REPO / "resources/demo")[:1]]
    requests = build_requests((records * answers)[:answers], generation_settings(config, MODEL))
    backend = LlamaCppBackend(package=entry["package"], cache_dir=REPO / ".cache/polyrag", n_ctx=entry["n_ctx"],
                              seed=config["seed"], **setting["options"])
    list(backend.stream([Request(prompt="The river", max_tokens=2)]))  # warm-up: the weights, OpenMP's threads
    print(json.dumps({"ready": True}), flush=True)
    for request in requests:
        start, cpu_start = time.perf_counter(), time.process_time()
        (_, response), = backend.stream([request])
        # process_time: every thread's CPU, a thread spinning at a barrier included
        print(json.dumps({"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu_start,
                          "text": response.text}), flush=True)
    backend.close()


def run_setting(name: str, setting: dict, answers: int, loaded: bool, timeout: float) -> dict:
    """One cell: a fresh worker's answers, one JSON line each. A worker still answering after
    ``timeout`` seconds is stopped; the answer it was on counts the time it had taken so far
    (the cell's mean is then a lower bound, marked >)."""
    env = {**{k: v for k, v in os.environ.items() if k not in {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}},
           "PYTHONPATH": str(REPO), **setting["env"]}
    busy = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"]) if loaded else None
    load_before = os.getloadavg()[0]
    worker = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(setting), "--answers", str(answers)],
                              env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    arrived = queue.Queue()
    threading.Thread(target=lambda: [arrived.put(line) for line in worker.stdout] + [arrived.put(None)],
                     daemon=True).start()
    lines, timed_out, deadline = [], False, time.perf_counter() + 600  # the warm-up: loading, one answer
    try:
        while len(lines) < answers:
            try:
                line = arrived.get(timeout=max(deadline - time.perf_counter(), 0))
            except queue.Empty:
                timed_out = True
                break
            if line is None:  # the worker ended early
                break
            record, last = json.loads(line), time.perf_counter()
            if "ready" in record:
                deadline = last + timeout
            else:
                lines.append(record)
    finally:
        worker.kill()
        worker.wait()
        if busy is not None:
            busy.kill()
            busy.wait()
    if len(lines) < answers and not timed_out:
        raise RuntimeError(f"the worker of {name!r} failed (exit status {worker.returncode})")
    if timed_out:  # the answer it was on, so far
        lines.append({"seconds": time.perf_counter() - last, "cpu_seconds": float("nan"), "text": None})
    return {"setting": name, "load": "nice 19 busy loop" if loaded else "idle", "timed_out": timed_out,
            "seconds": [r["seconds"] for r in lines], "cpu_seconds": [r["cpu_seconds"] for r in lines],
            "texts": [r["text"] for r in lines if r["text"] is not None],
            "loadavg": f"{load_before:.2f}->{os.getloadavg()[0]:.2f}"}


def mean(values: list[float]) -> float:
    """The mean of the finite values (an answer stopped by the cell's timeout has no CPU time)."""
    finite = [value for value in values if value == value]
    return sum(finite) / len(finite) if finite else float("nan")


def cell(value: float, lower_bound: bool, width: int) -> str:
    return f"{'>' if lower_bound else ''}{value:.2f}".rjust(width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=6, help="answers timed per (setting, load)")
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count()),
                        help="the threads a demo Gemma job is granted (llama_cpp asks for 4, capped at the cores)")
    parser.add_argument("--quick", action="store_true", help="3 answers, four settings, 30 s a cell at most")
    parser.add_argument("--only", nargs="*", type=int, help="indexes of the settings to run (0: the default)")
    parser.add_argument("--cell-timeout", type=float, default=120.0, help="seconds a cell may answer for")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(json.loads(args.worker), args.answers)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run stops its busy loop and worker too
    candidates = list(settings(args.threads).items())
    picked = args.only if args.only is not None else QUICK if args.quick else range(len(candidates))
    answers, timeout = (3, 30.0) if args.quick else (args.answers, args.cell_timeout)
    print(f"{os.cpu_count()} CPU cores, {args.threads} granted threads, {answers} answers a cell; "
          f"uptime: {uptime()}", flush=True)
    rows, reference = [], None
    for index in picked:
        name, setting = candidates[index]
        for loaded in (False, True):  # idle then loaded, back to back: the machine's own load drifts
            row = run_setting(name, setting, answers, loaded, timeout)
            reference = reference or row["texts"]
            # None: no answer to compare (the cell was stopped before its first)
            row["identical"] = row["texts"] == reference[:len(row["texts"])] if row["texts"] and reference else None
            rows.append(row)
            print(f"  {name:<40} {row['load']:<18} {cell(mean(row['seconds']), row['timed_out'], 7)} s/answer "
                  f"{mean(row['cpu_seconds']):6.2f} CPU-s/answer  load avg {row['loadavg']}", flush=True)
    print(f"\n{'setting':<40} {'idle s/answer':>14} {'busy loop':>10} {'ratio':>7} {'CPU-s idle':>11} {'busy':>6}"
          f"  identical  load avg (idle; busy)")
    for idle, busy in zip(rows[::2], rows[1::2]):
        # > a lower bound (the cell was stopped); a ratio over a lower bound says nothing (?)
        ratio = "?" if idle["timed_out"] else cell(mean(busy["seconds"]) / mean(idle["seconds"]), busy["timed_out"], 7)
        print(f"{idle['setting']:<40} {cell(mean(idle['seconds']), idle['timed_out'], 14)} "
              f"{cell(mean(busy['seconds']), busy['timed_out'], 10)} {ratio:>7} {mean(idle['cpu_seconds']):11.2f} "
              f"{mean(busy['cpu_seconds']):6.2f}  {identical(idle['identical'], busy['identical']):<9}  "
              f"{idle['loadavg']}; {busy['loadavg']}")
    print(f"uptime: {uptime()}")


def identical(*cells: bool | None) -> str:
    known = [cell for cell in cells if cell is not None]
    return "-" if not known else "yes" if all(known) else "NO"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
