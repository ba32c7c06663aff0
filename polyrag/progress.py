"""Progress of long stages in job logs: a tqdm line with counts, rate and ETA every 15 seconds.

Scripts run by ``polyrag.logs.run_logged`` write stderr to the rule's log through ``LogLines``,
which turns each refresh of a bar (tqdm rewrites its line with a carriage return) into a line
of its own, so ``tail -f results/logs/...`` reads like a log and not like one endless line."""

from __future__ import annotations

from tqdm import tqdm

INTERVAL_SECONDS = 15.0
LINE = "{desc}: {n_fmt}/{total_fmt} {unit} ({percentage:.0f}%), {elapsed} elapsed, ETA {remaining}, {rate_fmt}"


def progress(iterable=None, *, total: int | None = None, desc: str, unit: str = "it", min_total: int = 1) -> tqdm:
    """A bar for ``total`` steps, silent when there are fewer than ``min_total`` (small batches)."""
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    return tqdm(iterable, total=total, desc=desc, unit=unit, mininterval=INTERVAL_SECONDS, bar_format=LINE,
                disable=total is not None and total < min_total)


class LogLines:
    """A text stream over a log file where each carriage-return refresh becomes a new line."""

    def __init__(self, handle):
        self.handle = handle

    def write(self, text: str) -> int:
        if text == "\n":  # a closing bar's line end: its last refresh already ended a line
            return 1
        if "\r" not in text:
            return self.handle.write(text)
        for part in text.split("\r"):
            if part.strip():
                self.handle.write(part.rstrip() + "\n")
        return len(text)

    def __getattr__(self, name):
        return getattr(self.handle, name)
