"""Reranking a first stage's run with a cross-encoder (BERGEN's setting: the top 50 reranked, the
top 5 to the generator).

The cross-encoder is ``polyrag.features.reranker.Reranker`` (sentence-transformers
``CrossEncoder``, default ``BAAI/bge-reranker-v2-m3``), the one the ``reranker_score`` feature
uses. It reads the question and each passage's indexed text (``contents``: title and text, as the
first stage indexed it). The reranked run keeps only the first ``top_n`` passages of each question,
ranked by the cross-encoder's score (ties by docid), with ``first_stage_rank`` and
``first_stage_score`` beside.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from polyrag.errors import DataError
from polyrag.features.reranker import DEFAULT_RERANKER, Reranker
from polyrag.retrieval.runs import empty_run, make_run

TOP_N = 50


class CrossEncoderReranker:
    def __init__(self, model: str = DEFAULT_RERANKER, device: str = "auto", batch_size: int = 32, max_length: int = 512,
                 dtype: str = "float32"):
        self.model = model
        self.reranker = Reranker(model, device=device, batch_size=batch_size, max_length=max_length, dtype=dtype)

    def rerank(self, run: pd.DataFrame, queries: Mapping[str, str], texts: Mapping[str, str],
               top_n: int = TOP_N) -> pd.DataFrame:
        """``run``'s first ``top_n`` passages per question, scored again by the cross-encoder.
        ``queries``: ``{query_id: text}``; ``texts``: ``{docid: indexed text}``
        (``polyrag.retrieval.corpus.corpus_texts``)."""
        head = run[run["rank"] <= top_n]
        if head.empty:
            return empty_run().assign(first_stage_rank=pd.Series(dtype="int64"), first_stage_score=pd.Series(dtype=float))
        missing_queries = sorted(set(head["query_id"]) - set(queries))
        missing_texts = sorted(set(head["docid"]) - set(texts))
        if missing_queries or missing_texts:
            raise DataError(f"cannot rerank: {len(missing_queries)} queries of the run have no text "
                            f"({missing_queries[:5]}) and {len(missing_texts)} docids none ({missing_texts[:5]})")
        pairs = [(queries[q], texts[d]) for q, d in zip(head["query_id"], head["docid"])]
        scores = self.reranker.scores(pairs)
        return make_run(head["query_id"], head["docid"], scores,
                        first_stage_rank=head["rank"].to_numpy(), first_stage_score=head["score"].to_numpy())
