"""Pairwise judging: verdict parsing, both orders, the reference judge, LLM retries, recorded verdicts."""

from __future__ import annotations

import json

import pytest

from polyrag.data.demo import load_demo
from polyrag.errors import DataError, TooManyFailures
from polyrag.judge.play import arena_items, judge_pairs_with_llm, judge_with_reference
from polyrag.judge.recorded import recorded_games
from polyrag.judge.verdicts import game_verdict, parse_verdict
from polyrag.llm.base import Backend
from polyrag.llm.client import LLM
from polyrag.llm.types import Response
from tests.helpers.answers import with_detected_languages

REFERENCE = {"weights": {"similarity": 1.0, "citation": 1.0, "language": 1.0}, "tie_margin": 0.05}
JUDGING = {"max_attempts": 3, "max_failure_fraction": 0.05, "temperature": 0.1, "max_tokens": 64, "seed": 1}


def test_the_last_verdict_counts():
    assert parse_verdict('Output "[[A]]" if A is better, "[[B]]" if B is. Verdict: [[B]]') == "B"
    assert parse_verdict("[[ C ]]") == "C"
    assert parse_verdict("A is better.") is None and parse_verdict("[[D]]") is None and parse_verdict(None) is None


def test_verdicts_in_both_orders():
    assert game_verdict("A", a_shown_first=True) == "model_a"
    assert game_verdict("A", a_shown_first=False) == "model_b"
    assert game_verdict("B", a_shown_first=False) == "model_a"
    assert game_verdict("C", a_shown_first=False) == "tie"
    assert game_verdict(None, a_shown_first=True) == "invalid"


@pytest.fixture(scope="module")
def hindi(repo):
    records = [{**r, "arena": i < 3} for i, r in enumerate(load_demo("hi", repo / "resources" / "demo"))]
    english = load_demo("en", repo / "resources" / "demo")
    return records, english


def perfect(record):
    cited = [d for d in record["relevant_docids"]]
    return {"query_id": record["query_id"], "answer": record["reference_answer"], "cited_docids": cited, "raw_output": "x"}


@pytest.mark.slow
def test_reference_judge(hindi):
    records, english = hindi
    good = with_detected_languages(records, [perfect(r) for r in records])
    wrong_language = with_detected_languages(records, [{**perfect(r), "answer": e["reference_answer"]}
                                                       for r, e in zip(records, english)])
    unparsed = with_detected_languages(records, [{**perfect(r), "answer": None, "cited_docids": []} for r in records])
    items = arena_items(records, good, wrong_language)
    assert len(items) == 3
    rows = judge_with_reference(items, "good", "wrong", REFERENCE)
    assert len(rows) == 6 and [r["shown_first"] for r in rows[:2]] == ["good", "wrong"]
    assert {r["verdict"] for r in rows} == {"model_a"}  # the Hindi answer wins in both orders
    scores = json.loads(rows[0]["raw_output"])
    assert scores["good"]["total"] == pytest.approx(sum(scores["good"][k] for k in ("similarity", "citation", "language")))
    assert {r["verdict"] for r in judge_with_reference(arena_items(records, good, good), "a", "b", REFERENCE)} == {"tie"}
    assert {r["verdict"] for r in judge_with_reference(arena_items(records, unparsed, good), "a", "b", REFERENCE)} == {"model_b"}
    only_citation = {**REFERENCE, "weights": {"similarity": 0.0, "citation": 1.0, "language": 0.0}}
    # Same text, one cites nothing: citation weight alone decides.
    uncited = [{**a, "cited_docids": []} for a in good]
    assert {r["verdict"] for r in judge_with_reference(arena_items(records, uncited, good), "a", "b", only_citation)} == {"model_b"}


