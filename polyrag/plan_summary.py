"""What a dry run would run, and where, on one screen.

``snakemake -n`` prints every job (thousands of lines at MIRAGE-BENCH scale) and its job table
twice, and prints every job as ``rule``: Snakemake decides whether a job runs on the submitting
node only when it runs it. The Snakefile registers :func:`watch_dry_runs`, which prints one table
from the DAG itself when a dry run has built it: per rule, its jobs, where they run (``local``: a
local rule, run on the submitting node; ``cluster``: one job each under a cluster executor such
as profiles/slurm, the local cores otherwise) and the largest threads, GPUs, memory and runtime
any of its jobs asks for; then the totals, and the ledger's total of model calls and tokens
(polyrag/ledger.py). With ``--quiet rules progress`` (Snakemake's "just a
summary of the DAG") the dry run prints only that table after its header, and stops there.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

#: Local rules listed on lines of at most this width (their rows alone would not fit a screen).
WIDTH = 100


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    local: bool
    threads: int
    gpu: int
    mem_mb: int | None  # None: not declared, or left to be determined when the job runs
    runtime: int | None


def planned_jobs(dag_jobs: Iterable, local_rules: set[str]) -> list[PlannedJob]:
    """One row per job Snakemake would run, with the resources it asks for."""

    def number(resources, name):
        value = resources.get(name)
        return value if isinstance(value, int) else None  # absent, or a TBD string until the job runs

    return [PlannedJob(rule=job.rule.name, local=job.rule.name in local_rules, threads=declared_threads(job),
                       gpu=number(job.resources, "gpu") or 0,  # a job that names no GPU asks for none
                       mem_mb=number(job.resources, "mem_mb"), runtime=number(job.resources, "runtime"))
            for job in dag_jobs]


def declared_threads(job) -> int:
    """The threads the rule declares for this job. ``job.threads`` is capped at ``--cores``, which a
    dry run sets to 1 unless told, whatever the executor; this evaluates the declaration as
    Snakemake's Rule.expand_resources does (snakemake 9.27), without the cap."""
    declared, _ = job.rule.apply_input_function(
        job.rule.resources["_cores"].evaluate, job.wildcards, input=job.input, attempt=job.attempt,
        incomplete_checkpoint_func=lambda error: 0, raw_exceptions=True, rulename=job.rule.name,
        async_run=job.dag.workflow.async_run)
    return declared.value


def most(values) -> str:
    """The largest of a rule's values, or "?" where a job's value is not known before it runs."""
    values = list(values)
    return "?" if any(value is None for value in values) else str(max(values))


def format_plan(jobs: list[PlannedJob]) -> str:
    """The table: cluster rules one row each (most jobs first), local rules as ``name count`` on
    wrapped lines, and the totals."""
    rules: dict[str, list[PlannedJob]] = {}
    for job in jobs:
        rules.setdefault(job.rule, []).append(job)
    cluster = sorted((name for name, group in rules.items() if not group[0].local), key=lambda name: (-len(rules[name]), name))
    local = sorted((name for name, group in rules.items() if group[0].local), key=lambda name: (-len(rules[name]), name))
    width = max([len("rule"), *map(len, cluster)])
    lines = [f"{'rule':<{width}}  {'jobs':>5}  where    threads  gpu  mem_mb  runtime_min"]
    for name in cluster:
        group = rules[name]
        lines.append(f"{name:<{width}}  {len(group):>5}  cluster  {max(j.threads for j in group):>7}  "
                     f"{max(j.gpu for j in group):>3}  {most(j.mem_mb for j in group):>6}  "
                     f"{most(j.runtime for j in group):>11}")
    if local:
        lines.append("local rules (on the submitting node), jobs each:")
        lines += textwrap.wrap(", ".join(f"{name} {len(rules[name])}" for name in local), WIDTH,
                               initial_indent="  ", subsequent_indent="  ")
    on_node = sum(len(rules[name]) for name in local)
    gpu_jobs = sum(job.gpu > 0 for job in jobs)
    lines.append(f"total: {len(jobs)} jobs of {len(rules)} rules: {len(jobs) - on_node} cluster jobs "
                 f"({gpu_jobs} asking for a GPU), {on_node} local jobs on the submitting node")
    lines.append("(threads, gpu, mem_mb, runtime_min: the most any of the rule's jobs asks for; ?: known when it runs)")
    return "\n".join(lines)


class DryRunPlan(logging.Handler):
    """Prints :func:`format_plan` once, when a dry run logs its job statistics (the DAG is built)."""

    def __init__(self, workflow):
        super().__init__()
        self.workflow = workflow
        self.printed = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.printed or not hasattr(record, "stats") or not self.workflow.dryrun:
            return
        self.printed = True
        # Rules marked `localrule: True` or named in `localrules:`, and rules that run no job
        # (`all`). Workflow.is_local() cannot say it here: under a dry run every job is local.
        local_rules = {rule.name for rule in self.workflow.rules
                       if rule.name in self.workflow._localrules or rule.norun}
        print(format_plan(planned_jobs(self.workflow.dag.needrun_jobs(), local_rules)), flush=True)
        from polyrag.ledger import dry_run_total  # the model calls and tokens the config implies

        print(dry_run_total(self.workflow.config), flush=True)


def watch_dry_runs(workflow) -> None:
    """Called from the Snakefile: print the plan of any dry run of this workflow."""
    logging.getLogger("snakemake").addHandler(DryRunPlan(workflow))
