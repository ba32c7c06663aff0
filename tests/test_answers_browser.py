"""The answers browser (polyrag/answers_browser.py): the data it shows, its escaping, and the page in Chromium."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from polyrag.answers_browser import answers_page, browser_data
from polyrag.errors import DataError

SCRIPT = "<script>window.injected = 1</script>"
ATTRIBUTE = '"><img src=x onerror="window.injected = 2">'
MODELS = ["mock-0", "evil", "closed"]


def passage(docid, text):
    return {"docid": docid, "title": f"title {docid}", "text": text}


def fixture_tables():
    question_passages = [passage("d1", "Paris is the capital of France."), passage("d2", "Lyon is a city.")]
    questions = {"en": pd.DataFrame({
        "query_id": ["q1", "q2"], "query": ["Capital of France?", "A city <b>in</b> France?"],
        "passages": [question_passages, question_passages], "relevant_docids": [["d1"], ["d2"]],
        "reference_answer": ["Paris", None]})}
    answers = {
        ("mock-0", "en"): pd.DataFrame({"query_id": ["q1", "q2"], "answer": ["Paris [d1#0]", "Lyon [d2#0]"],
                                        "cited_docids": [["d1"], ["d2"]], "error": [None, None],
                                        "passages": [question_passages, question_passages]}),
        ("evil", "en"): pd.DataFrame({"query_id": ["q1", "q2"], "answer": [SCRIPT + " [d2#0]", ATTRIBUTE],
                                      "cited_docids": [["d2"], []], "error": [None, None],
                                      "passages": [[passage("x9", ATTRIBUTE)], question_passages]}),
        # closed-book, and one answer that failed
        ("closed", "en"): pd.DataFrame({"query_id": ["q1", "q2"], "answer": ["Paris", None], "cited_docids": [[], None],
                                        "error": [None, "parse: no answer"], "passages": [[], []]}),
    }
    games = {"en": pd.DataFrame({"query_id": ["q1", "q1", "q1"], "model_a": ["evil", "evil", "closed"],
                                 "model_b": ["mock-0", "mock-0", "mock-0"], "shown_first": ["evil", "mock-0", "closed"],
                                 "verdict": ["model_b", "tie", "model_a"]})}
    return questions, answers, games


def test_browser_data_holds_each_answer_its_passages_and_the_verdicts():
    questions, answers, games = fixture_tables()
    data = browser_data(questions, answers, games, MODELS, "reference")
    assert data["languages"] == ["en"] and data["models"] == MODELS and data["judge"] == "reference"
    q1, q2 = data["questions"]["en"]
    assert (q1["id"], q1["reference"], q2["reference"]) == ("q1", "Paris", None)
    # each answer's passages, in the order given; shared ones stored once (d1, d2 and x9: three)
    assert len(data["passages"]) == 3
    given = {model: [data["passages"][i]["docid"] for i in q1["answers"][model]["passages"]] for model in MODELS}
    assert given == {"mock-0": ["d1", "d2"], "evil": ["x9"], "closed": []}
    assert data["passages"][q1["answers"]["evil"]["passages"][0]]["text"] == ATTRIBUTE
    assert q1["answers"]["evil"] == {"answer": SCRIPT + " [d2#0]", "error": None, "cited": ["d2"], "passages": [2]}
    assert q2["answers"]["closed"] == {"answer": None, "error": "parse: no answer", "cited": [], "passages": []}
    # verdicts by sorted pair, the winner named: model_b of (evil, mock-0) is mock-0
    assert q1["verdicts"] == {"evil__mock-0": [{"shown_first": "evil", "verdict": "mock-0"},
                                               {"shown_first": "mock-0", "verdict": "tie"}],
                              "closed__mock-0": [{"shown_first": "closed", "verdict": "closed"}]}
    assert q2["verdicts"] == {}


def test_a_missing_answers_file_or_unknown_question_is_refused_by_name():
    questions, answers, games = fixture_tables()
    with pytest.raises(DataError, match="model 'closed' in language 'en'"):
        browser_data(questions, {k: v for k, v in answers.items() if k[0] != "closed"}, games, MODELS, "reference")
    answers["evil", "en"].loc[1, "query_id"] = "q7"
    with pytest.raises(DataError, match=r"answers/evil/en.parquet answers question 'q7'"):
        browser_data(questions, answers, games, MODELS, "reference")


def test_a_system_not_asked_a_language_is_shown_as_not_asked_not_refused():
    """A system with languages: that leave out the browser's language has no answers file there:
    not refused (as a missing file of a language it answers is), and named as not asked."""
    questions, answers, games = fixture_tables()
    without = {k: v for k, v in answers.items() if k[0] != "closed"}
    data = browser_data(questions, without, games, MODELS, "reference",
                        {"mock-0": ["en"], "evil": ["en"], "closed": ["de"]})
    assert data["not_asked"] == {"en": ["closed"]}
    assert all("closed" not in q["answers"] for q in data["questions"]["en"])
    assert "not asked in this language" in answers_page(data)
    with pytest.raises(DataError, match="model 'closed' in language 'en'"):  # it declares en and has no file
        browser_data(questions, without, games, MODELS, "reference", {"mock-0": ["en"], "evil": ["en"], "closed": ["en"]})


def test_page_carries_the_text_only_as_escaped_json():
    questions, answers, games = fixture_tables()
    data = browser_data(questions, answers, games, MODELS, "reference")
    page = answers_page(data)
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.DOTALL).group(1)
    assert json.loads(block) == data  # the same data, read back
    for text in (SCRIPT, ATTRIBUTE, "<b>in</b>", "<img"):
        assert text not in page
    assert page.count("<script") == 2  # the data block and the page's own script; nothing from the data
    assert not re.search(r"https?://", page)  # no network resources


def test_page_in_chromium_shows_two_systems_side_by_side_and_runs_no_model_text(tmp_path):
    from tests.helpers.report_browser import open_report, require_chromium

    browser = require_chromium()
    questions, answers, games = fixture_tables()
    path = tmp_path / "answers.html"
    path.write_text(answers_page(browser_data(questions, answers, games, MODELS, "reference")), encoding="utf-8")
    with open_report(path, chromium=browser) as (page, problems):
        page.select_option("#left", "evil")
        page.select_option("#right", "mock-0")
        columns = page.locator("#columns .system")
        assert columns.evaluate_all("nodes => nodes.map(n => n.dataset.model)") == ["evil", "mock-0"]
        boxes = [columns.nth(i).bounding_box() for i in range(2)]
        assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"] and boxes[0]["y"] == boxes[1]["y"]  # side by side
        evil, mock = columns.nth(0), columns.nth(1)
        # the injected markup is on screen as text, and nothing of it ran or became an element
        assert evil.locator(".answer").inner_text() == SCRIPT + " [d2#0]"
        assert evil.locator(".passage").inner_text().endswith(ATTRIBUTE)
        assert page.evaluate("window.injected") is None and page.locator("#columns img").count() == 0
        # mock-0 cited d1 of the two passages it was given; evil cited d2, which it was not given
        assert mock.locator(".passage.cited").evaluate_all("nodes => nodes.map(n => n.dataset.docid)") == ["d1"]
        assert mock.locator(".passage").count() == 2 and evil.locator(".passage.cited").count() == 0
        assert page.locator("#verdict").inner_text() == ("reference: with evil shown first: mock-0 wins; "
                                                         "with mock-0 shown first: tie")
        page.select_option("#question", "q2")
        assert page.locator("#verdict").inner_text() == "reference did not judge evil vs mock-0 on this question."
        assert evil.locator(".answer").inner_text() == ATTRIBUTE
        assert page.locator("#all tbody tr").all_inner_texts()[2].startswith("closed\terror: parse: no answer")
        assert page.evaluate("window.injected") is None and page.locator("img").count() == 0
    assert problems.script_errors == [] and problems.outside_requests == []


def later_judged_tables():
    """de first in the config's order and never judged; in en only q2 is judged (q1 is not), on the
    pairs (evil, mock-0) and (closed, mock-0): the page must open on en, q2."""
    questions, answers, _ = fixture_tables()
    questions = {"de": questions["en"].assign(query_id=["q1", "q2"]), **questions}
    answers.update({(model, "de"): table for (model, _), table in list(answers.items())})
    games = {"en": pd.DataFrame({"query_id": ["q2", "q2", "q2"], "model_a": ["closed", "evil", "evil"],
                                 "model_b": ["mock-0", "mock-0", "mock-0"], "shown_first": ["mock-0", "evil", "mock-0"],
                                 "verdict": ["model_b", "model_a", "tie"]})}
    return questions, answers, games


def test_the_page_opens_on_the_first_judged_question_and_its_best_placed_pair():
    questions, answers, games = later_judged_tables()
    # the leaderboard's order: mock-0 first, then closed, then evil: (mock-0, closed) is the best-placed pair
    data = browser_data(questions, answers, games, ["mock-0", "closed", "evil"], "reference")
    assert data["start"] == {"lang": "en", "question": "q2", "left": "mock-0", "right": "closed"}
    data = browser_data(questions, answers, games, ["evil", "mock-0", "closed"], "reference")
    assert data["start"] == {"lang": "en", "question": "q2", "left": "evil", "right": "mock-0"}
    # nothing judged: the first question of the first language, the first two systems
    data = browser_data(questions, answers, {}, MODELS, None)
    assert data["start"] == {"lang": "de", "question": "q1", "left": "mock-0", "right": "evil"}


def test_page_in_chromium_opens_with_a_judged_pairs_verdict_visible(tmp_path):
    from tests.helpers.report_browser import open_report, require_chromium

    browser = require_chromium()
    questions, answers, games = later_judged_tables()
    path = tmp_path / "answers.html"
    path.write_text(answers_page(browser_data(questions, answers, games, ["evil", "mock-0", "closed"], "reference")),
                    encoding="utf-8")
    with open_report(path, chromium=browser) as (page, problems):
        assert [page.locator(f"#{id}").input_value() for id in ("lang", "question", "left", "right")] == [
            "en", "q2", "evil", "mock-0"]
        verdict = page.locator("#verdict")
        assert verdict.is_visible()
        assert verdict.inner_text() == "reference: with evil shown first: evil wins; with mock-0 shown first: tie"
        page.select_option("#lang", "de")  # changing the language still shows that language's first question
        assert page.locator("#query").inner_text().startswith("q1: ")
    assert problems.script_errors == [] and problems.outside_requests == []
