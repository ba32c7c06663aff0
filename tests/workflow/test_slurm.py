"""The users' cluster command for real: a small config through profiles/slurm on a one-node SLURM
cluster (Debian's slurm-wlm and munge, one fake GPU, no accounting database), against a local run.

CI (.ci/run) installs the packages and sets POLYRAG_REQUIRE_SLURM=1, so there this test must run;
elsewhere it starts the cluster itself when it can (root, packages installed) and skips otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.helpers.environment import skip_unless_required

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def slurm_cluster(repo):
    if subprocess.run(["sinfo", "--noheader"], capture_output=True).returncode == 0 if shutil.which("sinfo") else False:
        return
    missing = [command for command in ("sinfo", "slurmctld", "slurmd", "munged") if not shutil.which(command)]
    if not missing and os.geteuid() == 0:
        started = subprocess.run([repo / "tests" / "helpers" / "slurm" / "start_single_node.sh"], capture_output=True, text=True)
        assert started.returncode == 0, started.stdout + started.stderr
        return
    reason = f"no SLURM cluster here (missing {missing or 'root to start one'}); apt-get install slurm-wlm munge"
    skip_unless_required(reason, "POLYRAG_REQUIRE_SLURM")


def write_config(workdir, repo):
    config = {
        "languages": ["en", "de"],
        "seed": 7,
        "cache_dir": str(workdir / "cache"),
        "data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 4, "arena_queries": 2},
        "generation": {"max_tokens": 48},
        "models": {
            "mock-0": {"backend": "mock", "error_rate": 0.0},
            "mock-50": {"backend": "mock", "error_rate": 0.5},
            # A mock that declares a GPU, standing in for a vLLM model: its job must ask SLURM for one.
            "mock-gpu": {"backend": "mock", "error_rate": 0.8, "resources": {"gpu": 1}},
        },
        "judges": {"reference": {"backend": "reference"}},
        "arena": {"surrogate": {"holdout_repeats": 5}},  # as test_workflow.tiny_config
        "features": {},
        "mars": None,
        "meta_eval": None,
    }
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def run_snakemake(repo, workdir, *args):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "results/leaderboard.csv",
         "--configfile", "config.yaml", *args],
        cwd=workdir, capture_output=True, text=True, timeout=600,
    )


def test_leaderboard_through_the_slurm_profile_equals_a_local_run(slurm_cluster, repo, tmp_path):
    local, cluster = tmp_path / "local", tmp_path / "cluster"
    for workdir in (local, cluster):
        write_config(workdir, repo)
    result = run_snakemake(repo, local, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]

    # The profile as users run it; only the first status check comes sooner, to keep the test short.
    result = run_snakemake(repo, cluster, "--profile", str(repo / "profiles" / "slurm"), "--verbose",
                           "--slurm-init-seconds-before-status-checks", "3")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    assert (cluster / "results" / "leaderboard.csv").read_bytes() == (local / "results" / "leaderboard.csv").read_bytes()

    # Every non-local job went through sbatch; SLURM itself reports each one (MinJobAge keeps
    # finished jobs for 300 s): completed, named by rule and wildcards, GPU where the rule asked.
    job_ids = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    jobs = {job_id: slurm_job(job_id) for job_id in job_ids}
    assert all(job["JobState"] == "COMPLETED" for job in jobs.values()), jobs
    submitted = sorted(job["Comment"] for job in jobs.values())
    executed = re.findall(r"^(local)?rule (\w+):$", log, re.MULTILINE)
    assert sorted(re.sub(r"_wildcards_.*", "", name).removeprefix("rule_") for name in submitted) == sorted(
        rule for local_flag, rule in executed if not local_flag)
    assert {rule for local_flag, rule in executed if local_flag} == {
        "merge_features", "answer_manifest", "feature_manifest", "judge_pair", "gather_games", "leaderboard"}
    # One job per model for generation and for each feature group (every language inside it).
    assert [name for name in submitted if "generate_answers" in name] == [
        f"rule_generate_answers_wildcards_{model}" for model in ("mock-0", "mock-50", "mock-gpu")]
    assert sum("deterministic_features" in name for name in submitted) == 3
    gpus = {job["Comment"]: job.get("TresPerJob") for job in jobs.values()}
    assert gpus.pop("rule_generate_answers_wildcards_mock-gpu") == "gres:gpu:1"
    assert set(gpus.values()) == {None}


def slurm_job(job_id: str) -> dict[str, str]:
    """scontrol's record of one job as key=value pairs (the -o form: one line)."""
    shown = subprocess.run(["scontrol", "show", "job", "-o", "-d", job_id], capture_output=True, text=True, check=True)
    return dict(field.split("=", 1) for field in shown.stdout.split() if "=" in field)


def test_sacct_without_accounting_database_stops_the_run_with_what_to_set(slurm_cluster, repo, tmp_path):
    """This cluster has no slurmdbd: with sacct as the status command the plugin would wait for
    ever for the first job. The run stops before submitting anything and says what to set."""
    write_config(tmp_path, repo)
    result = run_snakemake(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm"),
                           "--slurm-status-command", "sacct")
    assert result.returncode != 0
    assert "sacct cannot report job states on this cluster" in result.stderr
    assert "slurm-status-command: squeue" in result.stderr
    assert "submitted with SLURM jobid" not in result.stdout + result.stderr


def test_status_command_the_plugin_will_use():
    from polyrag.cluster import status_command_in_use

    # squeue forgets finished jobs after MinJobAge; under 3 x the first wait the plugin takes sacct.
    assert status_command_in_use("squeue", 300, 40) == "squeue"
    assert status_command_in_use("squeue", 60, 40) == ("sacct" if shutil.which("sacct") else "squeue")
    assert status_command_in_use("sacct", 300, 40) == "sacct"
