"""A system's passages: what each mode gives, relevance and unjudged docids, generation recording
them, and every consumer reading the answer's passages rather than the question's.

The hand-made case: a question with judged passages q1 (relevant) and q2 (not relevant), and a
system that was given other passages, f1 (a text of its own, nobody judged it) and q2, as a system
reading a user's file or a retriever would be. Each consumer's result is worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from polyrag.answer_parsing import parse_plain, parse_sectioned
from polyrag.errors import DataError
from polyrag.generate.answers import build_requests, generate_answers, write_answers
from polyrag.generate.prompts import answer_messages
from polyrag.llm.client import LLM
from polyrag.llm.mock import MockBackend
from polyrag.prompts import environment
from polyrag.systems.passages import (PARALLEL_DOCID, as_passage, given_passages, passages_for, passages_shown_to_compare, relevance,
                                      split_by_relevance, unjudged_share)

SETTINGS = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 64, "seed": 3, "max_failure_fraction": 0.05}

QUESTION = {
    "query_id": "q", "query": "Where does the Niger river end?", "language": "en", "passage_language": "en",
    "arena": True, "reference_answer": "It ends in the Gulf of Guinea [q1].",
    "passages": [{"docid": "q1", "title": "Niger", "text": "The Niger ends in the Gulf of Guinea."},
                 {"docid": "q2", "title": "Nile", "text": "The Nile ends in the Mediterranean."}],
    "relevant_docids": ["q1"],
}
FILE_PASSAGES = [{"docid": "f1", "title": "", "text": "Bananas are yellow."},
                 {"docid": "q2", "title": "Nile", "text": "The Nile ends in the Mediterranean."}]


def answer(text, cited, passages=None, **extra):
    row = {"query_id": "q", "raw_output": text, "answer": text, "cited_docids": cited, **extra}
    return row if passages is None else {**row, "passages": passages, "passage_source": "file"}


# --- modes, relevance ---------------------------------------------------------------------------

def test_each_mode_gives_its_passages_in_their_order():
    record = {**QUESTION, "passages": [*QUESTION["passages"], {"docid": "q3", "text": "Also the Niger."}],
              "relevant_docids": ["q3", "q1"]}
    assert [p["docid"] for p in passages_for(record, "question")] == ["q1", "q2", "q3"]
    assert [p["docid"] for p in passages_for(record, "oracle")] == ["q1", "q3"]  # the question's order
    assert passages_for(record, "closed_book") == []
    assert passages_for(record, "question")[2] == {"docid": "q3", "title": "", "text": "Also the Niger."}
    with pytest.raises(ValueError, match="unknown passages mode 'retrieved'"):
        passages_for(record, "retrieved")


def test_relevance_is_known_only_for_the_question_s_passages():
    q1, q2 = QUESTION["passages"]
    f1 = FILE_PASSAGES[0]
    assert relevance(QUESTION, q1) is True and relevance(QUESTION, q2) is False
    assert relevance(QUESTION, f1) is None  # nobody judged it: unknown, not non-relevant
    given = [*QUESTION["passages"], f1]
    assert split_by_relevance(QUESTION, given, ["f1", "q2", "q1", "zz"]) == (["q1"], ["q2"], ["f1", "zz"])
    assert unjudged_share(QUESTION, given, ["f1", "q2", "q1", "zz"]) == 0.5
    assert unjudged_share(QUESTION, given, []) is None


def test_a_judged_docid_with_another_text_is_unjudged():
    q1, q2 = QUESTION["passages"]
    forged = {"docid": "q1", "title": "Niger", "text": "The Niger flows into Lake Chad."}
    assert relevance(QUESTION, forged) is None and relevance(QUESTION, {**q2, "text": "Bananas."}) is None
    assert split_by_relevance(QUESTION, [forged, q2], ["q1", "q2"]) == ([], ["q2"], ["q1"])
    assert unjudged_share(QUESTION, [forged, q2], ["q1", "q2"]) == 0.5
    # the same text re-wrapped (spaces, a line break, a decomposed accent) is the same passage
    copy = {**q1, "title": "", "text": "  The Niger ends in\nthe  Gulf of Guinea. "}
    assert relevance(QUESTION, copy) is True
    accented = {**QUESTION, "passages": [{"docid": "e", "text": "Café"}], "relevant_docids": ["e"]}
    assert relevance(accented, {"docid": "e", "text": "Cafe\u0301"}) is True


def test_an_answer_s_passages_are_its_own_and_old_files_had_the_question_s():
    assert given_passages(answer("x", [], FILE_PASSAGES), QUESTION) == FILE_PASSAGES
    assert given_passages(answer("x", [], []), QUESTION) == []  # closed-book: nothing, not the question's
    # written before answers recorded their passages, when every system was given the question's
    assert given_passages(answer("x", []), QUESTION) == [as_passage(p) for p in QUESTION["passages"]]
    # a pandas row holds a numpy array of dicts
    assert given_passages({"passages": np.array(FILE_PASSAGES, dtype=object)}, QUESTION) == FILE_PASSAGES
    with pytest.raises(DataError, match="question 'q' has null passages"):
        given_passages({"query_id": "q", "passages": None}, QUESTION)


def test_two_answers_passages_compared():
    assert passages_shown_to_compare(QUESTION["passages"], [dict(p) for p in QUESTION["passages"]]) is None
    union = passages_shown_to_compare(QUESTION["passages"], FILE_PASSAGES)
    assert [(p["docid"], p["given"]) for p in union] == [("q1", "first"), ("q2", "both"), ("f1", "second")]
    assert [(p["docid"], p["given"]) for p in passages_shown_to_compare([], FILE_PASSAGES)] == [
        ("f1", "second"), ("q2", "second")]
    # the same passages in another order are other passages (order changes what a model reads)
    assert passages_shown_to_compare(QUESTION["passages"], QUESTION["passages"][::-1]) is not None


# --- generation -------------------------------------------------------------------------------

def test_answers_record_the_passages_and_their_source(tmp_path):
    llm = LLM(MockBackend("g", grounded=True))
    for mode, docids in (("question", ["q1", "q2"]), ("oracle", ["q1"]), ("closed_book", [])):
        [row] = generate_answers(llm, [QUESTION], {**SETTINGS, "passages": mode})
        assert [p["docid"] for p in row["passages"]] == docids and row["passage_source"] == mode
        assert row["passages"] == passages_for(QUESTION, mode)  # text copied in full
        write_answers([row], tmp_path / f"{mode}.parquet")
        # a passage not from polyrag's retrieval of the data's parallel corpus has no parallel mark
        unmarked = [p | {PARALLEL_DOCID: None} for p in row["passages"]]
        assert pq.read_table(tmp_path / f"{mode}.parquet").to_pylist() == [{**row, "passages": unmarked}]
    [default] = generate_answers(llm, [QUESTION], SETTINGS)
    assert default["passage_source"] == "question"
    with pytest.raises(DataError, match=r"x.parquet: the answer to question 'q' has no passages or passage_source"):
        write_answers([{"query_id": "q", "answer": "a"}], tmp_path / "x.parquet")


def test_prompts_are_built_from_the_passages_given():
    [question, oracle, closed] = (build_requests([QUESTION], {**SETTINGS, "passages": mode})[0].messages[0]["content"]
                                  for mode in ("question", "oracle", "closed_book"))
    assert "[q1] Niger" in question and "[q2] Nile" in question
    assert "[q1] Niger" in oracle and "[q2]" not in oracle
    assert "Contexts:" not in closed and "Niger ends" not in closed
    # a mock system reads the same passages from its context
    context = build_requests([QUESTION], {**SETTINGS, "passages": "oracle"})[0].context
    assert [p["docid"] for p in context["passages"]] == ["q1"]


def test_closed_book_prompts_say_there_are_no_passages_and_ask_for_no_citations():
    record = {**QUESTION, "language": "de", "passages": []}
    mirage = answer_messages("mirage", record)[0]["content"]
    assert mirage.startswith(f"Question: {record['query']}\n\nInstruction: No contexts are given for this question.")
    assert "Do not cite any sources." in mirage and "##Reason: {reason} ##Answer: {answer}." in mirage
    assert "in German" in mirage
    memerag = answer_messages("memerag", record)[0]["content"]
    assert "no passages are given" in memerag and "without citations" in memerag and "in German" in memerag
    system, user = answer_messages("bergen", record)
    # BERGEN's own closed-book prompts (system_without_docs, user_without_docs)
    assert system["content"] == ("Du bist ein hilfreicher Assistent. Beantworte die Fragen so kurz wie möglich. "
                                 "Antworte bitte auf Deutsch.")
    assert user["content"] == f"Question: {record['query']}"
    persian = answer_messages("bergen", {**record, "language": "fa"})[0]["content"]
    assert persian == "You are a helpful assistant. Answer the questions as briefly as possible. Please reply in Persian."


def test_a_closed_book_answer_parses_and_cites_nothing():
    """Nothing was given: a bracket in the answer (a docid it remembers, a footnote) is no citation,
    and the MIRAGE sections parse as for any answer."""
    raw = "##Reason: The Niger flows south [q1] [1].\n\n##Answer: The Gulf of Guinea [q1]."
    parsed = parse_sectioned(raw, [])
    assert parsed.error is None and parsed.answer == "The Gulf of Guinea [q1]." and parsed.cited_docids == []
    assert parse_plain("The Gulf of Guinea [q1].", []).cited_docids == []
    assert parse_sectioned("The Gulf of Guinea.", []).error == "no '##Answer:' section in the output"
    # through generation: a closed-book row with its (empty) passages and no citation
    [row] = generate_answers(LLM(MockBackend("m", 0.0)), [QUESTION], {**SETTINGS, "passages": "closed_book"})
    assert row["cited_docids"] == [] and row["passages"] == [] and row["error"] is None


# --- consumers: each reads the answer's passages ------------------------------------------------

def test_deterministic_features_leave_unjudged_citations_out_and_report_their_share():
    from polyrag.features.citations import citation_scores
    from polyrag.features.deterministic import deterministic_features

    answers = [answer("Bananas [f1] and the Mediterranean [q2].", ["f1", "q2"], FILE_PASSAGES),
               answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES),
               answer("The Gulf of Guinea [q1].", ["q1"])]  # an old file: the question's passages
    rows = deterministic_features([QUESTION] * 3, answers)
    assert [r["unjudged_citations"] for r in rows] == [0.5, 1.0, 0.0]
    # citation features on the judged citation only: q2, non-relevant, as if the answer cited q2 alone
    [only_q2] = citation_scores([["q2"]], [["q1"]])
    assert {k: rows[0][k] for k in only_q2} == only_q2 == {"citation_map@10": 0.0, "citation_recall@10": 0.0}
    # every citation unjudged: unknown, never a 0
    assert rows[1]["citation_map@10"] is None and rows[1]["citation_recall@10"] is None
    assert rows[2]["citation_map@10"] == rows[2]["citation_recall@10"] == 1.0
    # the text features read the answer without citations of its own passages: "[f1]" is removed,
    # as it is not from an answer that was not given f1 (there it is text)
    [cited, plain, not_given] = deterministic_features([QUESTION] * 3, [
        answer("Gulf of Guinea [f1].", ["f1"], FILE_PASSAGES), answer("Gulf of Guinea.", [], FILE_PASSAGES),
        answer("Gulf of Guinea [f1].", [], [])])
    reference_only = ["answer_bleu", "answer_rougeL", "match", "exact_match", "token_f1", "char3_recall"]
    assert {k: cited[k] for k in reference_only} == {k: plain[k] for k in reference_only}
    assert not_given["answer_rougeL"] < plain["answer_rougeL"]


def test_embedding_similarity_strips_the_answer_s_own_citations():
    from polyrag.features.embedding import embedding_features

    seen = []

    def embed(texts):
        seen.extend(texts)
        return np.eye(len(texts))

    embedding_features([QUESTION], [answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES)], embed)
    assert seen == ["Bananas are yellow.", "It ends in the Gulf of Guinea."]


class RecordingNLI:
    """Entailment 0.9 when the premise contains the hypothesis' last word, else 0.1 (a rule, not a
    constant), recording the pairs it was asked."""

    entailment, neutral = 0, 1

    def __init__(self):
        self.pairs = []

    def probabilities(self, premises, hypotheses):
        self.pairs += list(zip(premises, hypotheses))
        entail = [0.9 if h.rstrip(".").split()[-1] in p else 0.1 for p, h in zip(premises, hypotheses)]
        return np.array([[e, 1 - e, 0.0] for e in entail])


def test_support_reads_the_passage_the_answer_was_given():
    from polyrag.features.support import support_features

    nli = RecordingNLI()
    rows = support_features(nli, [QUESTION], [answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES)])
    assert nli.pairs == [("Bananas are yellow.", "Bananas are yellow.")]  # f1's text: not in the question
    assert rows[0]["support_entailment"] == pytest.approx(0.9)


def test_reranker_scores_the_passages_the_answer_was_given():
    from polyrag.features.reranker import reranker_features

    class Recording:
        pairs = []

        def scores(self, pairs):
            self.pairs += pairs
            return [float(len(passage)) for _, passage in pairs]

    reranker = Recording()
    rows = reranker_features(reranker, [QUESTION], [answer("Bananas [f1] [q2].", ["f1", "q2"], FILE_PASSAGES)])
    assert reranker.pairs == [(QUESTION["query"], "Bananas are yellow."),
                              (QUESTION["query"], "The Nile ends in the Mediterranean.")]
    assert rows[0]["reranker_score"] == (len("Bananas are yellow.") + len("The Nile ends in the Mediterranean.")) / 2


def test_llm_scores_read_the_answer_without_its_own_citations():
    from polyrag.features.llm_scores import llm_scores
    from polyrag.llm.base import Backend
    from polyrag.llm.types import Response

    class Rater(Backend):
        name = identity = "rater"
        prompts = []

        def stream(self, requests):
            for i, request in enumerate(requests):
                self.prompts.append(request.messages[0]["content"])
                yield i, Response(text="[[3]]")

    rater = Rater()
    llm_scores(LLM(rater), [QUESTION], [answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES)],
               {"max_attempts": 1, "max_failure_fraction": 0.0, "temperature": 0.0, "max_tokens": 8, "seed": 0})
    assert rater.prompts and all("[f1]" not in p and "Bananas are yellow." in p for p in rater.prompts)
    assert all("[q1]" not in p for p in rater.prompts)  # the reference's citation of the question's passage


#: The MIRAGE pairwise template as it was before answers carried their passages: the judge's
#: prompt for two answers given the same passages must stay byte for byte this (LLM caches hit).
PAIRWISE_BEFORE = (
    'Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the '
    'user question displayed below. The assistants were given reference documents, which may or may not be relevant, '
    'and were asked to answer in {{ language_name }} and to cite the documents they use in the IEEE format, e.g. '
    '[docid]. Evaluate which assistant answers the question better: consider correctness with respect to the '
    'documents, helpfulness, completeness, accuracy, depth, level of detail, whether the citations support the claims, '
    'and whether the answer is written in {{ language_name }}. Begin your evaluation by comparing the two responses '
    'and provide a short explanation. Avoid any position biases and ensure that the order in which the responses were '
    'presented does not influence your decision. Do not allow the length of the responses to influence your '
    'evaluation. Be as objective as possible. After providing your explanation, output your final verdict by strictly '
    'following this format: "[[A]]" if assistant A is better, "[[B]]" if assistant B is better, and "[[C]]" for a '
    'tie.\n\n[User Question]\n{{ query }}\n\n[Reference Documents]\n{% for passage in passages %}\n'
    '[{{ passage.docid }}]: {% if passage.title %}{{ passage.title | oneline }} - {% endif %}'
    '{{ passage.text | oneline }}\n{% endfor %}\n\n[The Start of Assistant A\'s Answer]\n{{ answer_a }}\n'
    '[The End of Assistant A\'s Answer]\n\n[The Start of Assistant B\'s Answer]\n{{ answer_b }}\n'
    '[The End of Assistant B\'s Answer]'
)


def test_judge_prompt_for_answers_given_the_same_passages_is_unchanged():
    from polyrag.judge.play import judge_prompt

    first = answer("The Gulf of Guinea [q1].", ["q1"], passages_for(QUESTION, "question"))
    second = answer("The Mediterranean [q2].", ["q2"])  # an old file: the question's passages too
    before = environment().from_string(PAIRWISE_BEFORE).render(
        query=QUESTION["query"], passages=QUESTION["passages"], language_name="English",
        answer_a=first["answer"], answer_b=second["answer"]).strip()
    assert judge_prompt(QUESTION, first, second)[0]["content"] == before


def test_judge_prompt_for_answers_given_different_passages_shows_each_its_own():
    from polyrag.judge.play import judge_prompt

    question = answer("The Gulf of Guinea [q1].", ["q1"], passages_for(QUESTION, "question"))
    from_file = answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES)
    prompt = judge_prompt(QUESTION, question, from_file)[0]["content"]
    documents = prompt.split("[Reference Documents]\n")[1].split("\n\n[The Start")[0].splitlines()
    assert documents == ["[q1] (given to A): Niger - The Niger ends in the Gulf of Guinea.",
                         "[q2] (given to A and B): Nile - The Nile ends in the Mediterranean.",
                         "[f1] (given to B): Bananas are yellow."]
    assert "were given different reference documents" in prompt and "can cite only the documents it was given" in prompt
    swapped = judge_prompt(QUESTION, from_file, question)[0]["content"]  # the other order: B is the question's
    assert "[q1] (given to B): Niger" in swapped and "[f1] (given to A): Bananas" in swapped
    closed = answer("The Gulf of Guinea.", [], [])
    assert "[q1] (given to A and B)" not in judge_prompt(QUESTION, question, closed)[0]["content"]
    both_closed = judge_prompt(QUESTION, closed, closed)[0]["content"]
    assert "(none: neither assistant was given a document)" in both_closed


def test_a_file_system_s_passage_reusing_a_judged_docid_with_another_text_is_unjudged(tmp_path):
    """The row of issue 50: the question's d1#2 says the Niger ends in the Gulf of Guinea; the
    system's d1#2 says Lake Chad. Its citation is unjudged, not credited as the relevant passage."""
    from polyrag.features.deterministic import deterministic_features
    from polyrag.systems.answer_files import system_answers

    question = {**QUESTION, "query_id": "q01", "relevant_docids": ["d1#2"],
                "passages": [{"docid": "d1#2", "title": "Niger River", "text": "The Niger ends in the Gulf of Guinea."},
                             {"docid": "d7#0", "title": "Nile", "text": "The Nile ends in the Mediterranean."}]}
    forged = {"query_id": "q01", "answer": "The answer is Lake Chad [d1#2].",
              "passages": [{"docid": "d1#2", "title": "Niger River", "text": "The Niger flows into Lake Chad."}]}
    honest = {**forged, "answer": "The Gulf of Guinea [d1#2].", "passages": question["passages"][:1]}
    path = tmp_path / "en.jsonl"
    entry = {"backend": "file", "answers": str(tmp_path / "{lang}.jsonl"), "corpus": None, "missing": "refuse",
             "unknown": "refuse", "max_answer_chars": 20000, "max_passages": 100}
    features = []
    for row in (forged, honest):
        path.write_text(json.dumps(row) + "\n")
        answers = system_answers("mine", entry, "en", [question], "results/data/en.parquet")
        assert answers[0]["cited_docids"] == ["d1#2"]
        [features_row] = deterministic_features([question], answers)
        features.append({k: features_row[k] for k in ("citation_map@10", "citation_recall@10", "unjudged_citations")})
    assert features[0] == {"citation_map@10": None, "citation_recall@10": None, "unjudged_citations": 1.0}
    assert features[1] == {"citation_map@10": 1.0, "citation_recall@10": 1.0, "unjudged_citations": 0.0}


