"""Where the demo's time goes: the wall time of the whole run, a per-stage table of the rules'
benchmark files (Snakemake's ``benchmark:`` records per job: wall seconds and CPU seconds), and,
from Snakemake's own log of the run, the per-job timeline, the critical path (the chain of jobs
that set the wall time, with the seconds each waited for a free core) and how much of the wall
time two or more jobs ran at once.

    .venv/bin/python benchmarks/bench_demo.py --run        # the demo in a scratch folder, then the tables
    .venv/bin/python benchmarks/bench_demo.py --run --full # the whole showcase (configs/demo-full.yaml)
    .venv/bin/python benchmarks/bench_demo.py --run --config PATH   # ... or any config
    .venv/bin/python benchmarks/bench_demo.py --run --keep DIR   # ... in DIR, kept (results, checks)
    .venv/bin/python benchmarks/bench_demo.py DIR          # the tables of a finished run in DIR (e.g. .)
    .venv/bin/python benchmarks/bench_demo.py DIR --log PATH   # ... with its log elsewhere than DIR/snakemake.log

The target is 10 minutes of wall time on 2 cores with nothing else running (`make demo`,
config.yaml). --run uses a fresh LLM cache, so Gemma's answers and the MARS synthetic data are
generated, not read back; it saves Snakemake's log as snakemake.log in its scratch folder. Times in
the log have second resolution. The run's known-truth checks (results/checks.csv) are printed, and
the script exits with status 1 when one failed or none were written.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import pandas as pd

from polyrag.config.outputs import configured_results_dir
from polyrag.csv_tables import read_table
from polyrag.show import checks_block

REPO = Path(__file__).resolve().parent.parent
#: Stages named by the first folders of their benchmark files (RESULTS/benchmarks/<stage>/...).
STAGE_DEPTH = {"generate": 1, "judge": 1, "mars": 1, "meta_eval": 2, "arena": 1}
#: Snakemake's log: ``[Wed Nov 25 13:36:28 2026]`` before every job's start and end, then a
#: ``rule NAME:`` block with indented fields, or ``Finished jobid: N (Rule: NAME)``.
TIMESTAMP = re.compile(r"^\[(\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4})\]$")
JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")
JOB_FIELD = re.compile(r"^\s+(input|output|jobid|wildcards|threads): (.*)$")
FINISHED = re.compile(r"^Finished job(?:id:)? (\d+)")
LOG_NAME = "snakemake.log"
DEMO_CONFIG = REPO / "config.yaml"
FULL_CONFIG = REPO / "configs" / "demo-full.yaml"


def stage_of(relative: Path) -> str:
    parts = relative.parts
    if parts[0] == "features":  # features/{model}/{lang}/{group}.tsv: the group is the stage
        return f"features/{relative.stem}"
    return "/".join(parts[: 1 + STAGE_DEPTH.get(parts[0], 0)]).removesuffix(".tsv")


def results_folder(run_dir: Path, config: Path = DEMO_CONFIG) -> Path:
    """The results folder of the run of ``config`` in ``run_dir`` (its results_dir)."""
    return run_dir / configured_results_dir([config])


def stage_table(run_dir: Path, stage=stage_of, config: Path = DEMO_CONFIG) -> pd.DataFrame:
    """Jobs, wall and CPU seconds per stage (``stage``: a benchmark file's path under
    RESULTS/benchmarks to its stage's name), and a last row over all jobs."""
    root = results_folder(run_dir, config) / "benchmarks"
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        record = pd.read_csv(path, sep="\t").iloc[0]
        rows.append({"stage": stage(path.relative_to(root)), "wall_s": record["s"], "cpu_s": record["cpu_time"]})
    if not rows:
        sys.exit(f"no benchmark files under {root}: run the demo first (or pass --run)")
    jobs = pd.DataFrame(rows)
    table = jobs.groupby("stage").agg(jobs=("wall_s", "size"), wall_s=("wall_s", "sum"), mean_s=("wall_s", "mean"),
                                       max_s=("wall_s", "max"), cpu_s=("cpu_s", "sum"))
    table = table.sort_values("wall_s", ascending=False).reset_index()
    total = {"stage": "all benchmarked jobs", "jobs": len(jobs), "wall_s": jobs["wall_s"].sum(),
             "mean_s": jobs["wall_s"].mean(), "max_s": jobs["wall_s"].max(), "cpu_s": jobs["cpu_s"].sum()}
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def parse_log(text: str) -> pd.DataFrame:
    """The finished jobs of a Snakemake log, one row per job id: rule, wildcards, threads (1 where
    the log prints none), inputs, outputs, start and end (the timestamps printed before the job's
    block and before its ``Finished`` line) and ``finish_order`` (the order of the ``Finished``
    lines, which breaks ties within a second). Lines of other kinds (``Select jobs to execute...``,
    the jobs' own output) are skipped; a job started twice (a restart) keeps its last start; a job
    that never finished (failed) is left out."""
    clock, block, started, ended, finished = None, None, {}, {}, 0
    for line in text.splitlines():
        if match := TIMESTAMP.match(line):
            clock, block = datetime.strptime(match[1], "%a %b %d %H:%M:%S %Y"), None
        elif match := JOB_HEADER.match(line):
            block = {"rule": match[1], "wildcards": "", "threads": 1, "inputs": (), "outputs": (), "start": clock}
        elif block is not None and (match := JOB_FIELD.match(line)):
            field, value = match[1], match[2].strip()
            if field == "jobid":
                started[int(value)] = block
            elif field in ("input", "output"):
                block[f"{field}s"] = tuple(value.split(", "))
            elif field == "threads":
                block[field] = int(value)
            else:
                block[field] = value
        elif (match := FINISHED.match(line)) and clock is not None:
            block, finished = None, finished + 1
            ended[int(match[1])] = (clock, finished)
    rows = [{"jobid": jobid, **job, "end": ended[jobid][0], "finish_order": ended[jobid][1]}
            for jobid, job in started.items() if jobid in ended and job["start"] is not None]
    columns = ["jobid", "rule", "wildcards", "threads", "inputs", "outputs", "start", "end", "finish_order"]
    return pd.DataFrame(rows, columns=columns).sort_values(["start", "jobid"]).reset_index(drop=True)


def timeline(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per job: start and end in seconds from the first job's start, and duration."""
    origin = jobs["start"].min()
    table = jobs[["jobid", "rule", "wildcards", "threads"]].copy()
    table["start_s"] = (jobs["start"] - origin).dt.total_seconds()
    table["end_s"] = (jobs["end"] - origin).dt.total_seconds()
    table["duration_s"] = table["end_s"] - table["start_s"]
    return table


def critical_path(jobs: pd.DataFrame) -> pd.DataFrame:
    """The chain of jobs that set the wall time, first job first. It starts from the job that
    finished last and walks back, each time to the job that produced one of its inputs and finished
    last. ``wait_before_s``: the seconds between that predecessor's end (the run's start for the
    first job) and the job's start, time spent waiting for a free core; so the durations and waits
    of the path add up to the wall time.

    The edges are the log's own ``input:`` lines, those of the run itself: ``snakemake
    --detailed-summary`` gives the same ones between outputs (checked on a 168-job demo run), but
    none into the target rule ``all`` (it has no output), and it rebuilds the DAG from the Snakefile
    as it is now."""
    table = timeline(jobs).assign(inputs=jobs["inputs"], finish_order=jobs["finish_order"]).set_index("jobid")
    producer = {output: jobid for jobid, outputs in zip(jobs["jobid"], jobs["outputs"]) for output in outputs}
    last_to_finish = table.sort_values(["end_s", "finish_order"]).index
    path, current = [], last_to_finish[-1]
    while current is not None and current not in path:
        path.append(current)
        before = {producer[name] for name in table.at[current, "inputs"] if name in producer} - {current}
        current = table.loc[list(before)].sort_values(["end_s", "finish_order"]).index[-1] if before else None
    steps = table.loc[path[::-1], ["rule", "wildcards", "threads", "start_s", "duration_s", "end_s"]].reset_index()
    previous_end = steps["end_s"].shift(1, fill_value=0.0)  # the path's first job waits from the run's start
    steps["wait_before_s"] = steps["start_s"] - previous_end
    return steps.drop(columns="end_s")


def seconds_by_concurrency(intervals: list[tuple[float, float]]) -> pd.Series:
    """Seconds from the first start to the last end during which 0, 1, 2, ... of the
    ``(start, end)`` intervals were running, indexed by that number."""
    change: dict[float, int] = {}
    for start, end in intervals:
        change[start] = change.get(start, 0) + 1
        change[end] = change.get(end, 0) - 1
    times = sorted(change)
    seconds: dict[int, float] = {}
    running = 0
    for now, following in zip(times, times[1:]):
        running += change[now]
        seconds[running] = seconds.get(running, 0.0) + following - now
    return pd.Series(seconds, dtype=float).sort_index()


def overlap_table(intervals: list[tuple[float, float]]) -> pd.DataFrame:
    """Seconds and share of the wall time (first start to last end) with no job running, exactly
    one, and two or more at the same time."""
    seconds = seconds_by_concurrency(intervals)
    rows = [("no job", seconds.get(0, 0.0)), ("exactly one job", seconds.get(1, 0.0)),
            ("two or more jobs", seconds[seconds.index >= 2].sum())]
    table = pd.DataFrame(rows, columns=["running", "seconds"])
    table["share"] = table["seconds"] / seconds.sum()
    return table


def demo_commands(workdir: Path, config: Path) -> tuple[list[str], list[str]]:
    """Snakemake's command lines for the demo of ``config`` in ``workdir``: the run (cores to be
    added) and its report."""
    base = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            "--configfile", str(config)]
    return base, [*base, "--report", str(results_folder(workdir, config) / "report.html")]


def run_demo(workdir: Path, cores: int, config: Path = DEMO_CONFIG) -> tuple[float, int]:
    """Seconds and number of jobs of the whole demo of ``config`` (run and report) in ``workdir``;
    Snakemake's log of the run goes to ``workdir/snakemake.log``."""
    run, report_command = demo_commands(workdir, config)
    log = workdir / LOG_NAME
    start = time.perf_counter()
    with log.open("w") as stderr:
        result = subprocess.run([*run, "--cores", str(cores)], stdout=subprocess.PIPE, stderr=stderr, text=True)
    if result.returncode != 0:
        sys.exit(f"demo run failed (log: {log}):\n{log.read_text()[-3000:]}")
    report = subprocess.run(report_command, capture_output=True, text=True)
    if report.returncode != 0:
        sys.exit(f"report failed:\n{report.stderr[-3000:]}")
    jobs = log.read_text().count("Finished jobid")
    return time.perf_counter() - start, jobs


def checks_verdict(run_dir: Path, config: Path = DEMO_CONFIG) -> tuple[str, bool]:
    """The run's checks block as make demo prints it, and whether every check passed (False when
    checks.csv in the config's results folder is missing or empty: both demo configs turn checks on)."""
    path = results_folder(run_dir, config) / "checks.csv"
    if not path.is_file():
        return f"no known-truth checks: {path} is missing\n", False
    checks = read_table(path)
    passed = checks["passed"].astype(str).str.lower() == "true"
    return checks_block(checks, path), bool(len(checks)) and bool(passed.all())


def print_table(title: str, table: pd.DataFrame, **formatters) -> None:
    """``table`` under ``title``, its text columns left-aligned, numbers to 0.1."""
    table = table.copy()
    for column in table.select_dtypes(exclude="number").columns:
        width = max(len(column), table[column].str.len().max())
        table[column] = table[column].str.ljust(width)
        table = table.rename(columns={column: column.ljust(width)})
    print(f"\n{title}")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}", formatters=formatters))


