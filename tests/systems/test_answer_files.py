"""Systems read from files (backend: file, polyrag.systems.answer_files): a good file becomes the
answer rows any system writes, and every malformed file is refused with one message naming the
file and row (a test each); the config refuses a file system where a language model is needed and
a missing language file before any job."""

from __future__ import annotations

import copy
import json
import logging
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from polyrag.config.queries import model_resources
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError, DataError
from polyrag.generate.answers import SCHEMA, write_answers
from polyrag.llm import open_llm
from polyrag.systems.answer_files import system_answers

PASSAGES = {
    "q1": [{"docid": "d1#0", "title": "Niger", "text": "The Niger flows into the Gulf of Guinea."},
           {"docid": "d2#0", "title": "Mali", "text": "Mali is in West Africa."}],
    "q2": [{"docid": "d3#0", "title": "Rhine", "text": "The Rhine flows into the North Sea."},
           {"docid": "d4#0", "title": "Alps", "text": "The Alps are in Europe."}],
}
RECORDS = [{"query_id": qid, "query": f"question {qid}", "passages": passages, "relevant_docids": [passages[0]["docid"]],
            "reference_answer": None, "language": "en", "passage_language": "en", "arena": True}
           for qid, passages in PASSAGES.items()]
GOOD = [
    {"query_id": "q1", "answer": "The Gulf of Guinea [d1#0].", "passages": PASSAGES["q1"]},
    {"query_id": "q2", "answer": "The North Sea [d3#0][1].", "docids": ["d4#0", "d3#0"], "reason": "it says so",
     "raw_output": "##Reason: it says so ##Answer: The North Sea [d3#0][1].", "latency_ms": 812},
]
QUESTIONS = "results/data/en.parquet"


def entry(tmp_path, suffix="jsonl", **options):
    return {"backend": "file", "answers": str(tmp_path / f"answers/{{lang}}.{suffix}"), "corpus": None,
            "missing": "refuse", "unknown": "refuse", "max_answer_chars": 20000, "max_passages": 100, **options}


def write_jsonl(tmp_path, rows, lang="en") -> str:
    path = tmp_path / "answers" / f"{lang}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return str(path)


def read(tmp_path, rows, **options):
    write_jsonl(tmp_path, rows)
    return system_answers("mine", entry(tmp_path, **options), "en", RECORDS, QUESTIONS)


def refused(tmp_path, rows, **options) -> str:
    with pytest.raises(DataError) as error:
        read(tmp_path, rows, **options)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_good_file_becomes_answer_rows_in_question_order(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="polyrag"):
        rows = read(tmp_path, list(reversed(GOOD)))
    assert [row["query_id"] for row in rows] == ["q1", "q2"]
    first, second = rows
    assert first == {"query_id": "q1", "raw_output": "The Gulf of Guinea [d1#0].", "reason": None,
                     "answer": "The Gulf of Guinea [d1#0].", "cited_docids": ["d1#0"], "error": None,
                     "passages": PASSAGES["q1"], "passage_source": "file"}
    # docids found among the question's passages, in the system's order; "[1]" is text, not a citation
    assert [p["docid"] for p in second["passages"]] == ["d4#0", "d3#0"]
    assert second["passages"][1] == PASSAGES["q2"][0]
    assert second["cited_docids"] == ["d3#0"] and second["reason"] == "it says so"
    assert second["raw_output"].startswith("##Reason")
    assert "fields ['latency_ms'] are not read" in caplog.text
    path = tmp_path / "out.parquet"
    write_answers(rows, path)
    table = pq.read_table(path)
    # a user's passages carry no parallel mark (polyrag.systems.passages.judged_docids)
    unmarked = [{**row, "passages": [p | {"parallel_docid": None} for p in row["passages"]]} for row in rows]
    assert table.schema.equals(SCHEMA) and table.to_pylist() == unmarked


def test_cited_docids_when_given_win_over_the_markers(tmp_path):
    rows = read(tmp_path, [{**GOOD[0], "cited_docids": ["d2#0", "d2#0"]}, GOOD[1]])
    assert rows[0]["cited_docids"] == ["d2#0"]


def test_a_parquet_file_with_numeric_ids_and_a_corpus(tmp_path):
    """Parquet rows are numbered from 1; a whole-number id is read as its digits; docids resolve in
    the declared corpus (here a Parquet file) instead of the question's passages."""
    records = [{**RECORDS[0], "query_id": "17"}]
    corpus = tmp_path / "corpus.parquet"
    pq.write_table(pa.Table.from_pylist([{"docid": "c1", "title": None, "text": "Corpus text."},
                                         {"docid": "c2", "title": "T", "text": "More."}]), corpus)
    path = tmp_path / "answers" / "en.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pylist([{"query_id": 17, "answer": "Yes [c2].", "docids": ["c2", "c1"]}]), path)
    [row] = system_answers("mine", entry(tmp_path, "parquet", corpus=str(corpus)), "en", records, QUESTIONS)
    assert row["query_id"] == "17" and row["cited_docids"] == ["c2"]
    assert row["passages"] == [{"docid": "c2", "title": "T", "text": "More."}, {"docid": "c1", "title": "", "text": "Corpus text."}]
    pq.write_table(pa.Table.from_pylist([{"query_id": 17, "answer": "Yes.", "docids": ["c3"]}]), path)
    with pytest.raises(DataError) as error:
        system_answers("mine", entry(tmp_path, "parquet", corpus=str(corpus)), "en", records, QUESTIONS)
    assert str(error.value) == f"{path}: row 1 (query_id 17): docids ['c3'] are not in the corpus file {corpus}"


