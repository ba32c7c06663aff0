"""Corpus files are checked before any index is built; chunking follows BERGEN; the demo corpus
pools every demo passage with the shipped XQuAD paragraphs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from polyrag.errors import DataError
from polyrag.retrieval.corpus import chunk_documents, demo_corpus, indexed_texts, read_corpus, write_corpus


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


GOOD = [{"docid": "a", "title": "A", "text": "alpha"}, {"docid": "b", "title": "B", "text": "beta"}]


@pytest.mark.parametrize("bad, line, says", [
    ({"docid": "c", "title": "C", "text": ""}, 3, "empty text"),
    ({"docid": "c", "title": "C", "text": "   "}, 3, "empty text"),
    ({"docid": "c", "title": "C", "text": None}, 3, "no text"),
    ({"docid": "a", "title": "A again", "text": "gamma"}, 3, "its docid repeats line 1"),
    ({"docid": "", "title": "C", "text": "gamma"}, 3, "no docid"),
])
def test_a_bad_jsonl_row_stops_with_the_file_and_its_line(tmp_path, bad, line, says):
    path = write_jsonl(tmp_path / "corpus.jsonl", [*GOOD, bad])
    with pytest.raises(DataError) as error:
        read_corpus(path)
    message = str(error.value)
    assert str(path) in message and f"line {line}" in message and says in message
    assert "1 bad line of 3" in message


def test_every_bad_row_is_counted_and_the_parquet_row_named(tmp_path):
    table = pd.DataFrame({"docid": ["a", "b", "a", "c", "d"], "title": ["", "", "", "", ""],
                          "text": ["x", "", "y", None, "z"]})
    path = tmp_path / "corpus.parquet"
    table.to_parquet(path)
    with pytest.raises(DataError) as error:
        read_corpus(path)
    message = str(error.value)
    assert str(path) in message and "3 bad rows of 5" in message
    assert "row 2 (docid 'b'): empty text" in message
    assert "row 3 (docid 'a'): its docid repeats row 1" in message
    assert "row 4 (docid 'c'): no text" in message


def test_a_missing_column_and_a_missing_file_are_named(tmp_path):
    path = tmp_path / "corpus.parquet"
    pd.DataFrame({"docid": ["a"], "title": ["A"], "body": ["alpha"]}).to_parquet(path)
    with pytest.raises(DataError, match=rf"{path}: the corpus has no column text"):
        read_corpus(path)
    with pytest.raises(DataError, match=r"missing\.jsonl: file not found"):
        read_corpus(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match="a corpus is a .jsonl or .parquet"):
        read_corpus(write_jsonl(tmp_path / "corpus.csv", GOOD))


def test_docids_that_look_like_numbers_stay_strings(tmp_path):
    rows = [{"docid": "080", "title": "", "text": "zero eighty"}, {"docid": "80", "text": "eighty"},
            {"docid": "1e3", "title": "T", "text": "thousand"}, {"docid": 7, "text": "a number in JSON"}]
    corpus = read_corpus(write_jsonl(tmp_path / "corpus.jsonl", rows))
    assert list(corpus["docid"]) == ["080", "80", "1e3", "7"]
    assert list(corpus["title"]) == ["", "", "T", ""]  # a row without a title has an empty one
    write_corpus(corpus, tmp_path / "corpus.parquet")
    again = read_corpus(tmp_path / "corpus.parquet")
    assert list(again["docid"]) == ["080", "80", "1e3", "7"]
    assert all(isinstance(d, str) for d in again["docid"])


def test_long_documents_are_cut_into_chunks_of_words_with_their_title():
    corpus = pd.DataFrame({"docid": ["long", "short"], "title": ["Niger", ""],
                           "text": ["one two  three\nfour five six seven", "just  three words"]})
    chunks = chunk_documents(corpus, words=3)
    assert list(chunks["docid"]) == ["long#0", "long#1", "long#2", "short"]
    assert list(chunks["text"]) == ["one two three", "four five six", "seven", "just  three words"]
    assert list(chunks["title"]) == ["Niger", "Niger", "Niger", ""]
    assert list(chunks["contents"]) == ["Niger. one two three", "Niger. four five six", "Niger. seven",
                                        "just  three words"]
    assert indexed_texts(chunks) == list(chunks["contents"])
    bare = chunk_documents(corpus, words=3, title_prefix=False)
    assert list(bare["contents"]) == list(bare["text"])
    whole = chunk_documents(corpus, words=None)
    assert list(whole["docid"]) == ["long", "short"]


def test_a_chunk_id_that_repeats_another_docid_stops():
    corpus = pd.DataFrame({"docid": ["a", "a#1"], "title": ["", ""], "text": ["w1 w2 w3", "other"]})
    with pytest.raises(DataError, match="'a#1'"):
        chunk_documents(corpus, words=2)


def test_demo_corpus_pools_every_demo_passage_and_the_xquad_paragraphs(repo):
    demo, xquad = repo / "resources" / "demo", repo / "resources" / "xquad"
    expected = []
    for line in (demo / "de.jsonl").read_text(encoding="utf-8").splitlines():
        for passage in json.loads(line)["passages"]:
            if passage["docid"] not in expected:
                expected.append(passage["docid"])
    squad = json.loads((xquad / "xquad.de.json").read_text(encoding="utf-8"))["data"]
    paragraphs = {f"xq{a}#{p}": paragraph["context"] for a, article in enumerate(squad)
                  for p, paragraph in enumerate(article["paragraphs"])}
    corpus = demo_corpus("de", demo, xquad)
    assert list(corpus["docid"]) == expected + list(paragraphs)
    assert dict(zip(corpus["docid"], corpus["text"]))["xq3#2"] == paragraphs["xq3#2"]
    assert demo_corpus("de", demo, xquad).equals(corpus)  # deterministic
    hindi = demo_corpus("hi", demo, xquad)  # no XQuAD subset shipped for Hindi: the demo's passages only
    assert not any(d.startswith("xq") for d in hindi["docid"]) and len(hindi) == len(set(hindi["docid"])) > 12


@pytest.mark.parametrize("docid, says", [
    ("d1 #2", "docid 'd1 #2' holds whitespace"),
    ("d1,d2", "docid 'd1,d2' holds ','"),
    ("d]1", "docid 'd]1' holds ']'"),
    ({"a": 1}, "docid {'a': 1} is a dict, no text"),
])
def test_a_docid_citations_or_run_files_cannot_hold_stops_the_corpus_job_naming_its_line(tmp_path, docid, says):
    """Refused where the corpus is read, before any index, not by the TREC writer of a later job."""
    from polyrag.retrieval.corpus import build_corpus

    path = write_jsonl(tmp_path / "en.jsonl", [*GOOD, {"docid": docid, "title": "", "text": "gamma"}])
    out = tmp_path / "corpus.parquet"
    with pytest.raises(DataError) as error:
        build_corpus({"source": "file", "file": str(tmp_path / "{lang}.jsonl"), "chunk_words": None}, "en", out, tmp_path)
    assert str(error.value).startswith(f"{path}: 1 bad line of the 3 lines 1-3 read together: line 3: {says}")
    assert not out.exists()
    with pytest.raises(DataError, match=rf"^{path}: 1 bad line of 3: line 3: "):
        read_corpus(path)


def gzipped(path, data: bytes):
    import gzip

    path.write_bytes(gzip.compress(data))
    return path


@pytest.mark.parametrize("name, write, says", [
    ("c.jsonl", lambda p: p.write_bytes(b'{"docid": "a", "text": "ok"}\n{"docid": "b", "text": "caf\xe9"}\n'),
     "line 2: not UTF-8 text (byte 0xe9 at column 28); save the file as UTF-8"),
    ("c.jsonl.gz", lambda p: gzipped(p, b'{"docid": "a", "text": "ok"}\n{"docid": "b", "text": "\xff"}\n'),
     "line 2: not UTF-8 text (byte 0xff at column 25)"),
    ("c.jsonl.gz", lambda p: p.write_bytes(gzip_bytes(300)[:-40]),
     "the gzip data is truncated or corrupt after line "),
    ("c.jsonl.gz", lambda p: p.write_bytes(b'{"docid": "a", "text": "ok"}\n'),
     "not a gzip file (its name ends in .gz); recompress or download it again"),
])
def test_a_corpus_file_that_cannot_be_decoded_is_named_in_one_line(tmp_path, name, write, says):
    from polyrag.retrieval.corpus import file_batches

    path = tmp_path / name
    write(path)
    with pytest.raises(DataError) as error:
        list(file_batches(path))
    message = str(error.value)
    assert message.startswith(f"{path}: {says}") and "\n" not in message
    if name == "c.jsonl":
        with pytest.raises(DataError, match=f"^{path}: line 2: not UTF-8"):
            read_corpus(path)


def gzip_bytes(rows: int) -> bytes:
    import gzip

    return gzip.compress("".join(json.dumps({"docid": f"d{i}", "text": f"text {i} " * 20}) + "\n"
                                 for i in range(rows)).encode())


def test_a_parquet_corpus_that_is_not_parquet_is_named(tmp_path):
    from polyrag.retrieval.corpus import file_batches

    path = tmp_path / "c.parquet"
    path.write_text('{"docid": "a", "text": "ok"}\n')
    for read in (read_corpus, lambda p: list(file_batches(p))):
        with pytest.raises(DataError, match=rf"^{path}: not a readable Parquet file"):
            read(path)