def test_reference_judge_leaves_unjudged_citations_out():
    from polyrag.judge.reference import answer_scores

    weights = {"similarity": 0.0, "citation": 1.0, "language": 1.0}
    half = answer("Bananas [f1] and the Mediterranean [q2], Guinea [q1].", ["f1", "q2", "q1"], [
        *FILE_PASSAGES, QUESTION["passages"][0]], target_language=0.8)
    right = answer("The Gulf of Guinea [q1].", ["q1"], target_language=0.9)
    scores = answer_scores(QUESTION, [half, right], weights)
    assert scores[0]["citation"] == 0.5 and scores[1]["citation"] == 1.0  # q2 and q1 judged; f1 left out
    assert scores[0]["total"] == pytest.approx(0.5 + 0.8) and scores[1]["total"] == pytest.approx(1.0 + 0.9)
    # q1 given with another text is no judged q1: unjudged too, as f1
    forged = answer("Lake Chad [q1].", ["q1"], [{"docid": "q1", "title": "", "text": "It ends in Lake Chad."}],
                    target_language=0.7)
    assert answer_scores(QUESTION, [forged, right], weights)[0]["citation"] is None
    unknown = answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES, target_language=0.7)
    scores = answer_scores(QUESTION, [unknown, right], weights)
    # f1 unjudged: no citation part, and the game is decided on the language alone, for both answers
    assert scores[0]["citation"] is None and scores[1]["citation"] == 1.0
    assert scores[0]["total"] == pytest.approx(0.7) and scores[1]["total"] == pytest.approx(0.9)
    assert answer_scores(QUESTION, [answer("Guinea.", [], [], target_language=1.0)], weights)[0]["citation"] == 0.0


