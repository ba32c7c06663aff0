"""benchmarks/bench_demo.py on a hand-written Snakemake log with known answers: the per-job timeline,
the critical path with a wait for a free core, and the share of the wall time with jobs running
together, the last checked against per-second occupancy on random intervals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from bench_demo import (DEMO_CONFIG, FULL_CONFIG, checks_verdict, critical_path, demo_commands, overlap_table,  # noqa: E402
                        parse_log, seconds_by_concurrency, timeline)

#: Three cores. prepare (0-10 s) and fetch (1-4 s) run together; when fetch ends, broken and side
#: start (4 s); broken fails at 5 s (no "Finished" line: left out). combine needs fetch's b.txt, ready
#: at 4 s, and two cores: it waits until prepare ends (10-20 s). After 2 s with nothing running, all
#: (22 s). "Select jobs" lines and a job's own output interleave, one inside side's block.
LOG = """\
Building DAG of jobs...
Provided cores: 3
Select jobs to execute...
Execute 2 jobs...

[Wed Nov 25 10:00:00 2026]
localrule prepare:
    output: a.txt
    log: logs/prepare.log
    jobid: 1
    reason: Missing output files: a.txt
    wildcards: lang=en
    resources: tmpdir=/tmp
Select jobs to execute...
[Wed Nov 25 10:00:01 2026]
Select jobs to execute...
rule fetch:
    output: b.txt, b.json
    jobid: 2
    reason: Missing output files: b.txt
    resources: tmpdir=/tmp
[Wed Nov 25 10:00:04 2026]
Finished jobid: 2 (Rule: fetch)
1 of 5 steps (20%) done
Select jobs to execute...
Execute 2 jobs...

[Wed Nov 25 10:00:04 2026]
rule broken:
    output: e.txt
    jobid: 9
[Wed Nov 25 10:00:04 2026]
localrule side:
    output: c.txt
Select jobs to execute...
    jobid: 5
    wildcards: model=m1, lang=de
    resources: tmpdir=/tmp
some output of the job itself
[Wed Nov 25 10:00:05 2026]
Error in rule broken:
    message: None
    jobid: 9
    output: e.txt
Select jobs to execute...
[Wed Nov 25 10:00:10 2026]
Finished jobid: 1 (Rule: prepare)
2 of 5 steps (40%) done
Select jobs to execute...
Execute 1 jobs...

[Wed Nov 25 10:00:10 2026]
localrule combine:
    input: b.txt, resources/raw.txt
    output: d.txt
    jobid: 3
    threads: 2
    resources: tmpdir=/tmp
Select jobs to execute...
[Wed Nov 25 10:00:12 2026]
Finished jobid: 5 (Rule: side)
3 of 5 steps (60%) done
[Wed Nov 25 10:00:20 2026]
Finished jobid: 3 (Rule: combine)
4 of 5 steps (80%) done
Select jobs to execute...
Execute 1 jobs...

[Wed Nov 25 10:00:22 2026]
localrule all:
    input: a.txt, c.txt, d.txt
    jobid: 0
    reason: Input files updated by another job: d.txt
    resources: tmpdir=/tmp
