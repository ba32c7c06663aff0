"""``reranker_score``: how well the passages an answer cites (of those its system was given) fit the
question, by a cross-encoder (default ``BAAI/bge-reranker-v2-m3`` through sentence-transformers),
averaged over the cited passages; null for an answer that cites nothing."""

from __future__ import annotations

from polyrag.systems.passages import given_passages
from polyrag.torch_runtime import to_precision

DEFAULT_RERANKER = "BAAI/bge-reranker-v2-m3"


class Reranker:
    """A sentence-transformers ``CrossEncoder`` in ``dtype`` (``torch_runtime.PRECISIONS``; its
    scores come back as float32 whatever it runs in)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 32, max_length: int = 512,
                 dtype: str = "float32"):
        from sentence_transformers import CrossEncoder

        self.model = to_precision(CrossEncoder(model, device=None if device == "auto" else device,
                                               max_length=max_length), dtype)
        self.batch_size = batch_size

    def scores(self, pairs: list[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        return [float(s) for s in self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)]


def reranker_features(reranker: Reranker, records: list[dict], answers: list[dict]) -> list[dict]:
    pairs, owners = [], []
    for k, (record, answer) in enumerate(zip(records, answers)):
        passages = {p["docid"]: p["text"] for p in given_passages(answer, record)}
        for docid in answer["cited_docids"] if answer["answer"] else []:
            pairs.append((record["query"], passages[docid]))
            owners.append(k)
    scores = reranker.scores(pairs)
    rows = [{"query_id": r["query_id"], "reranker_score": None} for r in records]
    for k in set(owners):
        mine = [scores[i] for i, owner in enumerate(owners) if owner == k]
        rows[k]["reranker_score"] = sum(mine) / len(mine)
    return rows
