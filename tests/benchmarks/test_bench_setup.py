"""benchmarks/bench_setup.py's CPU accounting: the kinds it groups processes by, and the CPU seconds
it reads from /proc for a child process checked against the kernel's own account of that child
(getrusage)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_setup import ProcessCPU, proc_stat, process_kind  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")


def test_process_kinds():
    assert process_kind("/v/bin/python /w/.snakemake/scripts/tmpx1_b2c.surrogate.py") == "job: surrogate"
    assert process_kind("/v/bin/python -m snakemake -s Snakefile -d /w --cores 2") == "snakemake main process"
    assert process_kind("/v/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))") == "pytest worker"
    assert process_kind("/v/bin/python -m llama_cpp.server --model m.gguf") == "llama.cpp server"
    assert process_kind("slurmstepd: [12.batch]") == "SLURM daemons"
    assert process_kind("/usr/bin/make test") == "other"


def test_cpu_seconds_of_a_child_match_getrusage():
    """A child busy for a CPU-second, read while it runs and after it exits (a zombie: its command
    line is gone, its kind must stay)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    accounting = ProcessCPU(interval=0.05)
    busy = "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass"
    child = subprocess.Popen([sys.executable, "-c", busy, "llama_cpp.server"])  # the argument gives it a kind
    deadline = time.monotonic() + 60
    while proc_stat(child.pid)[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # polls see the exited child
    processes = accounting.processes().set_index("pid")
    child.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert used > 0.9
    assert processes.loc[child.pid, "kind"] == "llama.cpp server"
    assert processes.loc[child.pid, "cpu_s"] == pytest.approx(used, abs=0.03)  # clock ticks are 0.01 s
