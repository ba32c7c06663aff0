"""The summary `make demo` prints last: the top of the leaderboard and the report's path."""

from __future__ import annotations

import pandas as pd

from polyrag.show import summary


def test_summary_lists_the_top_rows_in_rank_order_and_the_report(tmp_path):
    models = [f"model-{k:02d}" for k in range(12)]
    table = pd.DataFrame({"model": models, "rank": range(1, 13), "score": [1.5 - 0.25 * k for k in range(12)],
                          "ci_low": 0.0, "ci_high": 2.0, "judged": True, "rank_en": 1})
    table.to_csv(tmp_path / "leaderboard.csv", index=False)
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    shown = [line.split()[1] for line in text.splitlines()[2:12]]
    assert shown == models[:10] and "model-10" not in text
    assert "1.25" in text.splitlines()[3] and "rank_en" not in text
    assert "(2 more rows in" in text and text.endswith(f"open {tmp_path / 'report.html'} in a browser")
