"""LLM-measured features: the score format, retries, and null (never 0) when no score is readable."""

import pytest

from polyrag.errors import TooManyFailures
from polyrag.features.llm_scores import llm_scores, parse_score
from polyrag.llm.base import Backend
from polyrag.llm.client import LLM
from polyrag.llm.types import Response

SETTINGS = {"max_attempts": 3, "max_failure_fraction": 0.05, "temperature": 0.1, "max_tokens": 64, "seed": 0}


def test_parse_score():
    assert parse_score('Format "[[score]]", e.g. [[3]]. Justification... Score: [[5]]') == 5
    assert parse_score("Score: 4") is None and parse_score("[[0]]") is None and parse_score("[[6]]") is None


class ScriptedRater(Backend):
    """Fluency 4 for every answer; overlap 5 if the answer mentions Guinea, after one unreadable try;
    never a score for answers that mention "mumble"."""

    name = identity = "rater"

    def __init__(self):
        self.seen: list[str] = []

    def stream(self, requests):
        for i, request in enumerate(requests):
            prompt = request.messages[0]["content"]
            answer = prompt.split("RAG Application Response in")[1]
            retry = prompt in self.seen
            self.seen.append(prompt)
            if "mumble" in answer:
                yield i, Response(text="I cannot decide.")
            elif "Label in" not in prompt:
                yield i, Response(text="Fluent. Score: [[4]]")
            elif not retry:
                yield i, Response(text="Score: four")
            else:
                yield i, Response(text=f"Score: [[{5 if 'Guinea' in answer else 1}]]")


def test_llm_scores():
    passages = [{"docid": "a#0", "title": "", "text": "x"}]
    records = [{"query_id": q, "query": "Where does the Niger end?", "language": "en", "passages": passages,
                "reference_answer": ref} for q, ref in (("1", "Gulf of Guinea [a#0]"), ("2", "Gulf of Guinea"),
                                                          ("3", None), ("4", "Gulf of Guinea"), ("5", "x"))]
    answers = [{"answer": "The Gulf of Guinea [a#0]."}, {"answer": "The Sahara."}, {"answer": "Guinea."},
               {"answer": None}, {"answer": "mumble mumble"}]
    rater = ScriptedRater()
    rows = llm_scores(LLM(rater), records, answers, SETTINGS)
    assert [r["answer_overlap_llm"] for r in rows] == [5, 1, None, None, None]
    assert [r["fluency_llm"] for r in rows] == [4, 4, 4, None, None]
    assert not any("[a#0]" in p.split("RAG Application Response in")[1] for p in rater.seen)  # citations removed
    assert sum("mumble" in p for p in rater.seen) == 2 * 3  # both features, three attempts each


class RejectingRater(Backend):
    """Rejects (an error response, as for a prompt longer than the context) every prompt holding
    "long"; scores the others 3."""

    name = identity = "rejecting-rater"

    def stream(self, requests):
        for i, request in enumerate(requests):
            if "long" in request.messages[0]["content"]:
                yield i, Response(text=None, error="prompt of 9000 tokens does not fit the model's context of 8192")
            else:
                yield i, Response(text="[[3]]", tokens=5)


def test_rejected_requests_are_bounded_by_max_failure_fraction():
    passages = [{"docid": "a#0", "title": "", "text": "x"}]
    records = [{"query_id": str(k), "query": "q", "language": "en", "passages": passages, "reference_answer": None}
               for k in range(10)]
    answers = [{"answer": "a long answer" if k == 0 else f"answer {k}"} for k in range(10)]
    # 1 of 10 fluency requests rejected: allowed at 0.1, the score stays null (never 0).
    rows = llm_scores(LLM(RejectingRater()), records, answers, {**SETTINGS, "max_failure_fraction": 0.1})
    assert [r["fluency_llm"] for r in rows] == [None] + [3] * 9
    with pytest.raises(TooManyFailures, match=r"fluency_llm: the model rejected 1 of 10 requests \(10\.0% > "
                                              r"features\.llm\.max_failure_fraction 5\.0%\), e\.g\. error: prompt of 9000"):
        llm_scores(LLM(RejectingRater()), records, answers, SETTINGS)
