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
