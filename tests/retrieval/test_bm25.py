"""BM25 (bm25s) against an independent implementation, rank_bm25, on a real corpus: the demo's.

Both are given the same tokens (polyrag's tokenizer) and the same k1, b. Where they differ:

- rank_bm25's ``BM25Okapi`` weighs a term ``idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``;
  bm25s (Lucene since version 8, and bm25s's ``lucene`` and ``robertson`` variants) leave out the
  constant factor ``k1 + 1``, which changes no ranking: scores are compared after multiplying
  bm25s's by ``k1 + 1``.
- IDF: ``BM25Okapi`` uses Robertson's ``log((N - df + 0.5) / (df + 0.5))``, negative for a term in
  more than half the passages, replaced by ``epsilon`` times the mean IDF. bm25s's ``robertson``
  floors it at 0 instead, which is ``BM25Okapi`` with ``epsilon=0``. Lucene's IDF
  (``log(1 + (N - df + 0.5) / (df + 0.5))``, polyrag's default) is not in rank_bm25: it is checked
  against ``BM25Okapi`` with only ``_calc_idf`` replaced by Lucene's formula (tf, lengths and the
  sum over query terms stay rank_bm25's own).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from rank_bm25 import BM25Okapi

from polyrag.errors import DataError
from polyrag.retrieval.bm25 import B, K1, BM25Index
from polyrag.retrieval.corpus import demo_corpus, indexed_texts
from polyrag.retrieval.runs import make_run


class LuceneOkapi(BM25Okapi):
    """rank_bm25's Okapi BM25 with Lucene's IDF."""

    def _calc_idf(self, nd):
        for word, df in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - df + 0.5) / (df + 0.5))


def reference_run(corpus, queries, tokenizer, method, k):
    tokens = [tokenizer(text) for text in indexed_texts(corpus)]
    if method == "lucene":
        model = LuceneOkapi(tokens, k1=K1, b=B)
    else:
        model = BM25Okapi(tokens, k1=K1, b=B, epsilon=0.0)
    query_ids, docids, scores = [], [], []
    for query_id, text in queries.items():
        score = model.get_scores(tokenizer(text)) / (K1 + 1)
        for i in np.flatnonzero(score > 0):
            query_ids.append(query_id)
            docids.append(corpus["docid"].iloc[i])
            scores.append(score[i])
    run = make_run(query_ids, docids, scores)
    return run[run["rank"] <= k].reset_index(drop=True)


def demo_queries(repo, language):
    lines = (repo / "resources" / "demo" / f"{language}.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["query_id"]: row["query"] for row in map(json.loads, lines)}


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_bm25s_ranks_and_scores_as_rank_bm25_does(repo, language, method):
    corpus = demo_corpus(language, repo / "resources" / "demo", repo / "resources" / "xquad")
    queries = demo_queries(repo, language)
    index = BM25Index.build(corpus, language, method=method)
    ours = index.search(queries, k=10)
    reference = reference_run(corpus, queries, index.tokenizer, method, k=10)
    assert len(reference) > 9 * len(queries)  # the comparison is not vacuous: ~10 passages per question
    assert list(ours["query_id"]) == list(reference["query_id"])
    assert list(ours["docid"]) == list(reference["docid"])
    np.testing.assert_allclose(ours["score"], reference["score"], rtol=1e-5)


def test_the_index_saved_and_loaded_searches_alike_and_keeps_string_docids(tmp_path, repo):
    corpus = demo_corpus("en", repo / "resources" / "demo", repo / "resources" / "xquad")
    corpus = corpus.assign(docid=[f"0{i}" for i in range(len(corpus))])  # "00", "01": strings that look like numbers
    queries = demo_queries(repo, "en")
    index = BM25Index.build(corpus, "en")
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.parameters == {"k1": K1, "b": B, "method": "lucene"}
    first, again = index.search(queries, k=20), loaded.search(queries, k=20)
    assert first.equals(again)
    assert first["docid"].str.startswith("0").all()


def test_a_truncated_index_file_is_named_with_its_folder_and_how_to_rebuild_it(tmp_path, repo):
    """A file cut short (a copy or a job stopped mid-write) stops the retrieve job with one line
    naming the index folder, the file and the command that rebuilds it (before: bm25s's "ValueError:
    Failed to read all data for array"); damage that keeps the size, or a folder saved without the
    size record, is named the same way."""
    folder = tmp_path / "results" / "bm25"
    BM25Index.build(demo_corpus("en", repo / "resources" / "demo"), "en").save(folder)
    data = folder / "data.csc.index.npy"
    whole = data.read_bytes()
    data.write_bytes(whole[:-8])
    with pytest.raises(DataError) as error:
        BM25Index.load(folder)
    assert str(error.value) == (f"{folder}: the BM25 index is damaged (data.csc.index.npy is {len(whole) - 8:,} bytes, "
                                f"saved as {len(whole):,}); rebuild it: snakemake --forcerun {folder} (with your target "
                                "and options), or delete the folder and rerun")
    (folder / "polyrag_files.json").unlink()  # as an index saved before the record: the library's error, named
    with pytest.raises(DataError, match=rf"^{folder}: the BM25 index is damaged \(ValueError: .+\); rebuild it: "
                                        rf"snakemake --forcerun {folder} "):
        BM25Index.load(folder)
    data.write_bytes(whole)
    assert len(BM25Index.load(folder).docids) > 0  # whole again: read as before


def test_only_passages_sharing_a_token_with_the_question_are_retrieved():
    import pandas as pd

    corpus = pd.DataFrame({"docid": ["1", "2", "3"], "title": ["", "", ""],
                           "text": ["rivers of Africa", "mountains of Asia", "deserts"]})
    run = BM25Index.build(corpus, "en").search({"q": "African rivers", "none": "volcano", "asia": "Asia"}, k=3)
    assert list(zip(run["query_id"], run["docid"])) == [("asia", "2"), ("q", "1")]


# --- streaming and shards (docs/retrieval.md#bm25-at-scale) ------------------------------------------

def one_shot_index(corpus, language, method):
    """bm25s's own one-shot index of the same tokens (polyrag's build before it streamed): every
    passage's token ids in Python lists, then ``BM25.index``."""
    import bm25s

    from polyrag.retrieval.tokenize import Tokenizer

    tokenizer, vocabulary = Tokenizer(language), {}
    ids = [[vocabulary.setdefault(t, len(vocabulary)) for t in tokenizer(text)] for text in indexed_texts(corpus)]
    retriever = bm25s.BM25(k1=K1, b=B, method=method)
    retriever.index((ids, vocabulary), show_progress=False)
    return retriever


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+"])
def test_the_streamed_index_is_bm25s_one_shot_index_array_for_array(repo, language, method):
    """Passages streamed 7 at a time, kept as token-id arrays, scored with bm25s's own functions:
    the score matrix, vocabulary and (bm25+) non-occurrence scores are bm25s's one-shot index's,
    bit for bit, and so is every question's top 10 (bm25s's own retrieval of all passages, ranked
    by make_run: score, then docid)."""
    from polyrag.retrieval.bm25 import frame_chunks

    corpus = demo_corpus(language, repo / "resources" / "demo", repo / "resources" / "xquad")
    reference = one_shot_index(corpus, language, method)
    index = BM25Index.build_chunks(frame_chunks(corpus, size=7), language, method=method)
    for key in ("data", "indices", "indptr"):
        assert index.retriever.scores[key].dtype == reference.scores[key].dtype
        assert np.array_equal(index.retriever.scores[key], reference.scores[key]), key
    assert list(index.retriever.vocab_dict.items()) == list(reference.vocab_dict.items())
    if method == "bm25+":
        assert np.array_equal(index.retriever.nonoccurrence_array, reference.nonoccurrence_array)
    queries = demo_queries(repo, language)
    vocabulary = reference.vocab_dict
    query_ids, docids, scores = [], [], []
    for query_id, text in queries.items():
        ids = [vocabulary[t] for t in index.tokenizer(text) if t in vocabulary]
        if ids:
            found = reference.retrieve([ids], k=len(corpus), show_progress=False)
            keep = found.scores[0] > 0
            query_ids += [query_id] * int(keep.sum())
            docids += list(corpus["docid"].to_numpy()[found.documents[0][keep]])
            scores += list(found.scores[0][keep])
    expected = make_run(query_ids, docids, scores)
    expected = expected[expected["rank"] <= 10].reset_index(drop=True)
    ours = index.search(queries, k=10)
    assert len(ours) > 9 * len(queries) * 0.9
    pd.testing.assert_frame_equal(ours, expected)