def print_log_tables(log: Path) -> None:
    """The timeline, critical path and overlap of the run that ``log`` records."""
    jobs = parse_log(log.read_text())
    if jobs.empty:
        print(f"\nno finished jobs in {log}")
        return
    times = timeline(jobs)
    wall = times["end_s"].max()
    print(f"\nSnakemake's log {log}: {len(jobs)} finished jobs, {wall:.0f} s ({wall / 60:.1f} min) from the first "
          f"job's start ({jobs['start'].min():%H:%M:%S}) to the last one's end; seconds below count from that start")
    print_table("Per job (start, end and duration in s; the log's times have second resolution)", times)
    path = critical_path(jobs)
    running, waiting = path["duration_s"].sum(), path["wait_before_s"].sum()
    print_table("Critical path, walked back from the job that finished last: each job's predecessor is the job that\n"
                "produced one of its inputs and finished last; wait_before_s: from that predecessor's end (the run's\n"
                "start for the first job) to the job's start, time spent waiting for a free core", path)
    print(f"on the path: {running:.0f} s running + {waiting:.0f} s waiting = {running + waiting:.0f} s; "
          f"the run's wall time: {wall:.0f} s")
    busy = (times["duration_s"] * times["threads"]).sum()
    print(f"all jobs: {times['duration_s'].sum():.0f} s running, {busy:.0f} thread-seconds (duration x threads), "
          f"{busy / wall:.2f} threads busy on average")
    print_table(f"Jobs running at the same time (shares of the {wall:.0f} s wall time)",
                overlap_table(list(zip(times["start_s"], times["end_s"]))), seconds="{:.0f}".format,
                share="{:.1%}".format)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", nargs="?", type=Path,
                        help="folder of a finished run (holding the config's results folder)")
    parser.add_argument("--run", action="store_true", help="run the demo in a scratch folder first")
    parser.add_argument("--cores", type=int, default=2)
    configs = parser.add_mutually_exclusive_group()
    configs.add_argument("--config", "--configfile", type=Path, default=DEMO_CONFIG,
                         help="the config to run, or the finished run's (its results_dir holds the results; "
                              "default: config.yaml, the demo make demo runs)")
    configs.add_argument("--full", action="store_const", dest="config", const=FULL_CONFIG,
                         help="the whole showcase, configs/demo-full.yaml (make demo-full)")
    parser.add_argument("--keep", type=Path, help="with --run: run in this (new) folder and keep it, results and all")
    parser.add_argument("--log", type=Path, help=f"Snakemake's log of the run in DIR (default: DIR/{LOG_NAME})")
    args = parser.parse_args()
    if args.run == (args.run_dir is not None):
        parser.error("give either --run or the folder of a finished run")
    if args.run and args.log:
        parser.error("--run writes and reads its own log; --log is for a finished run")
    if args.log and not args.log.is_file():
        parser.error(f"no log at {args.log}")
    if args.keep and (not args.run or args.keep.exists()):
        parser.error("--keep takes a folder that does not exist yet, with --run")
    if not args.config.is_file():
        parser.error(f"--config {args.config}: no such file")
    all_passed = True
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run_dir or args.keep or Path(scratch)
        if args.run:
            run_dir.mkdir(parents=True, exist_ok=True)
            seconds, jobs = run_demo(run_dir, args.cores, args.config.resolve())
            print(f"demo {args.config} (run and report): {seconds / 60:.1f} min wall, {jobs} jobs, {args.cores} cores")
            block, all_passed = checks_verdict(run_dir, args.config)
            print("\n" + block)
        print_table("Per stage (sums over jobs; jobs run in parallel, so the sum of wall seconds exceeds the run's)",
                    stage_table(run_dir, config=args.config))
        log = args.log or run_dir / LOG_NAME
        if log.is_file():
            print_log_tables(log)
        else:
            print(f"\nno Snakemake log at {log}: pass --log PATH for the per-job timeline and the critical path")
    if not all_passed:
        sys.exit("a known-truth check failed or none were written (above)")


if __name__ == "__main__":
    main()
