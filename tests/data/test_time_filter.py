"""MEMERAG's time-dependence filter: labels read from <answer> tags, unreadable ones retried."""

from polyrag.data.time_filter import drop_time_dependent, parse_label
from polyrag.llm.base import Backend
from polyrag.llm.client import LLM
from polyrag.llm.types import Response


def test_parse_label():
    assert parse_label("It changes. <answer>yes</answer>") is True
    assert parse_label("<answer> No </answer>") is False
    assert parse_label("<answer>no</answer> on reflection <answer>yes</answer>") is True  # the last one
    assert parse_label("yes") is None and parse_label(None) is None


class ScriptedJudge(Backend):
    """Answers by a fixed rule: questions with "current" are time-dependent; the first reply
    about "rambling" questions has no label, so the filter must ask again."""

    name = "scripted"
    identity = "scripted"

    def __init__(self):
        self.asked: list[str] = []

    def stream(self, requests):
        for i, request in enumerate(requests):
            prompt = request.messages[0]["content"]
            self.asked.append(prompt)
            if "rambling" in prompt and self.asked.count(prompt) == 1:
                yield i, Response(text="Hmm, it depends.")
            else:
                label = "yes" if "current" in prompt.split("Question:")[1] else "no"
                yield i, Response(text=f"Reasoning... <answer>{label}</answer>")


def test_time_dependent_questions_are_dropped():
    records = [{"query_id": str(i), "query": q} for i, q in enumerate(
        ["Who is the current mayor of Lagos?", "When was Petra founded?", "A rambling question about the current year?",
         "A rambling question about rivers?"])]
    judge = ScriptedJudge()
    kept = drop_time_dependent(records, LLM(judge), seed=0, max_failure_fraction=0.05)
    assert [r["query_id"] for r in kept] == ["1", "3"]
    assert len(judge.asked) == 6  # four questions, two asked again
    assert "Question: Who is the current mayor of Lagos?" in judge.asked[0]
