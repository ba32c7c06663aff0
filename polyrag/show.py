"""Print the top of a leaderboard, the retrievers' scores, how much of the ranking is the retriever
and how much the generator, the known-truth checks and where the report is: the last thing
``make demo`` does.

    python -m polyrag.show results/leaderboard.csv results/report.html
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from polyrag.arena.components import report_note
from polyrag.arena.leaderboard import LABEL_ANCHORED_COLUMNS
from polyrag.csv_tables import read_table

COLUMNS = ["rank", "model", "score", "ci_low", "ci_high", "judged"]


def summary(leaderboard: Path, report: Path, rows: int = 10) -> str:
    table = read_table(leaderboard)
    shown = table[[c for c in COLUMNS if c in table.columns]].head(rows)
    more = f"\n({len(table) - rows} more rows in {leaderboard})" if len(table) > rows else ""
    text = (f"Leaderboard ({leaderboard}, scores are Bradley-Terry logits, 95% bootstrap interval):\n"
            f"{shown.to_string(index=False, float_format=lambda x: f'{x:.2f}')}{more}\n\n")
    detailed = leaderboard.with_name("leaderboard_detailed.csv")
    if detailed.exists():
        wide = read_table(detailed)
        if "label_anchored_by" in wide:
            names = {wide_name: name for name, wide_name in LABEL_ANCHORED_COLUMNS.items()}
            wide = wide.reindex(columns=["model", "label_anchored_by", *names]).rename(columns=names)
            anchored = wide[wide["logit"].notna()].sort_values("rank")
            anchored = anchored[["rank", "model", "logit", "ci_low", "ci_high", "rank_best", "rank_worst"]]
            shown = (anchored.head(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}") if len(anchored)
                     else "(no model's logit is estimable from these labels)")
            left_out = wide[wide["logit"].isna() & wide["note"].notna()]  # not estimable: the note says why
            shown += "".join(f"\n{row.model}: {row.note}" for row in left_out.itertuples())
            text += (f"Label-anchored ranking ({wide['label_anchored_by'].iloc[0]}; intervals for the labellers' "
                     f"preferences):\n{shown}\n\n")
    retrieval = leaderboard.parent / "retrieval" / "leaderboard.csv"
    if retrieval.exists():
        text += retrieval_block(read_table(retrieval), retrieval)
    for components in sorted(leaderboard.parent.glob("arena/*/components.json")):
        text += f"Retriever or generator? ({components}):\n{report_note(json.loads(components.read_text()))}\n\n"
    checks = leaderboard.with_name("checks.csv")
    if checks.exists():
        text += checks_block(read_table(checks), checks)
    return text + f"Report: open {report.resolve()} in a browser"


def retrieval_block(table: pd.DataFrame, path: Path, measures: tuple[str, ...] = ("nDCG@10", "Recall@5")) -> str:
    """The retrievers over all languages (the macro average; the one language where there is one):
    each measure with its interval, and the joint rank range."""
    overall = table[table["lang"] == "all"] if (table["lang"] == "all").any() else table
    shown = pd.DataFrame({"rank": overall["rank"], "retriever": overall["system"],
                          "ranks": [f"{b}-{w}" for b, w in zip(overall["rank_best"], overall["rank_worst"])]})
    for measure in measures:
        shown[measure] = [f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in
                          zip(overall[measure], overall[f"{measure}_lower"], overall[f"{measure}_upper"])]
    level = overall["level"].iloc[0] if len(overall) else 0.95
    return (f"Retrieval ({path}: macro average over languages, {level:.0%} intervals over questions):\n"
            f"{shown.to_string(index=False)}\n\n")


def checks_block(checks: pd.DataFrame, path: Path) -> str:
    """One line per known-truth check (polyrag.checks): PASS or FAIL, what was expected, what came out."""
    passed = checks["passed"].astype(str).str.lower() == "true"  # read back from CSV: True/False as text or bool
    lines = [f"{'PASS' if ok else 'FAIL'}  {row.check} ({row.subject}): expected {row.expected}; got {row.observed}"
             for ok, row in zip(passed, checks.itertuples())]
    return (f"Checks ({path}: what the config's known truths say the run must recover; "
            f"{int(passed.sum())} of {len(checks)} passed):\n" + "\n".join(lines) + "\n\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    print(summary(Path(sys.argv[1]), Path(sys.argv[2])))