def test_answer_style_counts_the_answer_s_own_citations():
    from polyrag.arena.style_control import answer_style

    questions = pd.DataFrame([QUESTION])
    answers = pd.DataFrame([answer("Bananas [f1] and the Nile [q2] and Guinea [q1].", ["f1", "q2"], FILE_PASSAGES),
                            {**answer("Guinea [q1].", ["q1"], []), "query_id": "q"}])
    style = answer_style(questions, answers.iloc[:1], count_tokens=lambda text: len(text.split()))
    # [f1] and [q2] are citations (given), [q1] is not (not given): it stays in the text
    assert style.iloc[0][["length_tokens", "citations"]].tolist() == [7, 2]
    assert style.iloc[0]["citation_precision"] == 0.0  # of the judged citation q2; f1 left out
    closed = answer_style(questions, answers.iloc[1:], count_tokens=lambda text: len(text.split()))
    assert closed.iloc[0]["citations"] == 0 and np.isnan(closed.iloc[0]["citation_precision"])
    # a relevant docid given with another text: cited, but judged by nobody, so no precision
    forged = pd.DataFrame([answer("Lake Chad [q1].", ["q1"], [{"docid": "q1", "title": "", "text": "Lake Chad."}])])
    style = answer_style(questions, forged, count_tokens=lambda text: len(text.split()))
    assert style.iloc[0]["citations"] == 1 and np.isnan(style.iloc[0]["citation_precision"])


