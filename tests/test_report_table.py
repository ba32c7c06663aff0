"""Untrusted text (answers, questions, passage titles, names read from files) never reaches an HTML
page of the report unescaped (issue 36, item 15): results/leaderboard.html and results/judges.html
are built by polyrag.report_table from tables that can hold such text."""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.arena.judges_report import rankings_by_judge, style_view
from polyrag.report_table import html_table, sections_html, table_html

SCRIPT = "<script>alert('x')</script>"
IMAGE = '<img src=x onerror="alert(1)">'


def assert_escaped(page: str) -> None:
    lowered = page.lower()
    assert "<script" not in lowered and "<img" not in lowered
    assert "&lt;script&gt;" in page and "&lt;img" in page


def untrusted_table() -> pd.DataFrame:
    return pd.DataFrame({"model": ["a", "b"], "answer": [SCRIPT, "fine & dandy"], "title": [IMAGE, None],
                         f"question {SCRIPT}": ["q", IMAGE], "rank": pd.array([1, pd.NA], dtype="Int64"),
                         "rank_en": [1.0, np.nan], "score": [0.5, -0.5]})


def test_cells_and_column_names_are_escaped():
    page = html_table(untrusted_table())
    assert_escaped(page)
    assert "fine &amp; dandy" in page and "<td>-0.50</td>" in page and "<td>n/a</td>" in page


def test_titles_headings_and_notes_are_escaped():
    page = sections_html(f"Leaderboard {SCRIPT}", [(f"Section {IMAGE}", f"note {SCRIPT}", untrusted_table()),
                                                   (SCRIPT, IMAGE, pd.DataFrame())])
    assert_escaped(page)
    assert page.count("&lt;script&gt;") >= 4
    assert_escaped(table_html(untrusted_table(), f"Title {SCRIPT}"))


def test_judge_views_built_from_files_are_escaped_on_the_page():
    bt = pd.DataFrame({"judge": [SCRIPT, SCRIPT], "lang": ["en", "en"], "model": [IMAGE, "b"], "logit": [0.5, -0.5]})
    coefficients = pd.DataFrame({"judge": [SCRIPT], "lang": ["en"], "covariate": [IMAGE], "coefficient": [0.5],
                                 "ci_low": [0.1], "ci_high": [0.9]})
    page = sections_html("Judges", [("Rankings", "n", rankings_by_judge(bt, SCRIPT)),
                                    ("Style", "n", style_view(coefficients))])
    assert_escaped(page)
