"""Corpora written as they are read (polyrag.retrieval.corpus.write_corpus_batches): MIRACL's corpus
from a fake hub download of two gzipped JSONL shards, checked row by row with the shard and line of
a bad row, even a docid repeated in the other shard; parts of a written corpus read back; pooled
corpora of the demo's four languages, their docids prefixed, and a pooled run seen by a question."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from polyrag.errors import DataError
from polyrag.retrieval.corpus import (POOLED, build_corpus, chunk_documents, corpus_size, demo_corpus, jsonl_batches,
                                      pool_corpora, pooled_docid, question_docids, read_corpus, read_corpus_docids,
                                      read_corpus_rows, split_pooled_docid, write_corpus, write_corpus_batches)
from polyrag.retrieval.miracl import DATASET, corpus_files, shard_number

SHARD_0 = [{"docid": "100#0", "title": "Mto Nile", "text": "Mto Nile ni mto mrefu zaidi barani Afrika."},
           {"docid": "100#1", "title": "Mto Nile", "text": "Unaishia katika Bahari ya Mediterania."},
           {"docid": "7#0", "title": "Kilimanjaro", "text": "Mlima Kilimanjaro ni mlima mrefu zaidi Afrika."}]
SHARD_1 = [{"docid": "205#0", "title": "Dar es Salaam", "text": "Dar es Salaam ni jiji kubwa la Tanzania."},
           {"docid": "080", "title": "", "text": "Namba inayoanza na sifuri."}]


def write_shards(root, lang, *shards):
    folder = root / f"miracl-corpus-v1.0-{lang}"
    folder.mkdir(parents=True)
    for number, rows in enumerate(shards):
        with gzip.open(folder / f"docs-{number}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return folder


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    """huggingface_hub.snapshot_download faked: it records its call and returns a snapshot folder
    (named by a commit, as the hub's cache names it) holding what the test wrote there."""
    snapshot = tmp_path / "hub" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    calls = []

    def snapshot_download(repo_id, **options):
        calls.append({"repo_id": repo_id, **options})
        return str(snapshot)

    monkeypatch.setattr("huggingface_hub.snapshot_download", snapshot_download)
    return snapshot, calls


def test_miracl_s_corpus_from_the_hub_is_written_as_its_shards_are_read(tmp_path, fake_hub):
    snapshot, calls = fake_hub
    write_shards(snapshot, "sw", SHARD_0, SHARD_1)
    entry = {"source": "miracl", "miracl": {"revision": "0123abcd"}, "chunk_words": None}
    out = tmp_path / "sw.parquet"
    assert build_corpus(entry, "sw", out, tmp_path / "cache") == 5
    # one download of the language's shards, pinned, into the cache the questions' downloads use
    assert calls == [{"repo_id": DATASET, "repo_type": "dataset", "revision": "0123abcd",
                      "allow_patterns": ["miracl-corpus-v1.0-sw/docs-*.jsonl.gz"],
                      "cache_dir": str(tmp_path / "cache" / "hf-datasets")}]
    corpus = read_corpus(out)
    assert list(corpus["docid"]) == [row["docid"] for row in SHARD_0 + SHARD_1]  # shard order, "080" a string
    assert corpus.loc[0, "contents"] == "Mto Nile. Mto Nile ni mto mrefu zaidi barani Afrika."
    assert corpus.loc[4, "contents"] == "Namba inayoanza na sifuri."  # no title: the text alone
    # MIRACL's passages are its unit of relevance: not cut again (chunk_words null), however long
    long = [{"docid": "9#0", "title": "T", "text": " ".join(["neno"] * 300)}]
    write_shards(snapshot, "yo", long)
    build_corpus(entry, "yo", tmp_path / "yo.parquet", tmp_path / "cache")
    assert list(read_corpus(tmp_path / "yo.parquet")["docid"]) == ["9#0"]


def test_shards_are_read_in_their_numeric_order(tmp_path):
    folder = write_shards(tmp_path, "en", *([{"docid": f"{i}", "text": "x"}] for i in range(12)))
    files = corpus_files("en", {"dir": str(tmp_path)}, tmp_path / "cache")  # a local copy: no download
    assert [shard_number(f) for f in files] == list(range(12)) and files[0].parent == folder
    with pytest.raises(DataError, match=r"miracl-corpus-v1.0-xx: no docs-\*.jsonl.gz files"):
        corpus_files("xx", {"dir": str(tmp_path)}, tmp_path / "cache")


@pytest.mark.parametrize("bad, where, says", [
    ({"docid": "300#0", "title": "Tupu", "text": ""}, "docs-1.jsonl.gz: 1 bad line of the 3 lines 1-3 read together: "
     "line 3 (docid '300#0'): empty text", None),
    ({"docid": "100#1", "title": "Mto Nile", "text": "Tena."}, "docs-1.jsonl.gz: line 3 (docid '100#1'): its docid "
     "repeats", "docs-0.jsonl.gz: line 2"),
])
def test_a_bad_row_in_a_shard_stops_with_the_shard_and_its_line(tmp_path, fake_hub, bad, where, says):
    snapshot, _ = fake_hub
    write_shards(snapshot, "sw", SHARD_0, [*SHARD_1, bad])
    out = tmp_path / "sw.parquet"
    with pytest.raises(DataError) as error:
        build_corpus({"source": "miracl", "miracl": None, "chunk_words": None}, "sw", out, tmp_path / "cache")
    assert where in str(error.value) and (says is None or says in str(error.value)), str(error.value)
    assert not out.exists()  # nothing half-written is left for the next job to read


def test_a_repeat_across_batches_is_found_and_every_one_counted(tmp_path):
    rows = [{"docid": f"d{i % 7}", "text": f"t{i}"} for i in range(10)]  # d0, d1, d2 come back in the next batches
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(DataError) as error:
        write_corpus_batches(lambda: jsonl_batches([path], size=4), tmp_path / "c.parquet", None)
    assert str(error.value).startswith("3 repeated docids: ")
    assert f"{path}: line 8 (docid 'd0'): its docid repeats {path}: line 1" in str(error.value)
    # chunks of two batches that collide: "a" cut into a#0, a#1 beside a document "a#1" in the next batch
    path.write_text(json.dumps({"docid": "a", "text": "w1 w2 w3 w4"}) + "\n" + json.dumps({"docid": "a#1", "text": "x"}))
    with pytest.raises(DataError, match="made 1 docids that repeat others, e.g. 'a#1'"):
        write_corpus_batches(lambda: jsonl_batches([path], size=1), tmp_path / "c.parquet", 2)


def test_a_written_corpus_equals_the_one_read_whole_and_its_parts_read_back(tmp_path, repo):
    documents = demo_corpus("en", repo / "resources" / "demo", repo / "resources" / "xquad")
    path = tmp_path / "en.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in documents.to_dict("records")))
    out = tmp_path / "en.parquet"
    written = write_corpus_batches(lambda: jsonl_batches([path], size=40), out, 100)
    whole = chunk_documents(read_corpus(path), 100)
    assert written == len(whole) == corpus_size(out) and pq.ParquetFile(out).num_row_groups > 3
    pd.testing.assert_frame_equal(pd.read_parquet(out), whole)
    for start, stop in [(0, 10), (35, 95), (len(whole) - 3, len(whole)), (7, 7)]:
        pd.testing.assert_frame_equal(read_corpus_rows(out, start, stop), whole.iloc[start:stop].reset_index(drop=True))
    picked = read_corpus_docids(out, ["xq0#1", whole.loc[3, "docid"], "not-there"])
    assert sorted(picked["docid"]) == sorted(["xq0#1", whole.loc[3, "docid"]])


def test_a_pooled_corpus_prefixes_each_docid_with_its_language(tmp_path, repo):
    paths = {}
    for lang in ("en", "de", "hi", "zh"):
        paths[lang] = tmp_path / f"{lang}.parquet"
        write_corpus(chunk_documents(demo_corpus(lang, repo / "resources" / "demo", repo / "resources" / "xquad")),
                     paths[lang])
    out = tmp_path / "pooled.parquet"
    assert pool_corpora(paths, out, size=50) == sum(corpus_size(p) for p in paths.values())
    pooled = read_corpus(out)  # checked: no docid twice, although the demo's languages share their docids
    sizes = {lang: corpus_size(path) for lang, path in paths.items()}
    assert [split_pooled_docid(d)[0] for d in pooled["docid"]] == [lang for lang, n in sizes.items() for _ in range(n)]
    english = pd.read_parquet(paths["en"])
    assert list(pooled["docid"][:sizes["en"]]) == [pooled_docid("en", d) for d in english["docid"]]
    assert list(pooled["text"][:sizes["en"]]) == list(english["text"])
    shared = set(english["docid"]) & set(pd.read_parquet(paths["hi"])["docid"])
    assert shared  # the demo is parallel: the same docid in every language, told apart by the prefix
    docid = sorted(shared)[0]
    # a pooled run as a Hindi question names it: its own language's passages as its labels do
    named, languages = question_docids([f"hi:{docid}", f"en:{docid}", "zh:x:1"], "hi", POOLED)
    assert named == [docid, f"en:{docid}", "zh:x:1"] and languages == ["hi", "en", "zh"]
    assert question_docids(["a:1"], "de", "en") == (["a:1"], ["en"])  # a language's own corpus: as it is
    with pytest.raises(DataError, match="not a pooled corpus's"):
        question_docids(["123"], "hi", POOLED)


def test_a_system_s_passages_from_a_pooled_run_name_their_languages():
    """top_passages (a retrieved system's passage file): the question's own passages lose the
    prefix, each passage names its language, which the generator's prompt then says."""
    from polyrag.retrieval.questions import top_passages
    from polyrag.retrieval.runs import make_run

    corpus = pd.DataFrame({"docid": ["hi:7", "en:7", "en:8"], "title": ["", "", ""], "text": ["सात", "seven", "eight"]})
    run = make_run(["q1"] * 3, ["hi:7", "en:7", "en:8"], [3.0, 2.0, 1.0])
    [row] = top_passages(run, corpus, [{"query_id": "q1"}], 2, "run.parquet", lang="hi", corpus_lang=POOLED)
    assert row["passages"] == [{"docid": "7", "title": "", "text": "सात", "language": "hi"},
                               {"docid": "en:7", "title": "", "text": "seven", "language": "en"}]
    english = corpus.assign(docid=["7", "8", "9"])
    [row] = top_passages(make_run(["q1"], ["8"], [1.0]), english, [{"query_id": "q1"}], 5, "run", lang="hi", corpus_lang="en")
    assert row["passages"] == [{"docid": "8", "title": "", "text": "seven", "language": "en"}]
