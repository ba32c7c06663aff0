"""A Snakemake run killed (SIGKILL) or interrupted (SIGINT, Ctrl-C) in the middle of an answer
job loses no paid response and leaves no half-written output that counts as complete (issue 36,
item 15): every response is in the durable cache the moment it arrives, Snakemake marks the
job's output incomplete before the job starts, and the rerun asks only for what never arrived."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import gone_within, running, wait_for_file

SNAKEFILE = """
rule answers:
    output: "answers.parquet"
    log: "answers.log"
    script: "answer_job.py"
"""

# A job shaped like generate_answers: six paid requests through polyrag's LLM and its cache, the
# output written while the job runs (a writer killed half way leaves a truncated file behind).
# The backend answers three requests, then hangs as a slow API would, while the file "hang" exists.
SCRIPT = """
import os
import time
from pathlib import Path

import pandas as pd

from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.types import Request, Response
from polyrag.logs import run_logged


class PaidAPI(Backend):
    name = "paid"
    identity = "paid-1"

    def stream(self, requests):
        for i, request in enumerate(requests):
            text = request.messages[0]["content"]
            with open("asked.txt", "a") as handle:
                handle.write(text + "\\n")
            while i == 3 and Path("hang").exists():
                time.sleep(0.1)
            yield i, Response(text=text.upper(), tokens=5)


def main():
    Path("job.pid").write_text(str(os.getpid()))
    Path(snakemake.output[0]).write_bytes(b"PAR1 half written")
    requests = [Request(messages=[{"role": "user", "content": text}]) for text in "abcdef"]
    llm = LLM(PaidAPI(), ResponseCache("cache.sqlite"))
    responses = llm.generate(requests)
    pd.DataFrame({"answer": [r.text for r in responses]}).to_parquet(snakemake.output[0])


run_logged(main, snakemake.log[0])
"""


def cached(tmp_path: Path) -> list[str]:
    rows = sqlite3.connect(tmp_path / "cache.sqlite").execute("SELECT response FROM responses").fetchall()
    return sorted(row[0] for row in rows)


def wait_for_lines(path: Path, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and len(path.read_text().split()) >= count):
        assert time.monotonic() < deadline, f"{path} has not {count} lines within {timeout} s"
        time.sleep(0.1)


def workflow(tmp_path: Path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "answer_job.py").write_text(SCRIPT)
    (tmp_path / "hang").touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}

    def snakemake(*args, **kwargs):
        command = [sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"), "-d", str(tmp_path),
                   "--cores", "1", *args]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                **kwargs)

    return snakemake


def start_and_wait_for_three_answers(tmp_path: Path, snakemake, **kwargs) -> tuple[subprocess.Popen, int]:
    process = snakemake(**kwargs)
    pid = int(wait_for_file(tmp_path / "job.pid", process, 120))
    wait_for_lines(tmp_path / "asked.txt", 4, 60)  # three answered, the fourth hangs
    time.sleep(0.5)
    assert cached(tmp_path) == ["A", "B", "C"]  # committed on arrival, before the job ends
    assert (tmp_path / "answers.parquet").read_bytes() == b"PAR1 half written"
    return process, pid


def finish_and_check(tmp_path: Path, process: subprocess.Popen) -> None:
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0, out
    import pandas as pd
    assert pd.read_parquet(tmp_path / "answers.parquet")["answer"].tolist() == list("ABCDEF")
    # the rerun paid only for the requests whose answers never arrived (d was asked, never answered)
    assert (tmp_path / "asked.txt").read_text().split() == ["a", "b", "c", "d", "d", "e", "f"]
    assert cached(tmp_path) == list("ABCDEF")


def refused_as_incomplete_then_rerun(tmp_path: Path, snakemake) -> None:
    """The half-written output is still there, but Snakemake knows it is incomplete: a plain run
    refuses to use it, and --rerun-incomplete (as profiles/ set) makes it again."""
    assert (tmp_path / "answers.parquet").read_bytes() == b"PAR1 half written"
    (tmp_path / "hang").unlink()
    refused = snakemake()
    out, _ = refused.communicate(timeout=300)
    assert refused.returncode != 0 and "IncompleteFilesException" in out and "answers.parquet" in out, out
    assert (tmp_path / "asked.txt").read_text().split() == ["a", "b", "c", "d"]  # nothing asked again yet
    finish_and_check(tmp_path, snakemake("--rerun-incomplete"))


@pytest.mark.slow
def test_sigkill_of_snakemake_keeps_the_paid_answers_and_marks_the_output_incomplete(tmp_path):
    snakemake = workflow(tmp_path)
    process, pid = start_and_wait_for_three_answers(tmp_path, snakemake)
    process.kill()
    process.wait()
    assert gone_within(pid, 5), "the job outlived Snakemake"
    assert cached(tmp_path) == ["A", "B", "C"]
    unlock = snakemake("--unlock")  # a killed Snakemake leaves its lock behind
    assert unlock.wait(timeout=300) == 0, unlock.stdout.read()
    refused_as_incomplete_then_rerun(tmp_path, snakemake)


@pytest.mark.slow
def test_sigint_of_snakemake_keeps_the_paid_answers_and_marks_the_output_incomplete(tmp_path):
    snakemake = workflow(tmp_path)
    # Ctrl-C in a terminal signals the whole foreground process group: Snakemake and its job.
    process, pid = start_and_wait_for_three_answers(tmp_path, snakemake, start_new_session=True)
    os.killpg(process.pid, signal.SIGINT)
    out, _ = process.communicate(timeout=120)
    assert process.returncode != 0, out
    assert gone_within(pid, 5), "the job outlived Snakemake"
    assert not running(pid)
    assert cached(tmp_path) == ["A", "B", "C"]
    refused_as_incomplete_then_rerun(tmp_path, snakemake)  # (no lock left: no --unlock needed)