class KeywordJudge:
    """A MARS judge stand-in with a rule: 1 when the document mentions the Gulf of Guinea."""

    def __init__(self):
        self.seen = []

    def predict_proba(self, items):
        self.seen.append(items.copy())
        return np.array([1.0 if "Guinea" in document else 0.0 for document in items["Document"]])


def test_mars_items_judge_what_the_system_was_given():
    from polyrag.mars.scores import judge_labels, system_items

    answers = [answer("Bananas are yellow [f1].", ["f1"], FILE_PASSAGES),
               answer("The Nile.", [], FILE_PASSAGES),
               answer("The Gulf of Guinea.", [], []),
               answer("It ends in the Gulf [q1].", ["q1"])]
    items = system_items([QUESTION] * 4, answers)
    assert [None if pd.isna(document) else document for document in items["Document"]] == [
        "Bananas are yellow.",  # what it cited, of what it was given
        "Bananas are yellow.\n\nThe Nile ends in the Mediterranean.",
        None,  # closed-book: nothing was given
        "The Niger ends in the Gulf of Guinea."]
    assert items["Answer"].tolist() == ["Bananas are yellow.", "The Nile.", "The Gulf of Guinea.", "It ends in the Gulf."]
    judges = {metric: KeywordJudge() for metric in ("cr", "af", "lc")}
    labels = judge_labels(items, judges, ["cr", "af", "lc"])
    # CR and AF: the closed-book item is not judged (it counts 0); LC judges it with an empty document
    assert labels["cr"][1].tolist() == labels["af"][1].tolist() == [True, True, False, True]
    assert labels["cr"][0].tolist() == [0, 0, 1]
    assert labels["lc"][1].tolist() == [True] * 4 and judges["lc"].seen[0]["Document"].iloc[2] == ""


