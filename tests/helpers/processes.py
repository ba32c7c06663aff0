"""Watching processes from a test: whether one runs, a file it writes, that it is gone in time."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped has finished)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def wait_for_file(path: Path, process: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        if process.poll() is not None:
            raise AssertionError(f"exited with {process.returncode} before writing {path}: {process.stdout.read()}")
        assert time.monotonic() < deadline, f"{path} not written within {timeout} s"
        time.sleep(0.1)
    return path.read_text().strip()


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # leave no orphan behind a failed test
            return False
        time.sleep(0.1)
    return True
