"""The dry run's table (polyrag/plan_summary.py) from planned jobs; the dry run itself is
tested in tests/workflow/test_dry_run_summary.py."""

from __future__ import annotations

from polyrag.plan_summary import PlannedJob, format_plan


def test_each_rule_shows_the_most_its_jobs_ask_for_and_an_unknown_amount_as_unknown():
    jobs = [PlannedJob("generate_answers", False, 4, 1, 64000, 720), PlannedJob("generate_answers", False, 8, 0, 6000, 60),
            PlannedJob("retrieve", False, 1, 0, None, 30),  # memory known only when the job runs: not 0
            PlannedJob("judge_pair", True, 1, 0, 1000, 10), PlannedJob("all", True, 1, 0, None, None)]
    lines = format_plan(jobs).splitlines()
    assert lines[0].split() == ["rule", "jobs", "where", "threads", "gpu", "mem_mb", "runtime_min"]
    assert lines[1].split() == ["generate_answers", "2", "cluster", "8", "1", "64000", "720"]
    assert lines[2].split() == ["retrieve", "1", "cluster", "1", "0", "?", "30"]
    assert len({line.index("cluster") for line in lines[1:3]}) == 1  # aligned
    assert lines[3:5] == ["local rules (on the submitting node), jobs each:", "  all 1, judge_pair 1"]
    assert lines[5] == "total: 5 jobs of 4 rules: 3 cluster jobs (1 asking for a GPU), 2 local jobs on the submitting node"