def test_a_closed_book_row_has_no_passages(tmp_path):
    rows = read(tmp_path, [GOOD[0], {"query_id": "q2", "answer": "The North Sea.", "passages": []}])
    assert rows[1]["passages"] == [] and rows[1]["cited_docids"] == []


@pytest.mark.parametrize(("rows", "expected"), [
    # bad JSON, and rows that are no answer object
    ([json.dumps(GOOD[0]), "{\"query_id\": \"q2\", \"answer\": "],
     "{path}: line 2: not valid JSON (Expecting value)"),
    ([json.dumps(GOOD[0]), "[\"q2\", \"The North Sea.\"]"],
     "{path}: line 2: expected an object with query_id and answer, got list"),
    ([{"answer": "The Gulf of Guinea.", "passages": []}, GOOD[1]], "{path}: line 1: missing field 'query_id'"),
    ([{**GOOD[0], "query_id": 1.5}, GOOD[1]], "{path}: line 1: query_id must be a non-empty text, got 1.5"),
    # one row per question
    ([GOOD[0], GOOD[1], {**GOOD[0], "answer": "Guinea."}],
     "{path}: line 3: query_id 'q1' again (first at line 1); one row per question"),
    # empty and blank answers
    ([{**GOOD[0], "answer": ""}, GOOD[1]],
     "{path}: line 1 (query_id q1): empty answer (no visible character); leave the row out and set "
     "models.mine.missing: unanswered if the system gave no answer"),
    ([GOOD[0], {**GOOD[1], "answer": "  \n "}], "{path}: line 2 (query_id q2): empty answer"),
    ([{**GOOD[0], "answer": None}, GOOD[1]], "{path}: line 1 (query_id q1): empty answer"),
    ([{**GOOD[0], "answer": ["Guinea"]}, GOOD[1]], "{path}: line 1 (query_id q1): answer must be a text, got list"),
    # the passages the system was given
    ([{"query_id": "q1", "answer": "Guinea."}, GOOD[1]],
     "{path}: line 1 (query_id q1): no passages or docids; give the passages the system was given in one of them"),
    ([{**GOOD[0], "docids": ["d1#0"]}, GOOD[1]], "{path}: line 1 (query_id q1): both passages and docids"),
    ([{**GOOD[0], "passages": [PASSAGES["q1"][0], {"docid": "d2#0", "title": "Mali", "text": " "}]}, GOOD[1]],
     "{path}: line 1 (query_id q1): passage 2 (d2#0): no text"),
    ([{**GOOD[0], "passages": [{"title": "Mali", "text": "Mali is in West Africa."}]}, GOOD[1]],
     "{path}: line 1 (query_id q1): passage 1: no docid"),
    ([{**GOOD[0], "passages": ["d1#0"]}, GOOD[1]],
     "{path}: line 1 (query_id q1): passage 1: expected an object with docid, title and text, got str"),
    ([{**GOOD[0], "passages": [PASSAGES["q1"][0], PASSAGES["q1"][0]]}, GOOD[1]],
     "{path}: line 1 (query_id q1): duplicated docids ['d1#0'] among its passages"),
    ([GOOD[0], {**GOOD[1], "docids": ["d3#0", "d3#0"]}],
     "{path}: line 2 (query_id q2): duplicated docids ['d3#0'] among its passages"),
    ([GOOD[0], {**GOOD[1], "docids": ["d3#0", "d1#0"]}],
     "{path}: line 2 (query_id q2): docids ['d1#0'] are not in the question's passages in results/data/en.parquet "
     "(or declare their file: models.mine.corpus)"),
    # citations outside the system's passages: given, or as markers of another passage of the question
    ([{**GOOD[0], "cited_docids": ["d1#0", "d9#0"]}, GOOD[1]],
     "{path}: line 1 (query_id q1): cited_docids cite ['d9#0'], which are not among the system's passages "
     "['d1#0', 'd2#0']"),
    ([GOOD[0], {**GOOD[1], "answer": "The North Sea [d3#0, d4#0].", "docids": ["d3#0"]}],
     "{path}: line 2 (query_id q2): the answer's [docid] markers cite ['d4#0'], which are not among the system's "
     "passages ['d3#0']"),
])
def test_a_malformed_file_is_refused_naming_file_and_row(tmp_path, rows, expected):
    message = refused(tmp_path, rows)
    assert message.startswith(expected.format(path=tmp_path / "answers" / "en.jsonl"))


