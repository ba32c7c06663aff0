"""Print the top of a leaderboard and where the report is: the last thing ``make demo`` does.

    python -m polyrag.show results/leaderboard.csv results/report.html
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["rank", "model", "score", "ci_low", "ci_high", "judged"]


def summary(leaderboard: Path, report: Path, rows: int = 10) -> str:
    table = pd.read_csv(leaderboard)
    shown = table[[c for c in COLUMNS if c in table.columns]].head(rows)
    more = f"\n({len(table) - rows} more rows in {leaderboard})" if len(table) > rows else ""
    return (f"Leaderboard ({leaderboard}, scores are Bradley-Terry logits, 95% bootstrap interval):\n"
            f"{shown.to_string(index=False, float_format=lambda x: f'{x:.2f}')}{more}\n\n"
            f"Report: open {report.resolve()} in a browser")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    print(summary(Path(sys.argv[1]), Path(sys.argv[2])))
