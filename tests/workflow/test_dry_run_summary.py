"""The documented dry run fits a screen: per rule its jobs and where they run, from the DAG itself
(polyrag/plan_summary.py), checked against Snakemake's own job counts and the rules' `localrule`."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_cluster import local_rules  # noqa: E402  (reads `localrule: True` from rules/*.smk)


def snakemake(repo, args):
    result = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=repo, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def documented_dry_run(repo) -> list[str]:
    """The Makefile's `dry-run` recipe, as `make dry-run` runs it."""
    recipe = (repo / "Makefile").read_text().split("\ndry-run:")[1].split("\n\t")[1].split("\n")[0]
    return shlex.split(recipe.replace("$(BIN)/snakemake", ""))


def job_stats(output: str) -> dict[str, int]:
    """Snakemake's own "Job stats" table of a plain dry run: rule -> jobs."""
    table = output.split("Job stats:\n")[1].split("\ntotal")[0]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+) +(\d+)$", table, re.MULTILINE)}


def summary_rows(output: str) -> tuple[dict[str, int], dict[str, int]]:
    """The summary's cluster rows and local rules: rule -> jobs."""
    cluster = dict(re.findall(r"^(\w+) +(\d+)  cluster ", output, re.MULTILINE))
    local_block = output.split("local rules (on the submitting node), jobs each:\n")[1].split("\ntotal: ")[0]
    local = dict(re.findall(r"(\w+) (\d+)", local_block))
    return ({rule: int(n) for rule, n in cluster.items()}, {rule: int(n) for rule, n in local.items()})


@pytest.mark.slow
def test_the_documented_dry_run_fits_a_screen_and_says_where_each_rule_runs(repo):
    args = documented_dry_run(repo)
    assert "-n" in args and "--configfile" in args
    expected = job_stats(snakemake(repo, ["-n", "--configfile", "config.yaml"]))
    local = local_rules() | {"all"}  # `all` runs no job of its own
    # the ledger's total, as its own command prints it (the model calls and tokens the config implies)
    ledger_total = subprocess.run([sys.executable, "-m", "polyrag.ledger", "--configfile", "config.yaml", "--total"],
                                  cwd=repo, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    assert ledger_total.startswith("ledger: ")
    for extra in ([], ["--profile", "profiles/slurm"]):
        output = snakemake(repo, [*args, *extra])
        assert len(output.splitlines()) <= 60, output
        assert output.count("local rules (on the submitting node)") == 1
        assert ledger_total in output.splitlines()
        cluster, on_node = summary_rows(output)
        assert not set(cluster) & set(on_node)
        assert {**cluster, **on_node} == expected
        assert set(on_node) == local & set(expected) and not set(cluster) & local
        total = re.search(r"^total: (\d+) jobs of (\d+) rules: (\d+) cluster jobs \(\d+ asking for a GPU\), (\d+) local jobs",
                          output, re.MULTILINE)
        assert [int(n) for n in total.groups()] == [sum(expected.values()), len(expected),
                                                     sum(cluster.values()), sum(on_node.values())]
    # the demo declares threads beyond the dry run's one core: the table shows the declaration
    assert re.search(r"^generate_answers +\d+  cluster +4 ", output, re.MULTILINE)