def test_unknown_query_ids_are_refused_or_skipped(tmp_path, caplog):
    rows = [GOOD[0], {**GOOD[1], "query_id": "q7"}, GOOD[1], {**GOOD[1], "query_id": "q8"}]
    path = tmp_path / "answers" / "en.jsonl"
    assert refused(tmp_path, rows) == (
        f"{path}: line 2: query_id 'q7' is not a question of results/data/en.parquet; 2 of the file's 4 rows answer no "
        "selected question (['q7', 'q8']). If the file answers more questions than the config selects "
        "(data.max_questions), set models.mine.unknown: ignore")
    with caplog.at_level(logging.WARNING, logger="polyrag"):
        answers = read(tmp_path, rows, unknown="ignore")
    assert [a["query_id"] for a in answers] == ["q1", "q2"] and all(a["error"] is None for a in answers)
    assert "2 rows answer no selected question of results/data/en.parquet and are skipped (unknown: ignore): ['q7', 'q8']" in caplog.text
    # a bad row that is skipped is not read
    assert read(tmp_path, [*rows, {"query_id": "q9", "answer": ""}], unknown="ignore")[1]["answer"] == GOOD[1]["answer"]


def test_missing_query_ids_are_refused_or_counted_as_unanswered(tmp_path, caplog):
    path = tmp_path / "answers" / "en.jsonl"
    assert refused(tmp_path, [GOOD[1]]) == (
        f"{path}: no row for 1 of the 2 questions of results/data/en.parquet: ['q1']; add them, or set "
        "models.mine.missing: unanswered to count them as unanswered (they lose every game and score 0 on MARS's "
        "answer-based metrics)")
    with caplog.at_level(logging.WARNING, logger="polyrag"):
        rows = read(tmp_path, [GOOD[1]], missing="unanswered")
    assert f"{path}: no row for 1 of the 2 questions of results/data/en.parquet: ['q1']; counted as unanswered" in caplog.text
    # the row a language model's rejected request gets: no answer, an error, no citation
    assert rows[0] == {"query_id": "q1", "raw_output": None, "reason": None, "answer": None, "cited_docids": [],
                       "error": f"missing: no row in {path}", "passages": [], "passage_source": "file"}
    assert rows[1]["answer"] == GOOD[1]["answer"] and rows[1]["error"] is None


def test_an_unanswered_question_is_what_a_rejected_request_is_downstream(tmp_path):
    """Null features, and a lost game in both orders against an answer under the reference judge
    (docs/systems.md: leaving a question out never helps a system)."""
    from polyrag.features.deterministic import deterministic_features
    from polyrag.judge.play import judge_with_reference

    def with_languages(answers):
        rows = deterministic_features(RECORDS, answers)
        return [{**answer, "target_language": row["target_language"]} for answer, row in zip(answers, rows)]

    partial = with_languages(read(tmp_path, [GOOD[1]], missing="unanswered"))
    assert deterministic_features(RECORDS, partial)[0]["citation_recall@10"] is None
    complete = with_languages(read(tmp_path, GOOD))
    games = judge_with_reference(list(zip(RECORDS, partial, complete)), "partial", "complete",
                                 {"weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}, "tie_margin": 0.05})
    assert [(g["query_id"], g["verdict"]) for g in games] == [("q1", "model_b"), ("q1", "model_b"), ("q2", "tie"),
                                                              ("q2", "tie")]


def test_a_missing_file_and_an_unknown_type_are_named(tmp_path):
    with pytest.raises(DataError, match=r"answers/en.jsonl: file not found$"):
        system_answers("mine", entry(tmp_path), "en", RECORDS, QUESTIONS)
    with pytest.raises(DataError, match=r"answers/en.csv: unknown file type '.csv'; a system's file is JSONL"):
        system_answers("mine", entry(tmp_path, "csv"), "en", RECORDS, QUESTIONS)
    path = tmp_path / "answers" / "en.parquet"
    path.parent.mkdir()
    path.write_text("not parquet")
    with pytest.raises(DataError, match=r"answers/en.parquet: not a readable Parquet file"):
        system_answers("mine", entry(tmp_path, "parquet"), "en", RECORDS, QUESTIONS)


@pytest.mark.parametrize(("corpus_rows", "expected"), [
    ([{"docid": "c1", "title": "T", "text": "x"}, {"docid": "c1", "title": "T", "text": "y"}],
     "{path}: line 2: docid 'c1' again (first at line 1); a corpus has one row per docid"),
    ([{"docid": "c1", "title": "T"}], "{path}: line 1 (c1): no text"),
    ([{"title": "T", "text": "x"}], "{path}: line 1: no docid"),
])
def test_a_malformed_corpus_is_refused_naming_file_and_row(tmp_path, corpus_rows, expected):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in corpus_rows))
    write_jsonl(tmp_path, [{"query_id": "q1", "answer": "x", "docids": ["c1"]}])
    with pytest.raises(DataError) as error:
        system_answers("mine", entry(tmp_path, corpus=str(corpus)), "en", RECORDS[:1], QUESTIONS)
    assert str(error.value) == expected.format(path=corpus)


