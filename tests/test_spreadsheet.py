"""Cells that a spreadsheet would run as formulas are neutralised in the CSVs meant for people, and
read back exactly; numbers, negative ones included, stay numbers (issue 36, item 14)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from polyrag.spreadsheet import for_spreadsheet, from_spreadsheet, neutralise, restore, write_csv_for_people

FORMULAS = ['=HYPERLINK("http://evil.example/","click")', "+1+1", "-1+cmd|' /C calc'!A0", "@SUM(A1)", "\t=1",
            "\r=1", "=", "-", "+"]
KEPT = ["plain", "", "'quoted", "'", "-0.5", "+3", "1e-3", "-.5", "a=b", " =1"]


@pytest.mark.parametrize("text", FORMULAS)
def test_a_formula_gets_a_quote_and_reads_back(text):
    assert neutralise(text) == "'" + text
    assert restore(neutralise(text)) == text


@pytest.mark.parametrize("text", KEPT)
def test_text_that_is_no_formula_and_plain_numbers_are_kept(text):
    assert neutralise(text) == text and restore(text) == text


@pytest.mark.parametrize("text", ["'=1", "''=1", "'-x", "''"])
def test_text_that_already_starts_with_quotes_round_trips(text):
    assert restore(neutralise(text)) == text
    if text.lstrip("'").startswith(("=", "-")):
        assert neutralise(text) == "'" + text  # the added quote is the one restore strips


@pytest.mark.parametrize("value", [None, np.nan, -0.5, 3, True])
def test_values_that_are_not_text_are_kept(value):
    assert neutralise(value) is value and restore(value) is value


def test_numeric_columns_are_never_quoted_and_a_negative_logit_stays_a_number():
    frame = pd.DataFrame({"model": ["=evil", "b"], "logit": [-0.5, 1.25], "rank": [2, 1],
                          "judged": [True, False], "note": ["-worse", None]})
    buffer = io.StringIO()
    for_spreadsheet(frame).to_csv(buffer, index=False)
    text = buffer.getvalue()
    assert "'=evil" in text and "'-worse" in text and ",-0.5," in text and "'-0.5" not in text
    back = pd.read_csv(io.StringIO(text))
    assert back["logit"].dtype == float and back["logit"].tolist() == [-0.5, 1.25]
    assert from_spreadsheet(back)["model"].tolist() == ["=evil", "b"]


def test_only_the_named_columns_are_touched(tmp_path):
    frame = pd.DataFrame({"prompt": ["-", "-"], "answer": ["=1+1", "ok"]})
    write_csv_for_people(frame, tmp_path / "t.csv", columns=["answer"])
    back = pd.read_csv(tmp_path / "t.csv", dtype=str)
    assert back["prompt"].tolist() == ["-", "-"] and back["answer"].tolist() == ["'=1+1", "ok"]
