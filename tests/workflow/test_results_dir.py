"""Each config writes into its own results folder (results_dir, polyrag/config/outputs.py): two
tiny configs that differ only in results_dir run one after the other in one working directory; the
second leaves every file of the first as it was (bytes and modification time) and writes nothing
outside its own folder but Snakemake's .snakemake/ and the shared cache; the first then plans
nothing. And the repository's configs plan disjoint paths: a dry run of configs/mirage-bench.yaml
beside the demo (config.yaml) plans no output or log that the demo writes."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

# Answers from mocks and a retrieved system (the system's passage file is a path the config's plan
# builds, polyrag.config.retrieval), judged, fitted and ranked: every kind of path the rules build.
CONFIG = {
    "languages": ["en"],
    "seed": 7,
    "cache_dir": "cache",  # shared by both runs: keyed by content
    "data": {"source": "demo", "max_questions": 4, "arena_queries": 4},
    "models": {
        "mock-0": {"backend": "mock", "error_rate": 0.0, "corruptions": ["refusal"]},
        "mock-grounded": {"backend": "mock", "grounded": True},
    },
    "judges": {"reference": {"backend": "reference"}},
    "arena": {"surrogate": {"holdout_repeats": 5}, "judge": "reference"},
    "retrieval": {"corpora": {"demo": {"source": "demo"}},
                  "retrievers": {"bm25": {"kind": "bm25", "corpus": "demo"}}},
    "systems": {"rag": {"retriever": "bm25", "top_k": 2, "generator": "mock-grounded"}},
}
#: Not the run's files: Snakemake's own records and the shared cache.
NOT_OUTPUTS = {".snakemake", "cache"}


def snakemake(repo, workdir, configfile, *args, env=None):
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(workdir),
                             "--configfile", str(configfile), *args],
                            capture_output=True, text=True, timeout=1500, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def files_under(folder: Path, skip=frozenset()) -> dict[str, tuple[str, int]]:
    """Every file under ``folder`` (but the first-level names in ``skip``): its path relative to
    ``folder``, SHA-256 and modification time in nanoseconds."""
    found = {}
    for root, folders, names in os.walk(folder):
        if Path(root) == folder:
            folders[:] = [name for name in folders if name not in skip]
        for name in names:
            path = Path(root) / name
            if path.parent == folder and name in skip:
                continue
            found[path.relative_to(folder).as_posix()] = (hashlib.sha256(path.read_bytes()).hexdigest(),
                                                          path.stat().st_mtime_ns)
    return found


def test_a_second_config_with_its_own_results_dir_touches_nothing_of_the_first(repo, tmp_path):
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(yaml.safe_dump({**CONFIG, "results_dir": "results"}, sort_keys=False))
    second.write_text(yaml.safe_dump({**CONFIG, "results_dir": "runs/second/"}, sort_keys=False))  # nested, spelled with a /
    snakemake(repo, tmp_path, first, "--cores", "2")
    before = files_under(tmp_path, NOT_OUTPUTS)
    first_files = {path for path in before if path.startswith("results/")}
    # every file the run wrote is in its folder: outputs, logs, benchmarks
    assert set(before) - first_files == {"first.yaml", "second.yaml"}
    assert {"results/leaderboard.csv", "results/logs/arena/leaderboard.log",
            "results/benchmarks/arena/leaderboard.tsv", "results/retrieval/passages/rag/en.parquet"} <= first_files

    snakemake(repo, tmp_path, second, "--cores", "2")
    after = files_under(tmp_path, NOT_OUTPUTS)
    outside = {path: record for path, record in after.items() if not path.startswith("runs/second/")}
    assert outside == before  # the first's files byte- and mtime-identical, nothing new outside the second's folder
    # the second wrote the same files in its own folder, with the same results
    assert {path.removeprefix("runs/second/") for path in after if path not in outside} == \
           {path.removeprefix("results/") for path in first_files}
    assert after["runs/second/leaderboard.csv"][0] == before["results/leaderboard.csv"][0]

    dry = snakemake(repo, tmp_path, first, "-n")
    assert "Nothing to be done" in dry, dry[-3000:]


def planned_paths(repo, workdir, *configfiles) -> set[str]:
    """Every output, log and benchmark file a dry run of these config files plans (the dry run's job
    blocks: ``output:``, ``log:`` and ``benchmark:`` lines, paths separated by ``, ``)."""
    env = {**os.environ, "POLYRAG_MODEL_CHECK": "off"}  # the cluster config's models are not on this machine
    dry = snakemake(repo, workdir, configfiles[0], *configfiles[1:], "-n", env=env)
    return {path for listed in re.findall(r"^\s+(?:output|log|benchmark): (.+)$", dry, re.MULTILINE)
            for path in listed.split(", ")}


def test_the_demo_and_mirage_bench_configs_plan_disjoint_paths(repo, tmp_path):
    demo = planned_paths(repo, tmp_path, repo / "config.yaml")
    mirage = planned_paths(repo, tmp_path, repo / "configs" / "mirage-bench.yaml")
    assert len(demo) > 100 and len(mirage) > 100
    assert not demo & mirage, sorted(demo & mirage)[:5]
    # each in its own folder, logs included
    assert all(path.startswith("results/") for path in demo), sorted(p for p in demo if not p.startswith("results/"))[:5]
    assert all(path.startswith("results-mirage-bench/") for path in mirage)
