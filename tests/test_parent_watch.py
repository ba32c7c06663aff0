"""A job's script dies with the Snakemake process that started it (SIGKILL, for real)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.helpers.processes import gone_within, running, wait_for_file


def test_a_script_dies_with_its_parent(tmp_path):
    child = textwrap.dedent(f"""
        import os, time
        from polyrag.parent_watch import die_with_workflow
        die_with_workflow(poll_seconds=0.2)
        open({str(tmp_path / "child.pid")!r}, "w").write(str(os.getpid()))
        time.sleep(60)
    """)
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {child!r}])
        time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid = int(wait_for_file(tmp_path / "child.pid", process, 30))
    process.kill()
    process.wait()
    assert gone_within(pid, 3), "the child outlived its parent"


SNAKEFILE = """
rule slow_job:
    output: "done.txt"
    log: "slow_job.log"
    script: "slow_job.py"
"""

SCRIPT = """
import os
import time
from pathlib import Path

from polyrag.logs import run_logged


def main():
    Path("job.pid").write_text(str(os.getpid()))
    while Path("hang").exists():  # a job that keeps calling an API
        time.sleep(0.2)
    Path(snakemake.output[0]).write_text("done")


run_logged(main, snakemake.log[0])
"""


@pytest.mark.slow
def test_killing_snakemake_stops_its_job_and_the_readme_recovery_works(tmp_path):
    """Snakemake runs a script as ``bash -c "...; python script.py"``: the shell survives a SIGKILL of
    Snakemake, so the script must watch Snakemake itself."""
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "slow_job.py").write_text(SCRIPT)
    (tmp_path / "hang").touch()

    def snakemake(*args):
        return [sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"), "-d", str(tmp_path),
                "--cores", "1", *args]

    process = subprocess.Popen(snakemake(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid = int(wait_for_file(tmp_path / "job.pid", process, 120))
    assert running(pid)
    process.kill()
    process.wait()
    assert gone_within(pid, 5), "the job's script outlived Snakemake"
    assert "the Snakemake process that started this job is gone" in (tmp_path / "slow_job.log").read_text()

    # The recovery the README gives: unlock, then rerun the incomplete job.
    (tmp_path / "job.pid").unlink()
    (tmp_path / "hang").unlink()
    locked = subprocess.run(snakemake(), capture_output=True, text=True, timeout=300)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    subprocess.run(snakemake("--unlock"), check=True, capture_output=True, timeout=300)
    rerun = subprocess.run(snakemake("--rerun-incomplete"), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert (tmp_path / "done.txt").read_text() == "done"
