"""Where the demo's time goes: wall time of the whole run and a per-stage table of the rules'
benchmark files (Snakemake's ``benchmark:`` records per job: wall seconds and CPU seconds).

    .venv/bin/python benchmarks/bench_demo.py --run        # the demo in a scratch folder, then the table
    .venv/bin/python benchmarks/bench_demo.py DIR          # the table of a finished run in DIR (e.g. .)

The target is 15 minutes of wall time on 2 cores with nothing else running. --run uses a fresh
LLM cache, so Gemma's answers and the MARS synthetic data are generated, not read back.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
#: Stages named by the first folders of their benchmark files (results/benchmarks/<stage>/...).
STAGE_DEPTH = {"generate": 1, "judge": 1, "mars": 1, "meta_eval": 2, "arena": 1}


def stage_of(relative: Path) -> str:
    parts = relative.parts
    if parts[0] == "features":  # features/{model}/{lang}/{group}.tsv: the group is the stage
        return f"features/{relative.stem}"
    return "/".join(parts[: 1 + STAGE_DEPTH.get(parts[0], 0)]).removesuffix(".tsv")


def stage_table(run_dir: Path) -> pd.DataFrame:
    root = run_dir / "results" / "benchmarks"
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        record = pd.read_csv(path, sep="\t").iloc[0]
        rows.append({"stage": stage_of(path.relative_to(root)), "wall_s": record["s"], "cpu_s": record["cpu_time"]})
    if not rows:
        sys.exit(f"no benchmark files under {root}: run the demo first (or pass --run)")
    jobs = pd.DataFrame(rows)
    table = jobs.groupby("stage").agg(jobs=("wall_s", "size"), wall_s=("wall_s", "sum"), mean_s=("wall_s", "mean"),
                                       max_s=("wall_s", "max"), cpu_s=("cpu_s", "sum"))
    table = table.sort_values("wall_s", ascending=False).reset_index()
    total = {"stage": "all benchmarked jobs", "jobs": len(jobs), "wall_s": jobs["wall_s"].sum(),
             "mean_s": jobs["wall_s"].mean(), "max_s": jobs["wall_s"].max(), "cpu_s": jobs["cpu_s"].sum()}
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def run_demo(workdir: Path, cores: int) -> tuple[float, int]:
    """Seconds and number of jobs of the whole demo (run and report) in ``workdir``."""
    base = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            "--configfile", str(REPO / "config.yaml")]
    start = time.perf_counter()
    result = subprocess.run([*base, "--cores", str(cores)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"demo run failed:\n{result.stderr[-3000:]}")
    report = subprocess.run([*base, "--report", str(workdir / "results" / "report.html")], capture_output=True, text=True)
    if report.returncode != 0:
        sys.exit(f"report failed:\n{report.stderr[-3000:]}")
    jobs = result.stderr.count("Finished jobid")
    return time.perf_counter() - start, jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", nargs="?", type=Path, help="folder of a finished run (holding results/)")
    parser.add_argument("--run", action="store_true", help="run the demo in a scratch folder first")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    if args.run == (args.run_dir is not None):
        parser.error("give either --run or the folder of a finished run")
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = Path(scratch) if args.run else args.run_dir
        if args.run:
            seconds, jobs = run_demo(run_dir, args.cores)
            print(f"demo (run and report): {seconds / 60:.1f} min wall, {jobs} jobs, {args.cores} cores")
        table = stage_table(run_dir)
    print("\nPer stage (sums over jobs; jobs run in parallel, so the sum of wall seconds exceeds the run's)")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}"))


if __name__ == "__main__":
    main()