[Wed Nov 25 10:00:22 2026]
Finished jobid: 0 (Rule: all)
5 of 5 steps (100%) done
Complete log(s): .snakemake/log/x.snakemake.log
"""

#: jobid: rule, wildcards, threads, start s, end s (from 10:00:00)
EXPECTED_JOBS = {
    1: ("prepare", "lang=en", 1, 0, 10),
    2: ("fetch", "", 1, 1, 4),
    5: ("side", "model=m1, lang=de", 1, 4, 12),
    3: ("combine", "", 2, 10, 20),
    0: ("all", "", 1, 22, 22),
}


def test_the_log_gives_each_finished_job_its_rule_wildcards_threads_start_and_end():
    jobs = parse_log(LOG)
    table = timeline(jobs).set_index("jobid")
    assert sorted(table.index) == sorted(EXPECTED_JOBS)  # the failed job 9 is left out
    for jobid, (rule, wildcards, threads, start, end) in EXPECTED_JOBS.items():
        row = table.loc[jobid]
        assert (row["rule"], row["wildcards"], row["threads"]) == (rule, wildcards, threads), jobid
        assert (row["start_s"], row["end_s"], row["duration_s"]) == (start, end, end - start), jobid
    outputs = dict(zip(jobs["jobid"], jobs["outputs"]))
    inputs = dict(zip(jobs["jobid"], jobs["inputs"]))
    assert outputs[2] == ("b.txt", "b.json") and outputs[5] == ("c.txt",) and outputs[0] == ()
    assert inputs[3] == ("b.txt", "resources/raw.txt") and inputs[1] == ()


def test_the_critical_path_walks_back_through_the_last_finished_producers_and_shows_the_waits():
    path = critical_path(parse_log(LOG))
    rows = [tuple(row) for row in path[["jobid", "rule", "start_s", "duration_s", "wait_before_s"]].to_numpy()]
    # fetch waited 1 s from the run's start; combine's input b.txt was ready at 4 s, its two cores at 10 s
    assert rows == [(2, "fetch", 1, 3, 1), (3, "combine", 10, 10, 6), (0, "all", 22, 0, 2)]
    assert path["duration_s"].sum() + path["wait_before_s"].sum() == 22  # the wall time


def test_within_a_second_the_later_finished_line_decides_the_last_job_and_the_predecessor():
    """y and x end at 10:00:03, y's line last: all waits on y, not x; z and all end at 10:00:04,
    all's line last: the path ends with all, not z, though z started after it."""
    log = "\n".join([
        "[Wed Nov 25 10:00:00 2026]", "rule y:", "    output: y.txt", "    jobid: 1",
        "[Wed Nov 25 10:00:01 2026]", "rule x:", "    output: x.txt", "    jobid: 2",
        "[Wed Nov 25 10:00:03 2026]", "Finished jobid: 2 (Rule: x)",
        "[Wed Nov 25 10:00:03 2026]", "Finished jobid: 1 (Rule: y)",
        "[Wed Nov 25 10:00:04 2026]", "localrule all:", "    input: x.txt, y.txt", "    jobid: 0",
        "[Wed Nov 25 10:00:04 2026]", "rule z:", "    output: z.txt", "    jobid: 3",
        "[Wed Nov 25 10:00:04 2026]", "Finished jobid: 3 (Rule: z)",
        "[Wed Nov 25 10:00:04 2026]", "Finished jobid: 0 (Rule: all)",
    ])
    path = critical_path(parse_log(log))
    assert list(path["rule"]) == ["y", "all"]
    assert list(path["duration_s"]) == [3, 0] and list(path["wait_before_s"]) == [0, 1]


def test_a_restarted_job_keeps_its_last_start():
    log = "\n".join([
        "[Wed Nov 25 10:00:00 2026]", "rule flaky:", "    output: f.txt", "    jobid: 4",
        "[Wed Nov 25 10:00:02 2026]", "Error in rule flaky:", "    jobid: 4", "Trying to restart job 4.",
        "[Wed Nov 25 10:00:03 2026]", "rule flaky:", "    output: f.txt", "    jobid: 4",
        "[Wed Nov 25 10:00:07 2026]", "Finished jobid: 4 (Rule: flaky)",
    ])
    jobs = parse_log(log)
    assert len(jobs) == 1
    assert (jobs.at[0, "start"].second, jobs.at[0, "end"].second) == (3, 7)


def test_the_overlap_shares_of_the_hand_written_run():
    times = timeline(parse_log(LOG))
    table = overlap_table(list(zip(times["start_s"], times["end_s"]))).set_index("running")
    # one running over 0-1 s, two over 1-12 s, one over 12-20 s, none over 20-22 s
    assert table["seconds"].to_dict() == {"no job": 2, "exactly one job": 9, "two or more jobs": 11}
    assert table["share"].to_list() == pytest.approx([2 / 22, 9 / 22, 11 / 22])