def test_reference_judge_without_similarity_needs_no_reference_answer(hindi):
    """Data without reference answers (data.source mirage_bench, miracl): a judge that gives
    similarity no weight judges on citations and language; one that does stops, naming the question."""
    records, english = hindi
    no_reference = [{**r, "reference_answer": None} for r in records]
    good = with_detected_languages(records, [perfect(r) for r in records])
    wrong_language = with_detected_languages(records, [{**perfect(r), "answer": e["reference_answer"]}
                                                       for r, e in zip(records, english)])
    items = arena_items(no_reference, good, wrong_language)
    cheap = {**REFERENCE, "weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}}
    rows = judge_with_reference(items, "good", "wrong", cheap)
    assert len(rows) == 6 and {r["verdict"] for r in rows} == {"model_a"}
    assert json.loads(rows[0]["raw_output"])["good"]["similarity"] is None
    with pytest.raises(DataError, match=r"question .*: the reference judge needs a reference answer"):
        judge_with_reference(items, "good", "wrong", REFERENCE)


@pytest.mark.slow
def test_reference_judge_scores_the_language_its_features_detected(hindi, tmp_path):
    """The judge reads each answer's language from the deterministic features file (detected once
    per answer), and its language part is what the detector gives that answer's text."""
    from polyrag.features.deterministic import deterministic_features
    from polyrag.features.language import language_probabilities
    from polyrag.answer_parsing import strip_citations
    from polyrag.judge.reference import with_answer_languages, write_answer_languages

    records, english = hindi
    answers = [{**perfect(r), "answer": e["reference_answer"] if i % 2 else r["reference_answer"]}
               for i, (r, e) in enumerate(zip(records, english))]
    path = tmp_path / "answer_languages.parquet"
    other = [{"lang": "en", "query_id": r["query_id"], "target_language": 0.5} for r in records]  # another language's
    write_answer_languages(other + [{"lang": "hi", **row} for row in deterministic_features(records, answers)], path)
    read = with_answer_languages(answers, str(path), "hi")
    rows = judge_with_reference(arena_items(records, read, read), "a", "b", REFERENCE)
    for record, answer, row in zip(records[:3], answers, rows[::2]):
        text = strip_citations(answer["answer"], [p["docid"] for p in record["passages"]])
        assert json.loads(row["raw_output"])["a"]["language"] == language_probabilities(text, "hi")["hi"]
    assert json.loads(rows[2]["raw_output"])["a"]["language"] < 0.5  # the English answer
    with pytest.raises(DataError, match="reads the answer's language from its deterministic features"):
        judge_with_reference(arena_items(records, answers, read), "a", "b", REFERENCE)
    with pytest.raises(DataError, match="no row for questions"):
        with_answer_languages([{**answers[0], "query_id": "elsewhere"}], str(path), "hi")


def test_an_answer_without_letters_scores_no_language(hindi):
    records, _ = hindi
    dash = with_detected_languages(records, [{**perfect(r), "answer": "— 1995"} for r in records])
    assert dash[0]["target_language"] is None
    scores = json.loads(judge_with_reference(arena_items(records, dash, dash), "a", "b", REFERENCE)[0]["raw_output"])
    assert scores["a"]["language"] == 0.0


def test_a_reference_judging_job_detects_no_language(hindi, tmp_path, repo):
    """The judge job's imports and work (scripts/judge_pairs.py's) leave the detectors unloaded."""
    import subprocess
    import sys

    check = (  # scripts/judge_pairs.py's imports, then a reference judge judging a pair
        "import sys\n"
        "from polyrag.csv_tables import read_table\n"
        "from polyrag.judge.kinds import open_pair_judge\n"
        "from polyrag.judge.play import arena_items\n"
        "from polyrag.features.table import read_aligned\n"
        "from polyrag.judge.reference import with_answer_languages\n"
        "from polyrag.logs import run_logged\n"
        "records = [{'query_id': 'q', 'arena': True, 'passages': [{'docid': 'd', 'text': 'Odò Niger.'}], 'relevant_docids': ['d'],\n"
        "            'language': 'yo', 'reference_answer': None}]\n"
        "a = [{'query_id': 'q', 'answer': 'Odò Niger [d]', 'cited_docids': ['d'], 'target_language': 0.9}]\n"
        "b = [{'query_id': 'q', 'answer': 'River [d]', 'cited_docids': ['d'], 'target_language': 0.1}]\n"
        "entry = {'backend': 'reference', 'weights': {'similarity': 0.0, 'citation': 1.0, 'language': 1.0}, 'tie_margin': 0.05}\n"
        f"judge = open_pair_judge('reference', entry, {str(tmp_path)!r}, {{}})\n"
        "rows = judge.judge('yo', [('a', 'b', arena_items(records, a, b))])[0]\n"
        "assert [r['verdict'] for r in rows] == ['model_a', 'model_a'], rows\n"
        "loaded = [m for m in ('polyrag.features.language', 'langid', 'lingua') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=repo)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.slow
def test_reference_judge_through_the_shared_store_reuses_vectors(hindi, tmp_path, monkeypatch):
    """Every pair of a model embeds its answers: through the store a second pair computes nothing."""
    from polyrag.features import embedding

    records, english = hindi
    good = with_detected_languages(records, [perfect(r) for r in records])
    wrong_language = with_detected_languages(records, [{**perfect(r), "answer": e["reference_answer"]}
                                                       for r, e in zip(records, english)])
    items = arena_items(records, good, wrong_language)
    direct = judge_with_reference(items, "good", "wrong", REFERENCE)
    stored = judge_with_reference(items, "good", "wrong", REFERENCE, embedding.e5_store(tmp_path))
    assert [r["verdict"] for r in stored] == [r["verdict"] for r in direct]
    computed = []
    monkeypatch.setattr(embedding, "embed", lambda texts: computed.append(texts) or embedding.np.zeros((len(texts), 384)))
    again = judge_with_reference(items, "good", "wrong", REFERENCE, embedding.e5_store(tmp_path))
    assert computed == [] and again == stored


class ScriptedJudge(Backend):
    """Prefers the answer that mentions "Delhi"; rambles without a verdict on its first try per game."""

    name = "scripted"
    identity = "scripted"

    def __init__(self, never_decide=lambda prompt: False):
        self.prompts: list[str] = []
        self.never_decide = never_decide

    def stream(self, requests):
        for i, request in enumerate(requests):
            prompt = request.messages[0]["content"]
            first_try = prompt not in self.prompts
            self.prompts.append(prompt)
            if self.never_decide(prompt) or first_try:
                yield i, Response(text='Answer "[[A]]" or "[[B]]"... hard to say.'.replace("[[", "<").replace("]]", ">"), tokens=10)
                continue
            answer_a = prompt.split("[The Start of Assistant A's Answer]")[1]
            answer_b = prompt.split("[The Start of Assistant B's Answer]")[1]
            letter = "A" if "Delhi" in answer_a.split("[The End")[0] else "B" if "Delhi" in answer_b.split("[The End")[0] else "C"
            yield i, Response(text=f"Reasoning. [[{letter}]]", tokens=12)


def test_llm_judge_fills_every_prompt_and_retries(hindi):
    records, _ = hindi
    a = [{"query_id": r["query_id"], "answer": f"Delhi answer {r['query_id']}", "cited_docids": [], "raw_output": ""} for r in records]
    b = [{"query_id": r["query_id"], "answer": None, "cited_docids": [], "raw_output": f"raw {r['query_id']}"} for r in records]
    judge = ScriptedJudge()
    rows = judge_pairs_with_llm(LLM(judge), [("m1", "m2", arena_items(records, a, b))], JUDGING)[0]
    assert [r["verdict"] for r in rows] == ["model_a"] * 6
    assert [r["judge_calls"] for r in rows] == [2] * 6 and [r["judge_tokens"] for r in rows] == [22] * 6
    first_prompts = judge.prompts[:6]
    assert len(set(first_prompts)) == 6  # filled per game, never reused
    for k, record in enumerate(r for r in records if r["arena"]):
        a_first, b_first = first_prompts[2 * k], first_prompts[2 * k + 1]
        assert record["query"] in a_first and all(f"[{p['docid']}]: " in a_first for p in record["passages"])
        assert a_first.index("Delhi answer") < a_first.index(f"raw {record['query_id']}")  # model_a shown first
        assert b_first.index(f"raw {record['query_id']}") < b_first.index("Delhi answer")


def test_unreadable_verdicts_are_invalid_and_a_judge_that_never_decides_fails(hindi):
    records, _ = hindi
    a = [perfect(r) for r in records]
    with pytest.raises(TooManyFailures, match=r"no readable verdict .* in any of the 6 games of m1 vs m2 after 3 attempts"):
        judge_pairs_with_llm(LLM(ScriptedJudge(lambda p: True)), [("m1", "m2", arena_items(records, a, a))], JUDGING)[0]
    stubborn = records[0]["query"]
    b = [{**x, "answer": x["answer"] + " (b)"} for x in a]  # distinct answers: each order its own prompt
    rows = judge_pairs_with_llm(LLM(ScriptedJudge(lambda p: stubborn in p)), [("m1", "m2", arena_items(records, a, b))],
                                JUDGING)[0]
    assert [r["verdict"] for r in rows] == ["invalid", "invalid", "tie", "tie", "tie", "tie"]
    assert [r["judge_calls"] for r in rows] == [3, 3, 2, 2, 2, 2]  # invalid games were asked 3 times, then kept


def test_games_with_the_same_prompt_are_asked_once(hindi):
    """Two models with the same answer give the judge one prompt in both orders: one call, not two."""
    records, _ = hindi
    same = [perfect(r) for r in records]
    judge = ScriptedJudge()
    rows = judge_pairs_with_llm(LLM(judge), [("m1", "m2", arena_items(records, same, same))], JUDGING)[0]
    assert len(judge.prompts) == len(set(judge.prompts)) * 2 == 3 * 2  # 3 distinct prompts, 2 attempts each
    # The cost is counted once, on the game that asked first (A shown first); its twin costs nothing.
    assert [r["judge_calls"] for r in rows] == [2, 0] * 3 and [r["judge_tokens"] for r in rows] == [22, 0] * 3
    assert sum(r["judge_calls"] for r in rows) == len(judge.prompts)


class RejectingJudge(Backend):
    """Rejects every prompt that holds ``rejected`` (as a model rejects a prompt longer than its
    context); says [[C]] to the others."""

    name = identity = "rejecting"

    def __init__(self, rejected: str):
        self.rejected = rejected

    def stream(self, requests):
        for i, request in enumerate(requests):
            if self.rejected in request.messages[0]["content"]:
                yield i, Response(text=None, error="prompt of 5000 tokens does not fit the model's context of 4096")
            else:
                yield i, Response(text="[[C]]", tokens=4)


def test_rejected_judge_requests_are_bounded_by_max_failure_fraction(hindi):
    """A judge that rejects one question's prompts (2 of 6 games) fails the job at the default 5%;
    with a looser bound the two games are kept as invalid with the rejection in raw_output."""
    records, _ = hindi
    a = [perfect(r) for r in records]
    b = [{**x, "answer": x["answer"] + " (b)"} for x in a]
    judge = RejectingJudge(records[0]["query"])
    with pytest.raises(TooManyFailures, match=r"the model rejected 2 of 6 requests \(33\.3% > "
                                              r"judging\.max_failure_fraction 5\.0%\), e\.g\. error: prompt of 5000"):
        judge_pairs_with_llm(LLM(judge), [("m1", "m2", arena_items(records, a, b))], JUDGING)
    rows = judge_pairs_with_llm(LLM(judge), [("m1", "m2", arena_items(records, a, b))],
                                {**JUDGING, "max_failure_fraction": 0.5})[0]
    assert [r["verdict"] for r in rows] == ["invalid", "invalid", "tie", "tie", "tie", "tie"]
    assert rows[0]["raw_output"].startswith("error: prompt of 5000 tokens")
    # A rejection is not retried into a verdict: 3 attempts, each rejected.
    assert [r["judge_calls"] for r in rows] == [3, 3, 1, 1, 1, 1]


class FirstLetterJudge(Backend):
    """A base model as a judge: continues any prompt with "A]]" (it picks the first answer), except
    prompts holding ``confused``, which it continues with text that holds no verdict."""

    name = "first-letter"
    identity = "first-letter"

    def __init__(self, confused="\0"):
        self.requests = []
        self.confused = confused

    def stream(self, requests):
        for i, request in enumerate(requests):
            self.requests.append(request)
            yield i, Response(text="maybe" if self.confused in (request.prompt or "") else "A]]", tokens=3)


def test_a_base_model_judge_continues_a_prefix_and_its_unreadable_replies_are_kept_invalid(hindi):
    records, _ = hindi
    a, b = [perfect(r) for r in records], [{**perfect(r), "answer": "other"} for r in records]
    prefix = "My final verdict is: [["
    settings = {**JUDGING, "max_tokens": 2, "response_prefix": prefix, "stop": ["\n"]}
    judge = FirstLetterJudge(confused=records[1]["query"])
    rows = judge_pairs_with_llm(LLM(judge), [("m1", "m2", arena_items(records, a, b))], settings)[0]
    # A completion request: the judge prompt as text, a blank line, then the prefix to continue.
    first = judge.requests[0]
    assert first.messages is None and first.prompt.endswith(f"\n\n{prefix}") and records[0]["query"] in first.prompt
    assert first.max_tokens == 2 and first.stop == ["\n"]
    assert rows[0]["raw_output"] == prefix + "A]]"
    # "A" is whichever answer came first: model_a, then model_b; the confused question stays invalid.
    assert [r["verdict"] for r in rows] == ["model_a", "model_b", "invalid", "invalid", "model_a", "model_b"]
    assert [r["judge_calls"] for r in rows] == [1, 1, 3, 3, 1, 1]


def test_pairs_of_one_language_are_asked_question_by_question(hindi):
    """A local model reads a question's passages once for all pairs: the prompts arrive grouped
    by question; each pair's games are those it would get alone, in the same order."""
    records, _ = hindi
    answers = {name: [{**perfect(r), "answer": f"{name} {r['query_id']}"} for r in records] for name in "xyz"}
    items = {(m1, m2): arena_items(records, answers[m1], answers[m2]) for m1, m2 in (("x", "y"), ("x", "z"), ("y", "z"))}
    judge = FirstLetterJudge()
    batched = judge_pairs_with_llm(LLM(judge), [(m1, m2, pair_items) for (m1, m2), pair_items in items.items()],
                                   {**JUDGING, "response_prefix": "[["})
    asked = [next(r["query_id"] for r in records if r["query"] in request.prompt) for request in judge.requests]
    arena = [r["query_id"] for r in records if r["arena"]]
    assert asked == [query_id for query_id in arena for _ in range(3 * 2)]  # 3 pairs x 2 orders per question
    for ((m1, m2), pair_items), rows in zip(items.items(), batched):
        alone = judge_pairs_with_llm(LLM(FirstLetterJudge()), [(m1, m2, pair_items)],
                                     {**JUDGING, "response_prefix": "[["})[0]
        assert rows == alone


def test_a_judge_on_the_first_questions_only(hindi):
    records, _ = hindi
    a = [perfect(r) for r in records]
    arena = [r["query_id"] for r in records if r["arena"]]
    assert [r["query_id"] for r, _, _ in arena_items(records, a, a, max_questions=2)] == arena[:2]
    assert len(arena_items(records, a, a, max_questions=100)) == len(arena) == 3


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_recorded_verdicts(tmp_path, hindi):
    records, _ = hindi
    arena_id, other_id = records[0]["query_id"], records[5]["query_id"]
    write_jsonl(tmp_path / "hi.jsonl", [
        {"query_id": arena_id, "model_A": "gpt-4o", "model_B": "llama-3", "verdict": "A", "judge": "gpt-4o", "output": "x [[A]]"},
        {"query_id": arena_id, "model_A": "llama-3", "model_B": "gpt-4o", "verdict": "Tie", "judge": "gpt-4o", "output": "y"},
        {"query_id": arena_id, "model_A": "llama-3", "model_B": "gpt-4o", "verdict": "B", "judge": "other", "output": "z"},
        {"query_id": other_id, "model_A": "gpt-4o", "model_B": "llama-3", "verdict": "B", "judge": "gpt-4o", "output": "w"},
        {"query_id": arena_id, "model_A": "gpt-4o", "model_B": "aya", "verdict": "B", "judge": "gpt-4o", "output": "v"},
    ])
    options = {"dataset": "x", "split": "train", "revision": None, "dir": str(tmp_path), "judge_name": "gpt-4o",
               "model_names": {"gpt4o": "gpt-4o"}}
    games = recorded_games(records, "gpt4o", "llama-3", "hi", options, "")
    assert [(g["shown_first"], g["verdict"], g["raw_output"]) for g in games] == [("gpt4o", "model_a", "x [[A]]"), ("llama-3", "tie", "y")]
    write_jsonl(tmp_path / "hi.jsonl", [{"query_id": arena_id, "model_A": "gpt-4o", "model_B": "llama-3", "verdict": "a"}])
    with pytest.raises(DataError, match=r"hi.jsonl: row 1: verdict 'a' is not one of A, B, Tie"):
        recorded_games(records, "gpt4o", "llama-3", "hi", options, "")


def test_one_registry_decides_a_judges_kind_and_the_llm_layer_takes_backend_options_only(repo):
    import yaml

    from polyrag.errors import ConfigError
    from polyrag.judge.kinds import KINDS, judge_kind, judges_scheduled, prompting_judges
    from polyrag.llm.factory import backend_options, make_backend

    schema = yaml.safe_load((repo / "schemas" / "config.schema.yaml").read_text())
    backends = schema["$defs"]["judge"]["properties"]["backend"]["enum"]
    assert sorted(backends) == sorted(KINDS)  # the schema names exactly the registered kinds
    with pytest.raises(ConfigError, match=r"judges.x.backend: unknown judge kind 'claude' \(known: reference, recorded"):
        judge_kind({"backend": "claude"}, "x")
    config = {"judges": {"ref": {"backend": "reference"}, "api": {"backend": "openai", "model": "m"},
                         "local": {"backend": "llama_cpp", "package": "p"},
                         "both": {"backend": "panel", "members": ["ref", "api"]}}}
    scheduled = [judges_scheduled(config, s) for s in ("per_pair", "local_weights", "panel")]
    assert scheduled == [["ref", "api"], ["local"], ["both"]]
    assert prompting_judges(config) == ["api", "local"]
    # Arena keys never reach a backend: the LLM layer strips the workflow's keys, and refuses any other it does not know.
    entry = {"backend": "mock", "error_rate": 0.1, "contestants": ["a", "b"], "max_questions": 5, "family": "f"}
    assert backend_options(entry) == {"error_rate": 0.1}
    assert make_backend("m", entry, cache_dir="unused", seed=0).error_rate == 0.1
    with pytest.raises(TypeError, match="colour"):
        make_backend("m", {**entry, "colour": "red"}, cache_dir="unused", seed=0)