RULE = "a docid is text of at most 200 characters without whitespace, control characters or any of [ ] , ; ， 、"


@pytest.mark.parametrize(("row", "expected"), [
    # a docid holding a citation's separator or bracket would be cited as other docids, or not at all
    ({"query_id": "q1", "answer": "Guinea [d1,d2].", "passages": [
        {"docid": "d1,d2", "text": "x"}, {"docid": "d1", "text": "y"}, {"docid": "d2", "text": "z"}]},
     f"line 1 (query_id q1): passage 1: docid 'd1,d2' holds ',', which citations use; {RULE}"),
    ({"query_id": "q1", "answer": "Guinea [d]1].", "passages": [{"docid": "d]1", "text": "x"}]},
     "line 1 (query_id q1): passage 1: docid 'd]1' holds ']', which citations use"),
    ({"query_id": "q1", "answer": "Guinea.", "passages": [{"docid": "a;b", "text": "x"}]},
     "passage 1: docid 'a;b' holds ';', which citations use"),
    ({"query_id": "q1", "answer": "Guinea.", "passages": [{"docid": "d1 #2", "text": "x"}]},
     "passage 1: docid 'd1 #2' holds whitespace"),
    ({"query_id": "q1", "answer": "Guinea.", "passages": [{"docid": "d1\u200b", "text": "x"}]},
     "passage 1: docid 'd1\\u200b' holds the control character U+200B"),  # escaped where shown
    ({"query_id": "q1", "answer": "Guinea.", "passages": [{"docid": "d" * 201, "text": "x"}]},
     f"passage 1: docid {'d' * 200!r} has 201 characters"),
    ({"query_id": "q1", "answer": "Guinea.", "passages": [{"docid": {"a": 1}, "text": "x"}]},
     "line 1 (query_id q1): passage 1: docid {'a': 1} is a dict, no text"),
    ({"query_id": "q1", "answer": "Guinea.", "passages": [{"docid": True, "text": "x"}]},
     "passage 1: docid True is no text"),
    # docids and cited_docids are read with the same check
    ({"query_id": "q1", "answer": "Guinea.", "docids": ["d1#0", "d2 #0"]},
     "line 1 (query_id q1): docid 2: docid 'd2 #0' holds whitespace"),
    ({**GOOD[0], "cited_docids": ["d1#0", ["d2#0"]]},
     "line 1 (query_id q1): cited docid 2: docid ['d2#0'] is a list, no text"),
])
def test_a_docid_that_citations_cannot_name_is_refused_where_it_is_read(tmp_path, row, expected):
    message = refused(tmp_path, [row, GOOD[1]])
    assert message.startswith(f"{tmp_path / 'answers' / 'en.jsonl'}: line 1 (query_id q1): ") and expected in message
    assert message.endswith(RULE)


def test_a_corpus_docid_that_citations_cannot_name_is_refused_naming_the_corpus_line(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"docid": "c1", "text": "x"}) + "\n" + json.dumps({"docid": "c,2", "text": "y"}) + "\n")
    write_jsonl(tmp_path, [{"query_id": "q1", "answer": "x [c1].", "docids": ["c1"]}])
    with pytest.raises(DataError) as error:
        system_answers("mine", entry(tmp_path, corpus=str(corpus)), "en", RECORDS[:1], QUESTIONS)
    assert str(error.value) == f"{corpus}: line 2: docid 'c,2' holds ',', which citations use; {RULE}"


@pytest.mark.parametrize("answer", ["\u200b\u00a0", "\u200b", "\u00a0\u2060 \ufeff", "\u3000"])
def test_an_answer_without_a_visible_character_is_empty(tmp_path, answer):
    message = refused(tmp_path, [{**GOOD[0], "answer": answer}, GOOD[1]])
    assert message.startswith(f"{tmp_path / 'answers' / 'en.jsonl'}: line 1 (query_id q1): empty answer (no visible "
                              "character); leave the row out and set models.mine.missing: unanswered")


def test_an_answer_or_its_passages_above_the_limits_are_refused_before_any_work(tmp_path):
    path = tmp_path / "answers" / "en.jsonl"
    long = {**GOOD[0], "answer": "The Gulf of Guinea [d1#0]. " + "x" * 20000}
    assert refused(tmp_path, [long, GOOD[1]]) == (
        f"{path}: line 1 (query_id q1): an answer of {len(long['answer'])} characters, more than the 20000 "
        "models.mine.max_answer_chars allows (every feature and judge reads it); shorten it, or raise "
        "models.mine.max_answer_chars")
    assert read(tmp_path, [long, GOOD[1]], max_answer_chars=len(long["answer"]))[0]["answer"] == long["answer"]
    many = [{"docid": f"p{i}", "text": "x"} for i in range(101)]
    assert refused(tmp_path, [GOOD[0], {**GOOD[1], "passages": many, "docids": None}]) == (
        f"{path}: line 2 (query_id q2): 101 passages, more than the 100 models.mine.max_passages allows (each is "
        "featured and shown to judges); give the passages the system was given, or raise models.mine.max_passages")
    assert refused(tmp_path, [GOOD[0], {**GOOD[1], "docids": ["d3#0"] * 3}], max_passages=2).startswith(
        f"{path}: line 2 (query_id q2): 3 passages, more than the 2 models.mine.max_passages allows")
    # the limit is checked before the passages are: 10,000 bad passages stop at the count
    assert "10000 passages, more than" in refused(tmp_path, [{**GOOD[0], "passages": [None] * 10000}, GOOD[1]])