def test_human_label_tasks_show_the_passages_each_answer_was_given():
    from polyrag.arena.human_labels import task_rows

    questions = pd.DataFrame([QUESTION])
    answers = {"question": pd.DataFrame([answer("Guinea [q1].", ["q1"], passages_for(QUESTION, "question"))]),
               "old": pd.DataFrame([answer("Guinea [q1].", ["q1"])]),
               "file": pd.DataFrame([answer("Bananas [f1].", ["f1"], FILE_PASSAGES)]),
               "closed": pd.DataFrame([answer("Guinea.", [], [])])}

    def passages(left, right):
        key = pd.DataFrame([{"unit_id": "u", "query_id": "q", "model_left": left, "model_right": right}])
        return task_rows(key, questions, answers)["passages"].iloc[0]

    same = passages("question", "old")
    assert same == ("[q1] Niger\nThe Niger ends in the Gulf of Guinea.\n\n"
                    "[q2] Nile\nThe Nile ends in the Mediterranean.")  # as tasks always showed them
    assert passages("file", "question") == (
        "[f1] (given to the left answer only) Bananas are yellow.\n\n"
        "[q2] (given to both answers) Nile\nThe Nile ends in the Mediterranean.\n\n"
        "[q1] (given to the right answer only) Niger\nThe Niger ends in the Gulf of Guinea.")
    assert passages("closed", "closed") == "(no passages: both answers were written without any)"
    assert "(given to the right answer only)" in passages("closed", "file")


