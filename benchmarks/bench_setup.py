"""The two other first-hour figures: `make install` on a fresh clone and `make test` in it.

    .venv/bin/python benchmarks/bench_setup.py install   # fresh clone, new venv: per-command table
    .venv/bin/python benchmarks/bench_setup.py test      # the suite as CI runs it, slowest tests

``install`` clones the committed tree into a scratch folder and runs `make install` there with no
venv (pip's own download cache is left as it is: say which in the figures you report); make prints
each command before running it, so the time between two printed commands is the first one's.
``test`` runs `make test` in this checkout with the variables `.ci/run` sets, with pytest's
``--durations`` report and the CPU seconds of every process that ran meanwhile, grouped by kind
(the job scripts by name; read from Linux's /proc twice a second, so a process shorter than half a
second may be missed). Targets (2 idle cores): install at most 4 minutes, the suite at most 10.
Measure on idle cores: nothing else running a workflow or the suite.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent


def timed_lines(command: list[str], cwd: Path, env: dict | None = None) -> tuple[list[tuple[float, str]], int]:
    """Every output line of ``command`` with the seconds since its start, and its exit status."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [(time.perf_counter() - start, line.rstrip("\n")) for line in process.stdout]
    status = process.wait()
    lines.append((time.perf_counter() - start, "(end)"))
    return lines, status


def command_table(lines: list[tuple[float, str]]) -> pd.DataFrame:
    """Seconds per command that make printed: from its line to the next printed command (or the end)."""
    starts = [(t, line) for t, line in lines if line and not line.startswith((" ", "\t", "WARNING", "  "))]
    commands = [(t, line) for t, line in starts if re.match(r"^(\S*/)?(python3?|touch|CMAKE_ARGS=|\.venv)", line)]
    end = lines[-1][0]
    rows = [{"command": line[:110], "seconds": (commands[k + 1][0] if k + 1 < len(commands) else end) - t}
            for k, (t, line) in enumerate(commands)]
    return pd.DataFrame(rows)


def bench_install() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "polyrag"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        lines, status = timed_lines(["make", "install"], clone)
        if status:
            sys.exit("make install failed:\n" + "\n".join(line for _, line in lines[-40:]))
    table = command_table(lines)
    print(f"make install on a fresh clone: {lines[-1][0] / 60:.1f} min ({lines[-1][0]:.0f} s), {os.cpu_count()} cores")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.0f}"))


def process_kind(command_line: str) -> str:
    script = re.search(r"\.snakemake/scripts/tmp\w+\.(\w+)\.py", command_line)
    if script:
        return f"job: {script[1]}"
    for pattern, kind in ((r"-m snakemake|bin/snakemake", "snakemake main process"), (r"exec\(eval\(sys", "pytest worker"),
                          (r"pytest", "pytest"), (r"llama_cpp\.server", "llama.cpp server"), (r"slurm|munged", "SLURM daemons"),
                          (r"chrom", "chromium")):
        if re.search(pattern, command_line):
            return kind
    return "other"


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name (which may hold spaces): state first."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2:].split()


class ProcessCPU:
    """CPU seconds of every process on the machine while it runs, grouped by ``process_kind``."""

    def __init__(self, interval: float = 0.5):
        self.interval, self.seen, self.stop = interval, {}, threading.Event()
        self.ticks = os.sysconf("SC_CLK_TCK")
        self.poll()
        self.before = {key: cpu for key, (_, cpu) in self.seen.items()}
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def poll(self) -> None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fields = proc_stat(pid)
                key, cpu = (pid, fields[19]), (int(fields[11]) + int(fields[12])) / self.ticks  # start time; utime + stime
                # read every time (a fork shows its parent's command line until it execs), kept when
                # empty (an exited process not yet waited for has none)
                command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") or self.seen.get(key, ("",))[0]
                self.seen[key] = (command, cpu)
            except (FileNotFoundError, ProcessLookupError):
                continue

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            self.poll()

    def processes(self) -> pd.DataFrame:
        """Stops polling; one row per process that used CPU meanwhile: pid, kind, CPU seconds."""
        self.stop.set()
        self.thread.join()
        rows = [{"pid": int(key[0]), "kind": process_kind(command), "cpu_s": cpu - self.before.get(key, 0.0)}
                for key, (command, cpu) in self.seen.items()]
        return pd.DataFrame(rows).query("cpu_s > 0")

    def table(self) -> pd.DataFrame:
        table = self.processes().groupby("kind")["cpu_s"].agg(["sum", "count"])
        return table.rename(columns={"sum": "cpu_s", "count": "processes"}).sort_values("cpu_s", ascending=False)


def bench_test(extra: list[str]) -> None:
    env = {**os.environ, "POLYRAG_REQUIRE_SLURM": "1",
           "PYTEST_ADDOPTS": " ".join(["--durations=25", "--durations-min=5", *extra])}
    shared = REPO.parent / "shared" / "data"
    if shared.is_dir():
        env.setdefault("POLYRAG_SHARED_DATA", str(shared))
    cpu = ProcessCPU()
    lines, status = timed_lines(["make", "test"], REPO, env)
    by_kind = cpu.table()
    report = [line for _, line in lines]
    durations = report[next((k for k, line in enumerate(report) if "slowest" in line), len(report)):]
    print("\n".join(durations))
    print(f"\nCPU seconds by process kind ({by_kind['cpu_s'].sum():.0f} in all):")
    print(by_kind.head(30).to_string(float_format=lambda x: f"{x:.1f}"))
    print(f"make test: {lines[-1][0] / 60:.1f} min ({lines[-1][0]:.0f} s), exit status {status}, {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["install", "test"])
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments for `test` (e.g. -m slow)")
    args = parser.parse_args()
    bench_install() if args.what == "install" else bench_test(args.pytest_args)


if __name__ == "__main__":
    main()