def test_the_limits_are_config_keys_with_defaults(demo_config, repo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = with_file_system(demo_config, tmp_path)
    checked = check(config, repo)
    assert checked["models"]["mine"]["max_answer_chars"] == 20000 and checked["models"]["mine"]["max_passages"] == 100
    config["models"]["mine"]["max_answer_chars"] = 0
    with pytest.raises(ConfigError, match="max_answer_chars"):
        check(config, repo)


@pytest.mark.parametrize("unknown", ["refuse", "ignore"])
def test_an_id_written_as_a_number_names_the_question_it_likely_means(tmp_path, unknown):
    records = [{**RECORDS[0], "query_id": "0010"}, {**RECORDS[1], "query_id": "q2"}]
    path = write_jsonl(tmp_path, [{**GOOD[0], "query_id": 10}, GOOD[1]])
    with pytest.raises(DataError) as error:
        system_answers("mine", entry(tmp_path, unknown=unknown, missing="unanswered"), "en", records, QUESTIONS)
    message = str(error.value)
    assert message == (f"{path}: line 1: query_id '10' is not a question of {QUESTIONS}, but '0010', which no row "
                       "answers, is (rows whose id likely means a question's: '10' for '0010'); write each query_id "
                       "as the question's id, as text (a JSON number loses leading zeros)")
    assert "unknown: ignore" not in message
    # once written as text, it is that question's answer
    write_jsonl(tmp_path, [{**GOOD[0], "query_id": "0010"}, GOOD[1]])
    rows = system_answers("mine", entry(tmp_path, unknown=unknown), "en", records, QUESTIONS)
    assert rows[0]["query_id"] == "0010" and rows[0]["error"] is None


def test_an_answer_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "answers" / "en.jsonl"
    path.parent.mkdir()
    path.write_bytes(json.dumps(GOOD[0]).encode() + b"\n" + b'{"query_id": "q2", "answer": "Nord\xe9e"}\n')
    with pytest.raises(DataError) as error:
        system_answers("mine", entry(tmp_path), "en", RECORDS, QUESTIONS)
    assert str(error.value) == f"{path}: line 2: not UTF-8 text (byte 0xe9 at column 35); save the file as UTF-8"


# The config: a file system's keys, its files checked before any job, and the roles it cannot take.

@pytest.fixture
def demo_config(repo):
    """The demo's whole showcase: the roles a file system cannot take include fine-tuning's."""
    return {**yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text()), "results_dir": "results"}  # the paths named below


def check(config, repo):
    return validate_config(config, repo / "schemas" / "config.schema.yaml", source="my.yaml")


def with_file_system(config, tmp_path, languages=("en", "de", "hi", "zh"), **options):
    for lang in languages:
        write_jsonl(tmp_path, [], lang)
    config["models"]["mine"] = {"backend": "file", "answers": str(tmp_path / "answers" / "{lang}.jsonl"), **options}
    return config


