"""The shape of the DAG for clusters, from dry runs: one job per model and stage, one job per judge
on local weights, one job per pair for API judges, and the cluster-scale counts."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_cluster import job_table, scaled_config  # noqa: E402

from .test_workflow import scheduled_jobs, tiny_config  # noqa: E402


def dry_run(repo, workdir, *args):
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-n", "--configfile",
         str(workdir / "config.yaml"), *args],
        cwd=workdir, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_a_judge_on_local_weights_judges_every_pair_in_one_job(repo, tmp_path):
    tiny_config(repo, tmp_path, languages=["en", "de", "hi"],
                **{f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 20, 50, 80)})
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["judges"] = {"reference": {"backend": "reference"},
                        "local-judge": {"backend": "transformers", "model": "example/judge", "device": "cpu"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    output = dry_run(repo, tmp_path)
    jobs = scheduled_jobs(output)
    # 6 pairs: one job each for the reference judge (every language inside), one for the local judge.
    assert jobs["judge_pair"] == 6 and jobs["judge_pairs_local_model"] == 1
    assert jobs["generate_answers"] == 4 and jobs["deterministic_features"] == 4 and jobs["merge_features"] == 4
    block = output.split("rule judge_pairs_local_model:")[1].split("\n\n")[0]
    assert "output: " + ", ".join(f"results/judgments/local-judge/{lang}/games.parquet" for lang in ("en", "de", "hi")) in block
    assert "gpu=1" in block  # the transformers default: a GPU job on clusters
    bradley_terry = [b for b in output.split("\n\n") if "rule bradley_terry:" in b and "judge=local-judge, lang=de" in b]
    assert "input: results/judgments/local-judge/de/games.parquet\n" in bradley_terry[0]


@pytest.mark.slow
def test_mirage_bench_at_20_models_and_18_languages_submits_a_few_hundred_jobs(repo, tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(scaled_config(20), sort_keys=False))
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm")))
    counts = jobs["rule"].value_counts()
    assert counts["judge_pair"] == 19 * 18 // 2 and jobs.query("rule == 'judge_pair'")["local"].all()
    assert counts["generate_answers"] == counts["nli_features"] == counts["reranker_features"] == 20
    gpu = jobs[jobs["gpu"] > 0]
    assert not gpu.duplicated(["rule", "model"]).any()  # one load per GPU model and stage
    assert (~jobs["local"]).sum() <= 500