def test_a_corpus_file_streams_into_the_same_index_as_its_table(repo, tmp_path):
    from polyrag.retrieval.bm25 import file_chunks
    from polyrag.retrieval.corpus import chunk_documents, write_corpus

    corpus = chunk_documents(demo_corpus("en", repo / "resources" / "demo", repo / "resources" / "xquad"), words=20)
    write_corpus(corpus, tmp_path / "en.parquet")
    streamed = BM25Index.build_chunks(file_chunks(tmp_path / "en.parquet", size=13), "en")
    whole = BM25Index.build(corpus, "en")
    assert streamed.docids == whole.docids == list(corpus["docid"])
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(streamed.retriever.scores[key], whole.retriever.scores[key])
    # a slice of rows across row groups: exactly those rows, in order
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(corpus, preserve_index=False), tmp_path / "groups.parquet", row_group_size=50)
    rows = [docid for docids, _ in file_chunks(tmp_path / "groups.parquet", 37, 161, size=20) for docid in docids]
    assert rows == list(corpus["docid"][37:161])


def tied_corpus(repo):
    """A few thousand passages: the demo's English corpus and XQuAD's cut into 6-word chunks, every
    fifth passage again under another docid (equal scores: ties the docid breaks)."""
    from polyrag.retrieval.corpus import chunk_documents

    corpus = chunk_documents(demo_corpus("en", repo / "resources" / "demo", repo / "resources" / "xquad"), words=6)
    copies = corpus.iloc[::5].assign(docid=lambda c: "copy-" + c["docid"])
    return pd.concat([corpus, copies], ignore_index=True)


