"""The judges beside the leaderboard: the style-controlled rank merged next to rank, each judge's
ranking, MEMERAG's human agreement joined per judge and language, and the report's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from polyrag.arena.judges_report import diagnostics_with_human_agreement, rankings_by_judge, style_view
from polyrag.arena.leaderboard import with_style_controlled
from polyrag.report_table import html_table, sections_html


def test_rank_style_controlled_sits_next_to_rank_and_is_empty_for_unjudged_models():
    board = pd.DataFrame({"model": ["a", "b", "c"], "rank": [1, 2, 3], "rank_best": [1, 1, 3], "score": [1.0, 0.5, -1.5],
                          "ci_low": [0.5, 0.0, -2.0], "ci_high": [1.5, 1.0, -1.0], "judged": [True, True, False],
                          "rank_en": [1, 2, 3]})
    style = pd.DataFrame({"model": ["b", "a"], "score_style_controlled": [0.4, -0.4], "ci_low_style_controlled": [0.1, -0.7],
                          "ci_high_style_controlled": [0.7, -0.1], "rank_style_controlled": [1, 2]})
    merged = with_style_controlled(board, style)
    assert list(merged.columns) == ["model", "rank", "rank_style_controlled", "rank_best", "score", "ci_low", "ci_high",
                                    "score_style_controlled", "ci_low_style_controlled", "ci_high_style_controlled",
                                    "judged", "rank_en"]
    assert merged["rank_style_controlled"].tolist()[:2] == [2, 1] and merged["rank_style_controlled"].isna().iloc[2]
    assert merged["model"].tolist() == ["a", "b", "c"]  # still in the order of rank


def test_each_judge_ranks_by_its_mean_logit_over_languages():
    bt = pd.DataFrame({"judge": ["ref"] * 6 + ["small"] * 4,
                       "lang": ["en", "en", "en", "de", "de", "de", "en", "en", "de", "de"],
                       "model": ["a", "b", "c", "a", "b", "c", "a", "c", "a", "c"],
                       "logit": [1.0, 0.0, -1.0, 0.2, 0.6, -0.8, -0.5, 0.5, -0.1, 0.1]})
    table = rankings_by_judge(bt, "ref").set_index("model")
    assert table.index.tolist() == ["a", "b", "c"]  # the arena judge's order: a 0.6, b 0.3, c -0.9
    assert table["score_ref"].tolist() == pytest.approx([0.6, 0.3, -0.9])
    assert table["rank_ref"].tolist() == [1, 2, 3]
    assert table.loc["c", "score_small"] == pytest.approx(0.3) and table.loc["c", "rank_small"] == 1
    assert pd.isna(table.loc["b", "rank_small"])  # not among that judge's contestants


def test_human_agreement_is_joined_per_judge_and_language():
    diagnostics = pd.DataFrame({"judge": ["gpt", "gpt", "ref"], "lang": ["en", "zh", "en"], "games": [8, 8, 8]})
    credibility = pd.DataFrame({"judge": ["gpt", "gpt", "gpt"], "roles": "pairwise", "prompt": ["ag", "ag", "zs"],
                                "lang": ["en", "all", "en"], "balanced_accuracy": [0.71, 0.69, 0.64]})
    joined = diagnostics_with_human_agreement(diagnostics, credibility)
    assert joined["memerag_balanced_accuracy_ag"].tolist()[0] == 0.71
    assert joined["memerag_balanced_accuracy_zs"].tolist()[0] == 0.64
    assert joined.iloc[1:][["memerag_balanced_accuracy_ag", "memerag_balanced_accuracy_zs"]].isna().all().all()
    assert diagnostics_with_human_agreement(diagnostics, None) is diagnostics


def test_style_coefficients_one_row_per_judge_and_language_in_the_order_given():
    coefficients = pd.DataFrame({"judge": ["j"] * 2 + ["a"] * 2, "lang": ["en"] * 4,
                                 "covariate": ["length_tokens", "citations"] * 2,
                                 "coefficient": [0.5, np.nan, -0.001, 1.0], "ci_low": [0.1, np.nan, -0.2, 0.5],
                                 "ci_high": [0.9, np.nan, 0.2, 1.5]})
    view = style_view(coefficients)
    assert view.to_dict("records") == [
        {"judge": "j", "lang": "en", "length_tokens": "0.50 [0.10, 0.90]", "citations": "n/a"},
        {"judge": "a", "lang": "en", "length_tokens": "0.00 [-0.20, 0.20]", "citations": "1.00 [0.50, 1.50]"}]


def test_ranks_read_back_from_a_csv_are_shown_as_integers():
    table = pd.DataFrame({"model": ["a", "b"], "rank_style_controlled": [1.0, np.nan], "mean_rank": [1.5, 2.0],
                          "score": [0.25, -0.25]})
    page = html_table(table)
    assert "<td>1</td>" in page and "<td>1.50</td>" in page and "<td>n/a</td>" in page and "1.00" not in page
    page = sections_html("Judges", [("Empty", "nothing here", pd.DataFrame()), ("Some", "a note", table)])
    assert page.count("<table") == 1 and "nothing here" in page
