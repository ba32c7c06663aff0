"""Snakemake on a tiny config from a test: the config, a run or dry run, and the jobs it schedules."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml


def snakemake(repo, workdir, *args):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(workdir),
         "--configfile", str(workdir / "config.yaml"), *args],
        capture_output=True, text=True, timeout=1200,
    )


def run_config(repo, workdir, config: dict, *args):
    """``config`` written to ``workdir``/config.yaml and the workflow run there on 2 cores; it must succeed."""
    import yaml

    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(repo, workdir, "--cores", "2", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def dry_run(repo, workdir, *args):
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-n", "--configfile",
         str(workdir / "config.yaml"), *args],
        cwd=workdir, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def tiny_config(repo, workdir, languages=("en", "hi"), features=None, mars=None, meta_eval=None, judges=None, checks=None,
                **models):
    config = {
        "languages": list(languages),
        "seed": 7,
        "cache_dir": str(workdir / "cache"),
        "data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 4, "arena_queries": 2},
        "generation": {"max_tokens": 48},
        "models": models,
        "judges": judges or {"reference": {"backend": "reference"}},
        # the YAML written below sorts the judges by name; the surrogate's held-out evaluation
        # (50 repeats by default, tested in arena/test_surrogate.py) is most of a tiny arena's time
        "arena": {"judge": "reference", "surrogate": {"holdout_repeats": 5}},
        "features": features or {},
        "mars": mars,
        "meta_eval": meta_eval,
        "checks": checks,
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    return config


def scheduled_jobs(output: str) -> dict[str, int]:
    table = output.split("Job stats:")[1].split("Reasons:")[0] if "Job stats:" in output else ""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE) if m.group(1) != "total"}