@pytest.mark.parametrize("seed", range(5))
def test_the_seconds_by_number_of_running_jobs_match_per_second_occupancy(seed):
    """Random whole-second intervals, some empty, with gaps and up to 6 running at once: the sweep
    over starts and ends against counting, second by second, the intervals holding that second."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 300, size=25)
    ends = starts + rng.choice([0, 1, 2, 5, 20, 60], size=25)
    occupancy = [int(((starts <= second) & (second < ends)).sum()) for second in range(starts.min(), ends.max())]
    expected = {count: float(occupancy.count(count)) for count in set(occupancy)}
    seconds = seconds_by_concurrency(list(zip(starts.tolist(), ends.tolist())))
    assert seconds[seconds > 0].to_dict() == expected
    table = overlap_table(list(zip(starts.tolist(), ends.tolist()))).set_index("running")
    wall = ends.max() - starts.min()
    assert table.at["two or more jobs", "share"] == pytest.approx(sum(c >= 2 for c in occupancy) / wall)
    assert table.at["exactly one job", "share"] == pytest.approx(occupancy.count(1) / wall)
    assert table.at["no job", "share"] == pytest.approx(occupancy.count(0) / wall)


def test_the_script_prints_the_new_tables_of_a_finished_run(tmp_path):
    """DIR mode: the per-stage table from results/benchmarks, the rest from DIR/snakemake.log."""
    (tmp_path / "results" / "benchmarks" / "data").mkdir(parents=True)
    (tmp_path / "results" / "benchmarks" / "data" / "en.tsv").write_text("s\tcpu_time\n4.0\t3.5\n")
    (tmp_path / "snakemake.log").write_text(LOG)
    result = subprocess.run([sys.executable, str(BENCHMARKS / "bench_demo.py"), str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "5 finished jobs, 22 s" in result.stdout
    assert "on the path: 13 s running + 9 s waiting = 22 s; the run's wall time: 22 s" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["two", "or", "more", "jobs", "11", "50.0%"] in rows
    assert ["3", "combine", "2", "10.0", "10.0", "6.0"] in rows  # the critical path's row of combine


@pytest.mark.parametrize("config", [DEMO_CONFIG, FULL_CONFIG])
def test_both_demos_can_be_timed_each_run_and_report_reading_its_own_config(tmp_path, config):
    run, report = demo_commands(tmp_path, config)
    for command in (run, report):
        assert command[command.index("--configfile") + 1] == str(config)
        assert command[command.index("-d") + 1] == str(tmp_path)
    folder = {DEMO_CONFIG: "results", FULL_CONFIG: "results-demo-full"}[config]  # each config's results_dir
    assert report[-2:] == ["--report", str(tmp_path / folder / "report.html")]
    assert config.is_file()


def test_a_config_that_is_not_there_is_refused_before_any_run(tmp_path):
    result = subprocess.run([sys.executable, str(BENCHMARKS / "bench_demo.py"), "--run", "--config",
                             str(tmp_path / "nope.yaml"), "--keep", str(tmp_path / "run")], capture_output=True, text=True)
    assert result.returncode == 2
    assert f"--config {tmp_path / 'nope.yaml'}: no such file" in result.stderr
    assert not (tmp_path / "run").exists()


CHECKS_HEADER = "check,subject,expected,observed,passed\n"


@pytest.mark.parametrize(("rows", "all_passed"), [
    ("mock_order,leaderboard,tau 1,tau 1.00,True\nmars_coverage,cells,>= 0.85,0.91,True\n", True),
    ("mock_order,leaderboard,tau 1,tau 1.00,True\nmars_coverage,cells,>= 0.85,0.77,False\n", False),
    ("", False),  # a checks table with no rows: nothing was checked
])
def test_the_run_passes_only_when_every_check_of_its_block_passed(tmp_path, rows, all_passed):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "checks.csv").write_text(CHECKS_HEADER + rows)
    block, passed = checks_verdict(tmp_path)
    assert passed is all_passed
    assert block.count("PASS ") == rows.count(",True") and block.count("FAIL ") == rows.count(",False")


def test_a_run_without_checks_does_not_pass(tmp_path):
    block, passed = checks_verdict(tmp_path)
    assert not passed and "checks.csv is missing" in block
