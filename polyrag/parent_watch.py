"""A Snakemake script dies with the Snakemake process that started it.

Snakemake runs a ``script:`` as ``bash -c "set -euo pipefail; python script.py"`` from its main
process, so when Snakemake is killed (SIGKILL, a crashed login node) the shell and the script
live on as orphans, and a script that calls a paid API keeps calling it while a rerun sends the
same requests again. ``prctl(PR_SET_PDEATHSIG)`` would only watch the shell, which does not die
either, so a watchdog thread checks every process from the script's parent up to the nearest
Snakemake process and ends the script when one of them is gone. Outside Snakemake it watches
the parent alone. Responses already received are in the durable cache; nothing else is lost.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

#: Exit status of a script stopped because its workflow is gone (128 + SIGHUP, as a hang-up would).
ORPHANED_EXIT = 129


def process_identity(pid: int) -> tuple[int, int] | None:
    """``(parent pid, start time)`` from ``/proc/PID/stat``, or None when the process is gone.

    The start time tells a live process from a new one that reuses its pid; a zombie counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name in parentheses may hold spaces
    state, parent, start = fields[0], int(fields[1]), int(fields[19])
    return None if state in ("Z", "X") else (parent, start)


def is_snakemake(pid: int) -> bool:
    """Whether the process runs Snakemake (``snakemake ...`` or ``python -m snakemake ...``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(Path(os.fsdecode(arg)).name == "snakemake" for arg in argv[:3])


def watched_processes(pid: int) -> list[tuple[int, int]]:
    """``(pid, start time)`` of the ancestors from the parent of ``pid`` up to the nearest Snakemake
    process; only the parent when no ancestor is Snakemake."""
    chain: list[tuple[int, int]] = []
    identity = process_identity(pid)
    while identity is not None and identity[0] > 1:
        ancestor = identity[0]
        identity = process_identity(ancestor)
        if identity is None:
            break
        chain.append((ancestor, identity[1]))
        if is_snakemake(ancestor):
            return chain
    return chain[:1]


def all_alive(processes: list[tuple[int, int]]) -> bool:
    return all((identity := process_identity(pid)) is not None and identity[1] == start for pid, start in processes)


def die_with_workflow(poll_seconds: float = 1.0) -> None:
    """Start a daemon thread that ends this process when Snakemake (or the parent) is gone."""
    if not Path("/proc/self/stat").exists():  # not Linux: watch the parent through getppid
        parent = os.getppid()
        alive = lambda: os.getppid() == parent  # noqa: E731 - reparented once the parent is gone
    else:
        processes = watched_processes(os.getpid())
        alive = lambda: all_alive(processes)  # noqa: E731

    def watch() -> None:
        while alive():
            time.sleep(poll_seconds)
        print(f"polyrag: the Snakemake process that started this job is gone; stopping the job "
              f"(pid {os.getpid()}). Run `snakemake --unlock`, then rerun with --rerun-incomplete",
              file=sys.stderr, flush=True)
        os._exit(ORPHANED_EXIT)  # nothing to clean up: every response is already committed to the cache

    threading.Thread(target=watch, name="die-with-workflow", daemon=True).start()
