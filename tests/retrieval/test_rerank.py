"""The cross-encoder reranker with a tiny BERT pair classifier built here (no download): it rescores
the first stage's top N, orders them by the model's own scores and keeps the first-stage rank."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from polyrag.errors import DataError
from polyrag.retrieval.bm25 import BM25Index
from polyrag.retrieval.corpus import corpus_texts
from tests.helpers.environment import TORCH_TEST_DEVICE

pytest.importorskip("sentence_transformers")

CORPUS = pd.DataFrame({
    "docid": ["1", "2", "3", "4", "5", "6"],
    "title": ["Niger", "Niger", "Guinea", "Mozart", "Salzburg", "Delta"],
    "text": ["The Niger River flows into the Gulf of Guinea .", "Der Niger mündet über ein großes Delta .",
             "The Gulf of Guinea is large .", "Mozart was born in Salzburg in 1756 .",
             "Salzburg was the River of Mozart .", "The large delta of the River ."],
})
QUERIES = {"q1": "The Niger River flows into the Gulf", "q2": "Mozart was born on the River Salzburg"}


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    from tests.helpers.tiny_models import sequence_classifier

    return sequence_classifier(tmp_path_factory.mktemp("cross-encoder") / "model", {0: "LABEL_0"})


def model_logits(path, pairs):
    """The classifier's logits computed with transformers alone, apart from the code under test."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        batch = tokenizer([q for q, _ in pairs], [p for _, p in pairs], padding=True, truncation=True, return_tensors="pt")
        return model(**batch).logits[:, 0].numpy()


def test_the_reranked_order_is_the_models_own_and_the_first_stage_rank_is_kept(model_path):
    from polyrag.retrieval.rerank import CrossEncoderReranker

    first = BM25Index.build(CORPUS, "en").search(QUERIES, k=5)
    texts = corpus_texts(CORPUS, first["docid"])
    reranked = CrossEncoderReranker(str(model_path), device=TORCH_TEST_DEVICE).rerank(first, QUERIES, texts, top_n=3)
    head = first[first["rank"] <= 3]
    assert sorted(zip(reranked["query_id"], reranked["docid"])) == sorted(zip(head["query_id"], head["docid"]))
    for query_id, rows in reranked.groupby("query_id"):
        mine = head[head["query_id"] == query_id]
        logits = model_logits(model_path, [(QUERIES[query_id], texts[d]) for d in mine["docid"]])
        expected = [d for _, d in sorted(zip(-logits, mine["docid"]))]
        assert list(rows["docid"]) == expected
        assert list(rows["rank"]) == [1, 2, 3] and len(mine) == 3
        first_rank = dict(zip(mine["docid"], mine["rank"]))
        assert list(rows["first_stage_rank"]) == [first_rank[d] for d in rows["docid"]]
        # CrossEncoder puts one logit through a sigmoid: the same order, scores in (0, 1).
        np.testing.assert_allclose(rows["score"], 1 / (1 + np.exp(-np.sort(logits)[::-1])), rtol=1e-4)
    assert reranked["first_stage_rank"].tolist() != reranked["rank"].tolist()  # the model did reorder


def test_a_run_naming_a_passage_without_text_is_refused(model_path):
    from polyrag.retrieval.rerank import CrossEncoderReranker

    first = BM25Index.build(CORPUS, "en").search(QUERIES, k=5)
    with pytest.raises(DataError, match="docids none"):
        CrossEncoderReranker(str(model_path), device=TORCH_TEST_DEVICE).rerank(first, QUERIES, {}, top_n=3)


def test_a_bfloat16_reranker_scores_as_the_float32_one_within_its_precision(model_path):
    """dtype: bfloat16 (retrieval.rerankers.X.dtype) runs the cross-encoder's weights in 16 bits;
    its scores come back as float32 numbers, within bfloat16's 8-bit mantissa of float32's."""
    from polyrag.retrieval.rerank import CrossEncoderReranker

    first = BM25Index.build(CORPUS, "en").search(QUERIES, k=5)
    texts = corpus_texts(CORPUS, first["docid"])
    full, half = (CrossEncoderReranker(str(model_path), device=TORCH_TEST_DEVICE, dtype=dtype) for dtype in ("float32", "bfloat16"))
    assert next(half.reranker.model.parameters()).dtype.__repr__() == "torch.bfloat16"
    pairs = [(QUERIES[q], texts[d]) for q, d in zip(first["query_id"], first["docid"])]
    np.testing.assert_allclose(half.reranker.scores(pairs), full.reranker.scores(pairs), atol=0.02)
    with pytest.raises(ValueError, match="float64.*not one of float32, bfloat16, float16"):
        CrossEncoderReranker(str(model_path), device=TORCH_TEST_DEVICE, dtype="float64")
