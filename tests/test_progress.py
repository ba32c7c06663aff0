"""Progress lines in job logs: one line per refresh with counts and an ETA."""

from __future__ import annotations

import io
import re
import sys

from polyrag import progress as progress_module
from polyrag.progress import LogLines, progress


def test_each_refresh_is_a_line_with_counts_and_eta(monkeypatch):
    monkeypatch.setattr(progress_module, "INTERVAL_SECONDS", 0.0)
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", LogLines(log))  # what run_logged does for every script
    with progress(total=4, desc="judge a vs b", unit="req") as bar:
        for _ in range(4):
            bar.update(1)
    text = log.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and "" not in lines
    assert [re.match(r"judge a vs b: (\d)/4 req \((\d+)%\), 00:00 elapsed, ETA ", line).groups() for line in lines[:5]] == [
        ("0", "0"), ("1", "25"), ("2", "50"), ("3", "75"), ("4", "100")]


def test_small_batches_print_nothing(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", LogLines(log))
    with progress(total=3, desc="e5", unit="text", min_total=10) as bar:
        bar.update(3)
    assert log.getvalue() == ""