def test_shards_scored_with_the_corpus_statistics_merge_into_the_one_index_top_100(repo, tmp_path):
    """The corpus in 4 shards, each indexed with the document frequencies and average length
    gathered over the whole corpus first, searched apart and merged by score: every question's top
    100 (docids, order, scores) is the one index's, ties (the copies) broken by docid alike. Shards
    indexed with their own statistics score otherwise (the check can fail)."""
    from polyrag.retrieval.bm25 import ShardedBM25, Statistics, build_shard, file_chunks, make_tokenizer, shard_rows
    from polyrag.retrieval.corpus import write_corpus

    corpus = tied_corpus(repo)
    assert len(corpus) > 2000
    path = tmp_path / "en.parquet"
    write_corpus(corpus, path)
    statistics = Statistics.gather(file_chunks(path), make_tokenizer("en"))
    statistics.save(tmp_path / "statistics.parquet", make_tokenizer("en").settings())
    shards = 4
    for shard in range(shards):
        build_shard(path, tmp_path / "statistics.parquet", shard, shards).save(tmp_path / "shards" / str(shard))
    ShardedBM25.write(tmp_path / "bm25", [tmp_path / "shards" / str(shard) for shard in range(shards)])
    sharded = BM25Index.load(tmp_path / "bm25")
    assert isinstance(sharded, ShardedBM25)
    queries = {**demo_queries(repo, "en"), **{f"p{i}": text for i, text in enumerate(corpus["text"].iloc[::97])}}
    one = BM25Index.build(corpus, "en").search(queries, k=100)
    merged = sharded.search(queries, k=100)
    assert (one.groupby("query_id").size() == 100).mean() > 0.9  # full top 100s
    tied = one.duplicated(["query_id", "score"], keep=False)
    assert tied.sum() > 100  # the order among equal scores is tested too
    assert list(merged["query_id"]) == list(one["query_id"]) and list(merged["docid"]) == list(one["docid"])
    assert list(merged["rank"]) == list(one["rank"])
    np.testing.assert_allclose(merged["score"], one["score"], rtol=1e-6)
    # the same shards scored with their own statistics rank otherwise
    start, stop = shard_rows(len(corpus), 0, shards)
    alone = BM25Index.build(corpus.iloc[start:stop], "en").search(queries, k=100)
    own = merged[merged["docid"].isin(set(corpus["docid"].iloc[start:stop]))]
    joined = own.merge(alone, on=["query_id", "docid"], suffixes=("", "_alone"))
    assert not np.allclose(joined["score"], joined["score_alone"], rtol=1e-3)


def test_statistics_from_another_tokenizer_are_refused_naming_the_token(repo, tmp_path):
    from polyrag.retrieval.bm25 import Statistics, build_shard, file_chunks, make_tokenizer
    from polyrag.retrieval.corpus import write_corpus

    corpus = demo_corpus("en", repo / "resources" / "demo")
    write_corpus(corpus, tmp_path / "en.parquet")
    unstemmed = make_tokenizer("en", stem=False)
    statistics = Statistics.gather(file_chunks(tmp_path / "en.parquet"), unstemmed)
    statistics.save(tmp_path / "statistics.parquet", make_tokenizer("en").settings())  # settings that do not match
    with pytest.raises(DataError, match=r"token '.+' is not in the corpus statistics: .+ rebuild them"):
        build_shard(tmp_path / "en.parquet", tmp_path / "statistics.parquet", 0, 2)