def test_a_file_system_gets_defaults_and_a_systems_resources(demo_config, repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    config = check(with_file_system(demo_config, tmp_path), repo)
    mine = config["models"]["mine"]
    assert {key: mine[key] for key in ("corpus", "missing", "unknown", "judged")} == {
        "corpus": None, "missing": "refuse", "unknown": "refuse", "judged": True}
    assert model_resources(mine) == {"gpu": 0, "mem_mb": 2000, "runtime": 30, "threads": 1}
    with pytest.raises(ConfigError, match=r"^model 'mine' \(backend file\): its answers are read from files, it is no "
                                          "language model: it cannot be opened"):
        open_llm("mine", mine, cache_dir=tmp_path, seed=0)


def test_relative_answer_paths_are_read_from_the_working_directory_else_the_workflow(demo_config, repo, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    with_file_system(demo_config, tmp_path)
    demo_config["models"]["mine"]["answers"] = "answers/{lang}.jsonl"
    assert check(copy.deepcopy(demo_config), repo)["models"]["mine"]["answers"] == "answers/{lang}.jsonl"
    demo_config["models"]["mine"]["answers"] = "resources/demo/{lang}.jsonl"  # beside the workflow, not here
    assert check(demo_config, repo)["models"]["mine"]["answers"] == str(repo / "resources/demo/{lang}.jsonl")


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c, tmp: (tmp / "answers" / "hi.jsonl").unlink(),
     "models.mine.answers: {tmp}/answers/hi.jsonl does not exist (the answers of system 'mine' in 'hi')"),
    (lambda c, tmp: c["models"]["mine"].update(corpus=str(tmp / "corpus.parquet")),
     "models.mine.corpus: {tmp}/corpus.parquet does not exist (the passages the docids of system 'mine' are looked up in)"),
    (lambda c, tmp: c["models"]["mine"].update(corpus=str(tmp / "{lang}-corpus.jsonl")),
     "models.mine.corpus: {tmp}/en-corpus.jsonl does not exist"),
    (lambda c, tmp: c["models"]["mine"].update(answers=str(tmp / "answers" / "en.jsonl")),
     "models.mine.answers: '{tmp}/answers/en.jsonl' has no {{lang}}; a system's answers are one file per language key "
     "(e.g. mine/{{lang}}.jsonl)"),
    (lambda c, tmp: c["models"]["mine"].update(answers=str(tmp / "answers" / "{lang}.csv")),
     "models.mine.answers: '{tmp}/answers/{{lang}}.csv' is neither .jsonl nor .parquet"),
    (lambda c, tmp: c["models"]["mine"].update(missing="skip"), "models.mine.missing: 'skip' is not one of"),
    (lambda c, tmp: c["models"]["mine"].update(temperature=0.3), "unknown key models.mine.temperature"),
    (lambda c, tmp: c["models"]["mine"].update(response_prefix="##Answer:"),
     "models.mine.response_prefix: '##Answer:' is not of type 'null'"),
    # the roles only a language model can take
    (lambda c, tmp: c["judges"].update(mine={"backend": "file", "answers": "x/{lang}.jsonl"}),
     "judges.mine.backend: file is a system under test that cannot judge (its answers are read from files, it is no "
     "language model); a judge is one of reference, recorded, openai, vllm, transformers, llama_cpp, panel"),
    (lambda c, tmp: c["finetune"].update(teacher="mine"),
     "finetune.teacher: 'mine' reads its answers from files; a teacher answers the training questions"),
    (lambda c, tmp: c["finetune"]["student"].update(serve="file"), "finetune.student.serve: 'file' is not one of"),
    (lambda c, tmp: c["mars"].update(generator="mine"),
     "mars.generator: 'mine' is not an LLM under models: (mock systems and systems read from files cannot write"),
    (lambda c, tmp: c["data"].update(miracl={"time_filter_model": "mine"}),
     "data.miracl.time_filter_model: 'mine' reads its answers from files; filtering questions needs a language model"),
])
def test_a_bad_file_system_is_refused_naming_the_key(demo_config, repo, tmp_path, monkeypatch, edit, expected):
    monkeypatch.chdir(repo)
    config = with_file_system(demo_config, tmp_path)
    edit(config, tmp_path)
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    assert str(error.value).startswith(f"my.yaml: {expected.format(tmp=tmp_path)}")


# End to end: real Snakemake on mock systems and the reference judge (as tests/workflow/test_budget.py).

MOCKS = {f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 50, 80)}
MINE = {"backend": "file", "answers": "mine/{lang}.jsonl"}