def test_reference_judge_game_between_a_system_and_its_closed_book_baseline():
    """End to end through the judge's games: the answer given the relevant passage and citing it
    beats the closed-book answer, which cites nothing; the raw output keeps both scores' parts."""
    from polyrag.judge.play import arena_items, judge_with_reference

    given = answer("The Gulf of Guinea [q1].", ["q1"], passages_for(QUESTION, "question"), target_language=0.9)
    closed = answer("The Gulf of Guinea.", [], [], target_language=0.9)
    options = {"weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}, "tie_margin": 0.05}
    rows = judge_with_reference(arena_items([QUESTION], [given], [closed]), "g", "g-closed-book", options)
    assert [r["verdict"] for r in rows] == ["model_a", "model_a"]
    assert json.loads(rows[0]["raw_output"])["g-closed-book"]["citation"] == 0.0


# --- parallel data: a retrieved translation of the judged passage ---------------------------------

GERMAN_QUESTION = {"query_id": "q01", "query": "Wohin fließt der Niger?", "language": "de", "relevant_docids": ["d1#2"],
                   "passages": [{"docid": "d1#2", "title": "Niger", "text": "Der Niger mündet in den Golf von Guinea."},
                                {"docid": "d7#0", "title": "Nil", "text": "Der Nil mündet ins Mittelmeer."}]}
ENGLISH_TRANSLATION = {"docid": "d1#2", "title": "Niger River", "text": "The Niger ends in the Gulf of Guinea."}


def _retrieved_from_the_english_datastore(tmp_path, parallel_docids: bool) -> dict:
    """The German question's answer row, as features read it, from a system given the English
    corpus's d1#2 (the translation of its judged passage) by polyrag's retrieval: the passage as
    rule system_passages writes it (``top_passages``), generation's answer file written and read back."""
    from polyrag.retrieval.questions import top_passages

    corpus = pd.DataFrame([ENGLISH_TRANSLATION, {"docid": "d9#0", "title": "Congo", "text": "The Congo is long."}])
    run = pd.DataFrame({"query_id": ["q01", "q01"], "docid": ["d1#2", "d9#0"], "rank": [1, 2], "score": [2.0, 1.0]})
    [row] = top_passages(run, corpus, [GERMAN_QUESTION], 1, "run", lang="de", corpus_lang="en",
                         parallel_docids=parallel_docids)
    path = tmp_path / "answers.parquet"
    write_answers([{"query_id": "q01", "raw_output": "x", "reason": None, "answer": "Golf von Guinea [d1#2].",
                    "cited_docids": ["d1#2"], "error": None, "passages": row["passages"],
                    "passage_source": "retrieved"}], path)
    return pd.read_parquet(path).to_dict("records")[0]


def test_a_retrieved_translation_of_the_judged_passage_is_judged_by_its_labels(tmp_path):
    """On parallel data (the demo's corpus), a German question's system retrieving from the English
    datastore (corpus_language: en) is given the English d1#2, the translation of its judged d1#2:
    polyrag's retrieval marks it parallel_docid, and its citation is judged and relevant, as the
    retrieval metrics' qrels and the grounded mock count it. From a corpus that is not the data's
    parallel source (no mark) the same passage is judged by its text: unjudged."""
    from polyrag.features.deterministic import deterministic_features
    from polyrag.judge.reference import citation_part

    features = {}
    for parallel in (True, False):
        answer = _retrieved_from_the_english_datastore(tmp_path, parallel)
        given = given_passages(answer, GERMAN_QUESTION)
        assert [p.get(PARALLEL_DOCID) for p in given] == [True if parallel else None]
        [row] = deterministic_features([GERMAN_QUESTION], [answer])
        features[parallel] = ({k: row[k] for k in ("citation_map@10", "citation_recall@10", "unjudged_citations")},
                              relevance(GERMAN_QUESTION, given[0]), citation_part(GERMAN_QUESTION, given, ["d1#2"]))
    assert features[True] == ({"citation_map@10": 1.0, "citation_recall@10": 1.0, "unjudged_citations": 0.0}, True, 1.0)
    assert features[False] == ({"citation_map@10": None, "citation_recall@10": None, "unjudged_citations": 1.0},
                               None, None)
    # the mark never makes a docid the question did not judge a judged one
    assert relevance(GERMAN_QUESTION, {"docid": "d9#0", "text": "The Congo is long.", PARALLEL_DOCID: True}) is None


def test_a_user_s_file_cannot_claim_the_parallel_mark(tmp_path):
    """The English translation in a user's answer file or passage file, with parallel_docid: true,
    is refused (naming the file, row and passage); without the mark it is judged by its text:
    unjudged. Only a retrieved system's own passage file (rule system_passages) keeps the mark."""
    from polyrag.features.deterministic import deterministic_features
    from polyrag.systems.answer_files import given_from_file, system_answers

    claimed = {"query_id": "q01", "answer": "Golf von Guinea [d1#2].", "passages": [{**ENGLISH_TRANSLATION, PARALLEL_DOCID: True}]}
    (tmp_path / "de.jsonl").write_text(json.dumps(claimed) + "\n")
    entry = {"backend": "file", "answers": str(tmp_path / "{lang}.jsonl"), "corpus": None, "missing": "refuse",
             "unknown": "refuse", "max_answer_chars": 20000, "max_passages": 100}
    with pytest.raises(DataError, match=r"de.jsonl: line 1 \(query_id q01\): passage 1 \(d1#2\): parallel_docid is "
                                        "polyrag's own mark"):
        system_answers("mine", entry, "de", [GERMAN_QUESTION], "results/data/de.parquet")
    spec = {"file": str(tmp_path / "{lang}.jsonl"), "corpus": None}
    with pytest.raises(DataError, match="parallel_docid is polyrag's own mark"):
        given_from_file("mine", spec, "de", [GERMAN_QUESTION], "results/data/de.parquet")
    kept = given_from_file("sys", spec, "de", [GERMAN_QUESTION], "results/data/de.parquet", retrieved=True)
    assert kept["q01"][0][PARALLEL_DOCID] is True
    # the same row without the claim: a file's passage judged by its text, which is not the question's
    (tmp_path / "de.jsonl").write_text(json.dumps({**claimed, "passages": [ENGLISH_TRANSLATION]}) + "\n")
    answers = system_answers("mine", entry, "de", [GERMAN_QUESTION], "results/data/de.parquet")
    [row] = deterministic_features([GERMAN_QUESTION], answers)
    assert (row["citation_map@10"], row["unjudged_citations"]) == (None, 1.0)
