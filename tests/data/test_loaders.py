"""Loaders on small fixtures in each upstream schema, and on the real XQuAD files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyrag.data.demo import load_demo
from polyrag.data.io import cached_download
from polyrag.data.miracl import bm25_ranking, memerag_context, mirage_context, read_miracl
from polyrag.data.mirage_bench import load_mirage_bench
from polyrag.data.records import SCHEMA, mark_arena, read_questions, write_questions
from polyrag.data.select import select_questions
from polyrag.data.xquad import load_xquad, xquad_file
from polyrag.errors import DataError
from polyrag.meta_eval.memerag import memerag_file
from polyrag.text import e5_token_counter

MIRAGE_OPTIONS = {"dataset": "nthakur/mirage-bench", "split": "dev", "revision": None}
MIRACL_OPTIONS = {
    "dataset": "miracl/miracl", "split": "dev", "revision": None, "context": "mirage", "max_passage_tokens": 800,
    "subsample": {"ar": 1501}, "top_up_relevant_only": ["te"], "min_questions": 100, "top_k": 5,
    "time_filter_model": None,
}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def mirage_prompt(question: str, passages: list[tuple[str, str, str]]) -> str:
    contexts = "\n".join(f"[{d}] {t} - {x}" for d, t, x in passages)
    return (f"Question: {question}\n\nContexts:\n{contexts}\n\nInstruction: Provide an answer to the question "
            "using the information provided in contexts written in English. ##Reason: {reason} ##Answer: {answer}.")


def test_mirage_bench_prompt_is_parsed(tmp_path):
    passages = [
        ("377253#0", "Lagos", "Lagos is the largest city in Nigeria [citation needed] and a port."),
        ("88#2", "Abuja", "Abuja became the capital in 1991.\nIt lies in the centre - near Zuma Rock."),
        ("12#1", "Kano", "Kano is an old trading city."),
    ]
    write_jsonl(tmp_path / "en.jsonl", [{
        "query_id": "q1", "prompt": mirage_prompt("What is the capital of Nigeria?", passages),
        "positive_ids": ["88#2"], "negative_ids": ["377253#0", "12#1"],
    }])
    [record] = load_mirage_bench("en", MIRAGE_OPTIONS, str(tmp_path), str(tmp_path / "cache"))
    assert record["query"] == "What is the capital of Nigeria?"
    assert [p["docid"] for p in record["passages"]] == ["377253#0", "88#2", "12#1"]
    assert record["passages"][0] == {"docid": "377253#0", "title": "Lagos", "text": passages[0][2]}
    assert record["passages"][1]["text"] == passages[1][2]  # kept whole across the line break
    assert record["relevant_docids"] == ["88#2"] and record["reference_answer"] is None


def test_mirage_bench_bad_rows_name_file_and_row(tmp_path):
    good = {"query_id": "q1", "prompt": mirage_prompt("Q?", [("a#0", "T", "x"), ("b#0", "T", "y")]),
            "positive_ids": ["a#0"], "negative_ids": ["b#0"]}
    path = write_jsonl(tmp_path / "en.jsonl", [good, {k: v for k, v in good.items() if k != "prompt"}])
    with pytest.raises(DataError, match=rf"{path}: row 2: missing field 'prompt'"):
        load_mirage_bench("en", MIRAGE_OPTIONS, str(tmp_path), "")
    write_jsonl(path, [{**good, "negative_ids": ["zz#9"]}])
    with pytest.raises(DataError, match=r"row 1: docid 'zz#9' .* not in the prompt's contexts"):
        load_mirage_bench("en", MIRAGE_OPTIONS, str(tmp_path), "")
    path.write_text("{not json\n")
    with pytest.raises(DataError, match=rf"{path}: line 1: not valid JSON"):
        load_mirage_bench("en", MIRAGE_OPTIONS, str(tmp_path), "")


def miracl_row(qid: str, query: str, positives: list[tuple[str, str]], negatives: list[tuple[str, str]]) -> dict:
    def passage(docid, text):
        return {"docid": docid, "title": docid.split("#")[0], "text": text}

    return {"query_id": qid, "query": query,
            "positive_passages": [passage(*p) for p in positives],
            "negative_passages": [passage(*p) for p in negatives]}


def miracl_fixture(tmp_path: Path, lang: str) -> Path:
    rows = [
        miracl_row("1", "capital of kenya", [("1#0", "Nairobi is the capital of Kenya.")], [("2#0", "Mombasa is a port.")]),
        miracl_row("2", "longest river", [("3#0", "The Nile is the longest river.")], []),
        miracl_row("3", "tallest mountain", [("4#0", "Kilimanjaro is the tallest mountain in Africa.")],
                   [("5#0", "Mount Kenya is second."), ("6#0", "Rwenzori has glaciers.")]),
        miracl_row("4", "largest lake", [("7#0", "Lake Victoria is the largest lake.")], []),
        miracl_row("5", "a long passage", [("8#0", "word " * 2000)], [("9#0", "short one")]),
    ]
    return write_jsonl(tmp_path / f"{lang}.jsonl", rows)


def test_miracl_mirage_rules(tmp_path):
    miracl_fixture(tmp_path, "sw")
    records = read_miracl("sw", MIRACL_OPTIONS, str(tmp_path), "")
    kept = mirage_context(records, "sw", {**MIRACL_OPTIONS, "max_passage_tokens": 30}, seed=7)
    assert [r["query_id"] for r in kept] == ["1", "3", "5"]  # no non-relevant passage: dropped
    long_passage = next(p for p in kept[2]["passages"] if p["docid"] == "8#0")
    count = e5_token_counter()
    assert count(long_passage["text"]) <= 30 < count(long_passage["text"] + " word")
    # The shuffle is seeded: same seed, same order; the passages are all still there.
    again = mirage_context(records, "sw", {**MIRACL_OPTIONS, "max_passage_tokens": 30}, seed=7)
    assert [[p["docid"] for p in r["passages"]] for r in kept] == [[p["docid"] for p in r["passages"]] for r in again]
    assert sorted(p["docid"] for p in kept[1]["passages"]) == ["4#0", "5#0", "6#0"]


def test_miracl_telugu_top_up_and_arabic_subsample(tmp_path):
    miracl_fixture(tmp_path, "te")
    records = read_miracl("te", MIRACL_OPTIONS, str(tmp_path), "")
    topped = mirage_context(records, "te", {**MIRACL_OPTIONS, "min_questions": 4}, seed=1)
    assert len(topped) == 4 and {"1", "3", "5"} <= {r["query_id"] for r in topped}
    miracl_fixture(tmp_path, "ar")
    records = read_miracl("ar", MIRACL_OPTIONS, str(tmp_path), "")
    capped = mirage_context(records, "ar", {**MIRACL_OPTIONS, "subsample": {"ar": 2}}, seed=1)
    assert len(capped) == 2 and {r["query_id"] for r in capped} <= {"1", "3", "5"}


def test_miracl_missing_field(tmp_path):
    path = write_jsonl(tmp_path / "fi.jsonl", [{"query_id": "1", "query": "q", "positive_passages": []}])
    with pytest.raises(DataError, match=rf"{path}: row 1: missing field 'negative_passages'"):
        read_miracl("fi", MIRACL_OPTIONS, str(tmp_path), "")


def test_memerag_selection_keeps_a_relevant_passage():
    passages = [{"docid": f"n{i}#0", "title": "", "text": f"kenya capital city number {i} " + "kenya " * i}
                for i in range(7)]
    passages.append({"docid": "r#0", "title": "", "text": "Nairobi lies on a plateau."})
    record = {"query_id": "1", "query": "kenya capital city", "passages": passages, "relevant_docids": ["r#0"]}
    ranking = bm25_ranking(record["query"], passages)
    assert ranking[-1] == 7  # the relevant passage shares no word with the query
    [selected] = memerag_context([record], top_k=5)
    assert [p["docid"] for p in selected["passages"]] == [passages[i]["docid"] for i in ranking[:4]] + ["r#0"]
    assert selected["relevant_docids"] == ["r#0"]


def test_xquad_cross_lingual_on_real_files(shared_data):
    options = {"revision": "unused", "max_passages": 8}
    records = load_xquad("de", "en", options, str(shared_data / "xquad"), "", seed=3)
    assert len(records) == 1190
    english = {r["query_id"]: r for r in load_xquad("en", "en", options, str(shared_data / "xquad"), "", seed=3)}
    with open(shared_data / "xquad" / "xquad.en.json", encoding="utf-8") as handle:
        en_answers = {qa["id"]: qa["answers"][0]["text"] for a in json.load(handle)["data"]
                      for p in a["paragraphs"] for qa in p["qas"]}
    for record in records:
        assert record["language"] == "de" and record["passage_language"] == "en"
        [relevant] = [p for p in record["passages"] if p["docid"] in record["relevant_docids"]]
        # The relevant English paragraph holds the English answer to the parallel question.
        assert en_answers[record["query_id"]] in relevant["text"]
        assert record["query"] != english[record["query_id"]]["query"]  # the question is German
        docids = [p["docid"] for p in record["passages"]]
        assert 2 <= len(docids) <= 8 and len(set(docids)) == len(docids)
        assert {d.split("#")[0] for d in docids} == {relevant["docid"].split("#")[0]}  # one article


def test_bm25_finds_the_paragraph_on_real_xquad(shared_data):
    options = {"revision": "unused", "max_passages": 8}
    for lang in ("en", "zh", "hi"):
        records = load_xquad(lang, lang, options, str(shared_data / "xquad"), "", seed=3)[::4]
        top1 = [r["passages"][bm25_ranking(r["query"], r["passages"])[0]]["docid"] in r["relevant_docids"] for r in records]
        chance = sum(1 / len(r["passages"]) for r in records) / len(records)
        assert sum(top1) / len(top1) > max(0.75, 3 * chance), lang  # observed: 0.85-0.95


def test_select_questions_demo_arena_sample_and_roundtrip(repo, tmp_path):
    config = {"data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 10,
                       "arena_queries": 4}, "seed": 5, "cache_dir": str(tmp_path)}
    records = select_questions(config, "hi")
    assert len(records) == 10 and sum(r["arena"] for r in records) == 4
    assert select_questions(config, "hi") == records  # seeded
    write_questions(records, tmp_path / "hi.parquet")
    expected = [{name: r.get(name) for name in SCHEMA.names} for r in records]
    assert read_questions(tmp_path / "hi.parquet") == expected


def test_a_sample_of_parallel_data_keeps_the_same_questions_in_every_language(repo, tmp_path):
    config = {"data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 6,
                       "arena_queries": 3}, "seed": 42, "cache_dir": str(tmp_path)}
    samples = {lang: select_questions(config, lang) for lang in ("en", "de", "hi", "zh")}
    chosen = {lang: [(r["query_id"], r["arena"]) for r in records] for lang, records in samples.items()}
    assert len({tuple(ids) for ids in chosen.values()}) == 1, chosen
    assert len(chosen["en"]) == 6 and sum(arena for _, arena in chosen["en"]) == 3
    other_seed = select_questions({**config, "seed": 43}, "en")
    assert [r["query_id"] for r in other_seed] != [q for q, _ in chosen["en"]]


def test_arena_sample_is_seeded_and_sized():
    records = [{"query_id": str(i)} for i in range(50)]
    a = mark_arena(records, 20, 1, "en")
    assert sum(r["arena"] for r in a) == 20
    assert a == mark_arena(records, 20, 1, "en") and a != mark_arena(records, 20, 2, "en")
    assert all(r["arena"] for r in mark_arena(records, 100, 1, "en"))


def test_xquad_fixture_and_bad_rows(tmp_path):
    def squad(question: str, answers: list[dict]) -> dict:
        return {"version": "1.1", "data": [{"title": "Nile", "paragraphs": [
            {"context": "The Nile flows north.", "qas": [{"id": "q1", "question": question, "answers": answers}]},
            {"context": "It ends in a delta.", "qas": []},
            {"context": "Cairo lies on it.", "qas": []},
        ]}]}

    (tmp_path / "xquad.en.json").write_text(json.dumps(squad("Which way?", [{"text": "north", "answer_start": 14}])))
    (tmp_path / "xquad.sw.json").write_text(json.dumps(squad("Upande gani?", [{"text": "kaskazini", "answer_start": 0}])))
    options = {"revision": "unused", "max_passages": 8}
    [record] = load_xquad("sw", "en", options, str(tmp_path), "", seed=1)
    assert record["query"] == "Upande gani?" and record["reference_answer"] == "kaskazini [xq0#0]"
    assert sorted(p["docid"] for p in record["passages"]) == ["xq0#0", "xq0#1", "xq0#2"]
    (tmp_path / "xquad.sw.json").write_text(json.dumps(squad("Upande gani?", [])))
    with pytest.raises(DataError, match=r"xquad.sw.json: data\[0\].paragraphs\[0\].qas\[0\] \(id q1\): no answer text"):
        load_xquad("sw", "en", options, str(tmp_path), "", seed=1)


UNREACHABLE = "http://127.0.0.1:9/x"  # the discard port: refused at once, no network needed


def test_download_errors_name_the_setting_of_a_local_copy(tmp_path, monkeypatch):
    with pytest.raises(DataError, match=r"could not download http://127.0.0.1:9/x .*point data.dir at a local copy"):
        cached_download(UNREACHABLE, tmp_path)
    with pytest.raises(DataError, match=r"point mars.gold.dir at a local copy"):
        cached_download(UNREACHABLE, tmp_path, local_key="mars.gold.dir")
    assert not (tmp_path / "downloads" / "127.0.0.1:9" / "x").exists()
    # The loaders pass their own key: MEMERAG is meta_eval.dir, XQuAD data.dir unless told; both
    # name the environment variable that points every stage at a copy.
    monkeypatch.setattr("polyrag.meta_eval.memerag.MEMERAG_URL", UNREACHABLE + "/{revision}/{variant}/{lang}")
    with pytest.raises(DataError, match=r"point meta_eval.dir or \$POLYRAG_MEMERAG_DIR at a local copy"):
        memerag_file("de", "memerag", None, str(tmp_path))
    monkeypatch.setattr("polyrag.data.xquad.XQUAD_URL", UNREACHABLE + "/{revision}/{lang}")
    with pytest.raises(DataError, match=r"point data.dir or \$POLYRAG_XQUAD_DIR at a local copy"):
        xquad_file("de", None, "rev", str(tmp_path))
    with pytest.raises(DataError, match=r"point mars.gold.dir at a local copy"):
        xquad_file("de", None, "rev", str(tmp_path), local_key="mars.gold.dir")


@pytest.mark.parametrize("docid, says", [
    ("1,2#0", "docid '1,2#0' holds ','"),
    ("1 #0", "docid '1 #0' holds whitespace"),
    ("x" * 201, "has 201 characters"),
])
def test_question_data_with_a_docid_citations_cannot_name_is_refused_naming_file_and_row(tmp_path, docid, says):
    rows = [miracl_row("1", "capital of kenya", [("1#0", "Nairobi.")], [("2#0", "Mombasa.")]),
            miracl_row("2", "longest river", [("3#0", "The Nile.")], [(docid, "Another river.")])]
    path = write_jsonl(tmp_path / "sw.jsonl", rows)
    with pytest.raises(DataError) as error:
        read_miracl("sw", MIRACL_OPTIONS, str(tmp_path), "")
    assert str(error.value).startswith(f"{path}: row 2 (query_id 2): passage 1: ") and says in str(error.value)
    demo = write_jsonl(tmp_path / "demo" / "en.jsonl", [
        {"query_id": "q1", "query": "?", "relevant_docids": ["a"], "reference_answer": None,
         "passages": [{"docid": "a", "title": "", "text": "x"}, {"docid": docid, "title": "", "text": "y"}]}])
    with pytest.raises(DataError, match=rf"^{demo}: row 1 \(query_id q1\): passage 1: .*{says}"):
        load_demo("en", tmp_path / "demo")


def test_question_data_that_is_not_utf8_or_not_gzip_is_named(tmp_path):
    from polyrag.data.io import read_json, read_jsonl

    path = tmp_path / "xquad.sw.json"
    path.write_bytes(b'{"version": "1.1",\n "data": "Upande \xe0"}')
    with pytest.raises(DataError, match=rf"^{path}: line 2: not UTF-8 text \(byte 0xe0 at column 18\)"):
        read_json(path)
    gz = tmp_path / "sw.jsonl.gz"
    gz.write_text('{"query_id": "1"}\n')
    with pytest.raises(DataError, match=rf"^{gz}: not a gzip file"):
        list(read_jsonl(gz))