def copy_answers(workdir, model: str) -> None:
    """``model``'s answers as a file system's files: en with its passages, hi with their docids
    (found among the question's passages); citations left to the answers' [docid] markers."""
    (workdir / "mine").mkdir(exist_ok=True)
    for lang in ("en", "hi"):
        questions = {r["query_id"]: r for r in pq.read_table(workdir / f"results/data/{lang}.parquet").to_pylist()}
        rows = []
        for answer in pq.read_table(workdir / f"results/answers/{model}/{lang}.parquet").to_pylist():
            passages = questions[answer["query_id"]]["passages"]
            given = {"passages": passages} if lang == "en" else {"docids": [p["docid"] for p in passages]}
            rows.append({"query_id": answer["query_id"], "answer": answer["answer"], "reason": answer["reason"],
                         "raw_output": answer["raw_output"], **given})
        (workdir / "mine" / f"{lang}.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_file_system_copied_from_a_mock_is_judged_and_ranked_as_that_mock(repo, tmp_path):
    import pandas as pd

    from tests.helpers.workflow import scheduled_jobs, snakemake, tiny_config

    def configure(**models):
        config = tiny_config(repo, tmp_path, features={"embedding_similarity": False}, **MOCKS, **models)
        config["data"].update(max_questions=4, arena_queries=4)
        (tmp_path / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
        return config

    configure()
    result = snakemake(repo, tmp_path, "--cores", "2", "results/leaderboard.csv")
    assert result.returncode == 0, result.stderr[-3000:]
    copy_answers(tmp_path, "mock-50")

    # Adding the file system adds only its jobs: its answers and features, its three pairs, the fits.
    configure(mine=MINE)
    dry = snakemake(repo, tmp_path, "-n", "results/leaderboard.csv")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert scheduled_jobs(dry.stdout) == {"generate_answers": 1, "deterministic_features": 1, "merge_features": 1,
                                          "judge_pair": 3, "bradley_terry": 2, "style_control": 2, "surrogate": 1,
                                          "answer_manifest": 1, "feature_manifest": 1, "gather_games": 2,
                                          "leaderboard": 1}
    assert "input: results/data/en.parquet, results/data/hi.parquet, mine/en.jsonl, mine/hi.jsonl" in dry.stdout
    outputs = {path for line in re.findall(r"^\s+output: (.+)$", dry.stdout, re.MULTILINE) for path in line.split(", ")}
    # its own pairs only, and each language's games gathered again with them
    assert {o for o in outputs if "judgments" in o} == {f"results/judgments/reference/{lang}/{pair}.parquet"
                                                        for lang in ("en", "hi")
                                                        for pair in ("mine__mock-0", "mine__mock-50", "mine__mock-80",
                                                                     "games")}
    result = snakemake(repo, tmp_path, "--cores", "2", "results/leaderboard.csv")
    assert result.returncode == 0, result.stderr[-3000:]

    for lang in ("en", "hi"):
        mine = pd.read_parquet(tmp_path / f"results/answers/mine/{lang}.parquet")
        mock = pd.read_parquet(tmp_path / f"results/answers/mock-50/{lang}.parquet")
        columns = ["query_id", "raw_output", "reason", "answer", "error"]
        assert mine[columns].equals(mock[columns])
        assert list(map(list, mine["cited_docids"])) == list(map(list, mock["cited_docids"]))
        assert set(mine["passage_source"]) == {"file"} and all(len(p) > 0 for p in mine["passages"])
        # the same games as mock-50 against every other system (who was shown first, who won), a tie
        # in every game against it
        def games(a, b):
            return pd.read_parquet(tmp_path / f"results/judgments/reference/{lang}/{'__'.join(sorted([a, b]))}.parquet")

        def outcomes(model, other):
            table, named = games(model, other), {model: "system", other: other}
            won = [getattr(row, row.verdict) if row.verdict in ("model_a", "model_b") else row.verdict for row in table.itertuples()]
            return sorted((row.query_id, named[row.shown_first], named.get(winner, winner))
                          for row, winner in zip(table.itertuples(), won))

        for other in ("mock-0", "mock-80"):
            assert len(outcomes("mine", other)) == 2 * 4
            assert outcomes("mine", other) == outcomes("mock-50", other)
        assert set(games("mine", "mock-50")["verdict"]) == {"tie"}
        fit = pd.read_csv(tmp_path / f"results/arena/reference/{lang}/bradley_terry.csv", dtype={"model": str}).set_index("model")
        assert abs(fit.loc["mine", "logit"] - fit.loc["mock-50", "logit"]) < 1e-9
        assert fit.loc["mock-0", "logit"] > fit.loc["mine", "logit"] > fit.loc["mock-80", "logit"]
    board = pd.read_csv(tmp_path / "results/leaderboard.csv", dtype={"model": str}).set_index("model")
    assert board.loc["mine", "rank"] == board.loc["mock-50", "rank"] == 2
    assert board.loc["mine", "score"] == pytest.approx(board.loc["mock-50", "score"], abs=1e-9)

    # Sampling settings are a language model's: a new generation.max_tokens reruns the mocks' answers, not its.
    config = configure(mine=MINE)
    config["generation"]["max_tokens"] = 64
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    dry = snakemake(repo, tmp_path, "-n", "results/leaderboard.csv")
    answered = [line for line in re.findall(r"^\s+output: (results/answers/.+)$", dry.stdout, re.MULTILINE)
                if not line.endswith("manifest.json")]  # each rerun model's manifest job lists its answers again
    assert len(answered) == 3 and not [line for line in answered if "/mine/" in line]
    configure(mine=MINE)

    # Its file is in the job's identity by content (Snakemake checksums inputs under 1 MB): a touch
    # reruns nothing, an edit (here a field polyrag does not read) reruns exactly its jobs.
    (tmp_path / "mine" / "hi.jsonl").touch()
    assert "Nothing to be done" in snakemake(repo, tmp_path, "-n", "results/leaderboard.csv").stdout
    edited = (tmp_path / "mine" / "hi.jsonl").read_text().replace('{"query_id"', '{"run": 2, "query_id"', 1)
    (tmp_path / "mine" / "hi.jsonl").write_text(edited)
    dry = snakemake(repo, tmp_path, "-n", "results/leaderboard.csv")
    assert scheduled_jobs(dry.stdout) == {"generate_answers": 1, "deterministic_features": 1, "merge_features": 1,
                                          "judge_pair": 3, "bradley_terry": 2, "style_control": 2, "surrogate": 1,
                                          "answer_manifest": 1, "feature_manifest": 1, "gather_games": 2,
                                          "leaderboard": 1}
    assert "output: results/answers/mine/en.parquet, results/answers/mine/hi.parquet" in dry.stdout

    # A language file missing: refused before any job, naming the file.
    (tmp_path / "mine" / "hi.jsonl").unlink()
    dry = snakemake(repo, tmp_path, "-n")
    output = dry.stdout + dry.stderr
    assert dry.returncode != 0 and "Job stats" not in output
    assert (f"invalid config: {tmp_path / 'config.yaml'}: models.mine.answers: mine/hi.jsonl does not exist (the answers "
            "of system 'mine' in 'hi')") in output


# --- a language model given its passages from a file (passages: {file}) ---------------------------

def given_from(tmp_path, rows):
    from polyrag.systems.answer_files import given_from_file

    path = tmp_path / "run" / "en.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return given_from_file("gen", {"file": str(tmp_path / "run/{lang}.jsonl"), "corpus": None}, "en", RECORDS, QUESTIONS)


def test_a_run_file_gives_each_question_its_passages_and_skips_other_questions(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    given = given_from(tmp_path, [{"query_id": "q2", "docids": ["d4#0"]}, {"query_id": "q1", "passages": PASSAGES["q1"][1:]},
                                  {"query_id": "q9", "docids": ["x"]}])
    assert given == {"q1": PASSAGES["q1"][1:], "q2": [PASSAGES["q2"][1]]}
    assert "the passages of 2 questions (1 rows of other questions skipped)" in caplog.text


def test_a_passage_file_may_name_each_passage_s_language_and_the_prompt_says_it(tmp_path):
    from polyrag.generate.answers import build_requests

    english = [{**passage, "language": "en"} for passage in PASSAGES["q1"][:1]]
    given = given_from(tmp_path, [{"query_id": "q1", "passages": english}, {"query_id": "q2", "docids": []}])
    assert given["q1"] == english
    settings = {"prompt": "mirage", "temperature": 0.0, "max_tokens": 8, "seed": 1, "passages": {"file": "x"}}
    [request, _] = build_requests([{**r, "language": "de"} for r in RECORDS], settings, from_file=given)
    assert "contexts written in English" in request.messages[0]["content"]
    with pytest.raises(DataError, match=r"line 1 \(query_id q1\): passage 1 \(d1#0\): language must be a language code"):
        given_from(tmp_path, [{"query_id": "q1", "passages": [{**PASSAGES["q1"][0], "language": 7}]},
                              {"query_id": "q2", "docids": []}])


@pytest.mark.parametrize("rows, expected", [
    ([{"query_id": "q1", "docids": ["d1#0"]}], r"run/en.jsonl: no row for 1 of the 2 questions of results/data/en.parquet: \['q2'\]"),
    ([{"query_id": "q1", "docids": ["d1#0"]}, {"query_id": "q1", "docids": []}],
     r"run/en.jsonl: line 2: query_id 'q1' again \(first at line 1\)"),
    ([{"query_id": "q1", "docids": ["d9#0"]}, {"query_id": "q2", "docids": []}],
     r"line 1 \(query_id q1\): docids \['d9#0'\] are not in the question's passages .* models.gen.passages.corpus"),
    ([{"query_id": "q1", "docids": ["d1#0", "d1#0"]}, {"query_id": "q2", "docids": []}],
     r"line 1 \(query_id q1\): duplicated docids \['d1#0'\] among its passages"),
])
def test_a_malformed_run_file_is_refused_naming_file_and_row(tmp_path, rows, expected):
    with pytest.raises(DataError, match=expected):
        given_from(tmp_path, rows)


def test_a_grounded_mock_given_passages_from_a_file_is_right_exactly_when_one_is_relevant(tmp_path):
    from polyrag.generate.answers import generate_answers
    from polyrag.llm.client import LLM
    from polyrag.llm.mock import MockBackend

    given = given_from(tmp_path, [{"query_id": "q1", "docids": ["d2#0", "d1#0"]}, {"query_id": "q2", "docids": ["d4#0"]}])
    settings = {"prompt": "mirage", "temperature": 0.0, "max_tokens": 64, "seed": 0, "max_failure_fraction": 0.0,
                "passages": {"file": "run/{lang}.jsonl"}}
    records = [{**record, "reference_answer": f"answer {record['query_id']} [{record['relevant_docids'][0]}]"}
               for record in RECORDS]
    rows = generate_answers(LLM(MockBackend("g", grounded=True)), records, settings, from_file=given)
    assert [row["passage_source"] for row in rows] == ["file", "file"]
    assert [[p["docid"] for p in row["passages"]] for row in rows] == [["d2#0", "d1#0"], ["d4#0"]]
    assert rows[0]["cited_docids"] == ["d1#0"] and rows[0]["answer"].startswith("answer q1")  # a relevant one given
    assert rows[1]["cited_docids"] == ["d4#0"] and "answer q2" not in rows[1]["answer"]  # none given: from d4#0
    with pytest.raises(ValueError, match="passages from a file need the file's passages"):
        generate_answers(LLM(MockBackend("g", grounded=True)), records, settings)


def test_a_missing_run_file_is_refused_at_config_time(tmp_path):
    config = yaml.safe_load(open("config.yaml"))
    config["models"]["mock-recall-50"] = {"backend": "mock", "grounded": True,
                                          "passages": {"file": str(tmp_path / "nowhere/{lang}.jsonl")}}
    with pytest.raises(ConfigError, match=r"models.mock-recall-50.passages: .*nowhere/en.jsonl does not exist"):
        validate_config(config, "schemas/config.schema.yaml", "config.yaml")
