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


def test_summary_adds_the_label_anchored_ranking_where_human_labels_exist(tmp_path):
    from polyrag.arena.leaderboard import short_leaderboard, with_label_anchored
    table = pd.DataFrame({"model": ["a", "b", "c"], "rank": [1, 2, 3], "score": [1.0, 0.0, -1.0], "ci_low": -2.0,
                          "ci_high": 2.0, "rank_best": 1, "rank_worst": 3, "judged": True})
    anchored = pd.DataFrame({"model": ["b", "a"], "scope": "all", "logit": [0.4, -0.4], "ci_low": [0.1, -0.7],
                             "ci_high": [0.7, -0.1], "rank": [1, 2], "rank_best": [1, 2], "rank_worst": [1, 2],
                             "n_labels": 120})
    detailed = with_label_anchored(table, anchored, "cite-check")
    assert detailed["label_anchored_by"].iloc[0] == "cite-check + 120 human labels (all labelled languages)"
    assert detailed["label_anchored_rank"].tolist()[:2] == [2, 1] and pd.isna(detailed["label_anchored_rank"].iloc[2])
    assert set(short_leaderboard(detailed).columns) == set(table.columns)  # the short table stays the judge's
    short_leaderboard(detailed).to_csv(tmp_path / "leaderboard.csv", index=False)
    detailed.to_csv(tmp_path / "leaderboard_detailed.csv", index=False)
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    anchored_part = text.split("Label-anchored ranking (cite-check + 120 human labels")[1].splitlines()
    assert [line.split()[1] for line in anchored_part[2:4]] == ["b", "a"] and "  c " not in "\n".join(anchored_part[2:5])


def test_summary_adds_the_retrievers_over_all_languages_with_their_intervals(tmp_path):
    from polyrag.retrieval.metrics import retrieval_leaderboard

    pd.DataFrame({"model": ["a"], "rank": [1], "score": [0.0], "ci_low": -1.0, "ci_high": 1.0,
                  "judged": True}).to_csv(tmp_path / "leaderboard.csv", index=False)
    # bm25 finds the relevant passage first for every question, e5 at rank 2 for half of them
    rows = []
    for lang in ("en", "de"):
        for q in range(12):
            for run, value in (("bm25", 1.0), ("e5", 0.5 if q % 2 else 1.0)):
                rows += [{"run": run, "lang": lang, "query_id": f"{lang}{q}", "measure": measure, "value": value,
                          "has_relevant": True, "in_run": True} for measure in ("nDCG@10", "Recall@5")]
    per_query = pd.DataFrame(rows)
    board = retrieval_leaderboard({run: t.drop(columns="run") for run, t in per_query.groupby("run")}, n_bootstrap=200)
    (tmp_path / "retrieval").mkdir()
    board.to_csv(tmp_path / "retrieval" / "leaderboard.csv", index=False)
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    block = text.split("Retrieval (")[1].split("\n\n")[0].splitlines()
    assert "macro average over languages, 95% intervals" in block[0]
    all_rows = board[board["lang"] == "all"].set_index("system")
    bm25, e5 = block[2].split(), block[3].split()
    assert bm25[:3] == ["1", "bm25", "1-1"] and e5[:3] == ["2", "e5", "2-2"]
    low, high = all_rows.loc["e5", ["nDCG@10_lower", "nDCG@10_upper"]]
    assert " ".join(e5[3:6]) == f"0.75 [{low:.2f}, {high:.2f}]"


def test_summary_says_whether_the_retriever_or_the_generator_moves_the_ranking(tmp_path):
    """The component-effects summary the rule writes (results/arena/{judge}/components.json) is printed
    as the report says it: here generators 1.6 logits apart, passages 0.6, on 300 questions."""
    import json

    import numpy as np

    from polyrag.arena.components import component_effects
    from tests.helpers.arena import simulate_clustered_games

    cells = {f"{g}-{p}": (p, g) for g in ("g0", "g1", "g2") for p in ("bm25@3", "oracle")}
    strength = {"g0": 0.8, "g1": 0.0, "g2": -0.8, "bm25@3": -0.3, "oracle": 0.3}
    rng = np.random.default_rng(2)
    games = simulate_clustered_games({s: strength[p] + strength[g] for s, (p, g) in cells.items()}, 300, rng)
    _, fitted = component_effects(games, cells, 0.01, 100, rng)
    (tmp_path / "arena" / "reference").mkdir(parents=True)
    (tmp_path / "arena" / "reference" / "components.json").write_text(
        json.dumps({"judge": "reference", "languages": ["en"], **fitted}))
    pd.DataFrame({"model": ["a"], "rank": [1], "score": [0.0], "ci_low": -1.0, "ci_high": 1.0,
                  "judged": True}).to_csv(tmp_path / "leaderboard.csv", index=False)
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    block = text.split("Retriever or generator? (")[1]
    assert "components.json):\nThe generator moves the ranking more than the passages (95%)" in block
    assert "Judge reference, 300 questions in en" in block
