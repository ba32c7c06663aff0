"""BM25 over a corpus with ``bm25s``: built once per (corpus, language), or per shard of it, saved to
a folder, searched with the tokens of ``polyrag.retrieval.tokenize``.

Defaults are Pyserini's (and so BERGEN's BM25): ``k1=0.9, b=0.4`` and Lucene's scoring
(``method="lucene"``: IDF ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive; term weight
``tf / (tf + k1 (1 - b + b dl / avgdl))``). bm25s's other variants (``robertson``, ``atire``,
``bm25l``, ``bm25+``) are one parameter away.

Indexing streams (docs/retrieval.md#bm25-at-scale): passages are tokenized ``CHUNK`` at a time,
each chunk kept only as arrays of token ids and their counts per passage (the vocabulary grows as
passages stream, ids in order of first appearance), and the score matrix is assembled from those
arrays with bm25s's own IDF and term-weight functions, so that the index equals bm25s's one-shot
``BM25.index`` of the same tokens, array for array.

A corpus too large for one job is indexed in shards with the collection's statistics
(``Statistics``: the vocabulary, each token's document frequency, the passages and their total
length), gathered first in one streaming pass: each shard scores its passages with them, so a
passage's score is the one it has in the one index, and ``ShardedBM25`` merges the shards' runs by
score. Every search breaks ties by docid (``top_positions``), so the merged top k is the one
index's top k exactly.

A run lists a question's passages with a positive score only: a passage that shares no token with
the question is not retrieved (Lucene's behaviour). With ``bm25l`` or ``bm25+`` every passage
scores above zero, so every question gets ``k`` passages.

A pooled corpus (``language="pooled"``, docids ``{lang}:{docid}``) is one index whose passages are
each tokenized for their own language (their stemmer), and a question for its own; the IDF is the
pooled corpus's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.errors import DataError
from polyrag.progress import progress
from polyrag.retrieval.corpus import CONTENTS, POOLED, contents, indexed_texts, row_groups_spanning, split_pooled_docid
from polyrag.retrieval.index_files import check_files, reading, write_files
from polyrag.retrieval.runs import empty_run, make_run
from polyrag.retrieval.tokenize import Tokenizer, check_analysis

K1, B, METHOD = 0.9, 0.4, "lucene"
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
SETTINGS = "polyrag_bm25.json"
DOCIDS = "docids.json"
#: The file of a sharded index's folder that names its shards (folders beside it).
SHARDS = "polyrag_bm25_shards.json"
#: Passages tokenized at a time: their text is dropped once their token ids are arrays.
CHUNK = 10_000
#: Bytes read from a corpus file at a time.
READ_BUFFER = 1 << 20


class Tokenizers:
    """A tokenizer per language, made when first asked for, with the same settings."""

    def __init__(self, stem: bool, stopwords: bool):
        self.stem, self.stopwords, self.made = stem, stopwords, {}

    def __getitem__(self, language: str) -> Tokenizer:
        if language not in self.made:
            self.made[language] = Tokenizer(language, stem=self.stem, stopwords=self.stopwords)
        return self.made[language]

    def settings(self) -> dict:
        """As ``Tokenizer.settings``, with the analysis line of each language the index holds."""
        return {"language": POOLED, "stem": self.stem, "stopwords": self.stopwords,
                "analysis": {language: made.analysis for language, made in sorted(self.made.items())}}


def log_analysis(tokenizer: Tokenizer | Tokenizers) -> None:
    """Each indexed language's analysis in the job's log ("no analyzer" where a language has no rule:
    never a silent fallback)."""
    for made in tokenizer.made.values() if isinstance(tokenizer, Tokenizers) else [tokenizer]:
        logging.getLogger("polyrag").info("BM25 tokens: %s", made.analysis)


def make_tokenizer(language: str, stem: bool = True, stopwords: bool = False) -> Tokenizer | Tokenizers:
    """The tokenizer of an index over a corpus in ``language`` (``pooled``: each passage's own)."""
    return Tokenizers(stem, stopwords) if language == POOLED else Tokenizer(language, stem=stem, stopwords=stopwords)


def tokenizer_from(settings: dict) -> Tokenizer | Tokenizers:
    return make_tokenizer(settings["language"], settings["stem"], settings["stopwords"])


def passage_tokenizers(tokenizer: Tokenizer | Tokenizers, docids: list[str]) -> list[Tokenizer]:
    """The tokenizer of each passage: a pooled passage's language's, else the one."""
    if isinstance(tokenizer, Tokenizers):
        return [tokenizer[split_pooled_docid(docid)[0]] for docid in docids]
    return [tokenizer] * len(docids)


# --- streaming the corpus -------------------------------------------------------------------------

Chunk = tuple[list[str], list[str]]  # docids, indexed texts


def frame_chunks(corpus: pd.DataFrame, size: int = CHUNK) -> Iterator[Chunk]:
    """A corpus table's (docids, indexed texts) ``size`` passages at a time."""
    for start in range(0, len(corpus), size):
        part = corpus.iloc[start:start + size]
        yield [str(d) for d in part["docid"]], indexed_texts(part)


def file_chunks(path: str | Path, start: int = 0, stop: int | None = None, size: int = CHUNK) -> Iterator[Chunk]:
    """Rows ``[start, stop)`` of a corpus file written by the workflow (Parquet, with its ``contents``
    column), ``size`` at a time, read through a small buffer: the corpus never sits in memory (a whole
    row group read at once, or Arrow's pre-buffering, holds 0.1-0.2 GB more at its peak)."""
    parquet = pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER)
    stop = parquet.metadata.num_rows if stop is None else stop
    columns = ["docid", CONTENTS] if CONTENTS in parquet.schema_arrow.names else ["docid", "title", "text"]
    groups, offset = row_groups_spanning(parquet, start, stop)  # only the row groups the rows span are read
    if not groups:
        return
    for batch in parquet.iter_batches(batch_size=size, row_groups=groups, columns=columns):
        first, last = max(start - offset, 0), min(stop - offset, batch.num_rows)
        offset += batch.num_rows
        if last <= first:
            continue
        batch = batch.slice(first, last - first)
        docids = batch.column("docid").to_pylist()
        if CONTENTS in columns:
            texts = batch.column(CONTENTS).to_pylist()
        else:
            texts = [contents(title or "", text)
                     for title, text in zip(batch.column("title").to_pylist(), batch.column("text").to_pylist())]
        yield docids, texts


@dataclass
class ChunkTerms:
    """A chunk of passages as arrays: each passage's length in tokens and its distinct token ids
    (ascending) with their counts, passage after passage."""

    lengths: np.ndarray  # int64, one per passage
    distinct: np.ndarray  # int64, distinct tokens per passage
    terms: np.ndarray  # int32 token ids
    counts: np.ndarray  # int32 term frequencies


def chunk_terms(texts: list[str], tokenizers: list[Tokenizer], vocabulary: dict[str, int],
                grow: bool = True) -> ChunkTerms:
    """The token ids of ``texts``, each text tokenized by its tokenizer; a token not yet in
    ``vocabulary`` gets the next id (``grow``), or is refused (a vocabulary from statistics)."""
    tokens = [tokenize(text) for tokenize, text in zip(tokenizers, texts)]
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    codes, uniques = pd.factorize(np.fromiter(chain.from_iterable(tokens), dtype=object, count=int(lengths.sum())))
    if grow:  # first appearance order: the same ids, and index files, on every run
        ids = np.fromiter((vocabulary.setdefault(u, len(vocabulary)) for u in uniques), dtype=np.int64, count=len(uniques))
    else:
        ids = np.fromiter((vocabulary.get(u, -1) for u in uniques), dtype=np.int64, count=len(uniques))
        if len(ids) and ids.min() < 0:
            raise DataError(f"token {uniques[int(np.argmin(ids))]!r} is not in the corpus statistics: they were "
                            "gathered from another corpus or with other tokenizer settings; rebuild them")
    passage = np.repeat(np.arange(len(tokens), dtype=np.int64), lengths)
    keys, counts = np.unique((passage << 32) | ids[codes], return_counts=True)
    distinct = np.bincount(keys >> 32, minlength=len(tokens)).astype(np.int64)
    return ChunkTerms(lengths, distinct, (keys & 0xFFFFFFFF).astype(np.int32), counts.astype(np.int32))


def add_counts(total: np.ndarray, terms: np.ndarray, size: int) -> np.ndarray:
    """``total`` (document frequencies by token id) grown to ``size`` ids, plus ``terms``'s."""
    counts = np.bincount(terms, minlength=size)
    if len(total) < size:
        total = np.concatenate([total, np.zeros(size - len(total), dtype=np.int64)])
    total += counts
    return total


@dataclass
class Statistics:
    """What BM25's scores take from the whole collection: the vocabulary (token -> id, in order of
    first appearance), each token's document frequency, the passages and their total length in tokens."""

    vocabulary: dict[str, int]
    document_frequencies: np.ndarray
    passages: int
    total_length: int

    @property
    def average_length(self) -> np.float64:
        return np.float64(self.total_length) / self.passages  # as bm25s's mean of the lengths

    @classmethod
    def gather(cls, chunks: Iterable[Chunk], tokenizer: Tokenizer | Tokenizers, total: int | None = None) -> Statistics:
        """The statistics of a corpus streamed in chunks (one pass; only the vocabulary is kept)."""
        vocabulary: dict[str, int] = {}
        frequencies = np.zeros(0, dtype=np.int64)
        passages = total = 0
        bar = progress(total=total, desc="BM25 statistics", unit="passage")
        for docids, texts in chunks:
            terms = chunk_terms(texts, passage_tokenizers(tokenizer, docids), vocabulary)
            frequencies = add_counts(frequencies, terms.terms, len(vocabulary))
            passages, total = passages + len(docids), total + int(terms.lengths.sum())
            bar.update(len(docids))
        bar.close()
        if not passages:
            raise DataError("the corpus is empty: there is nothing to index")
        return cls(vocabulary, add_counts(frequencies, np.zeros(0, np.int32), len(vocabulary)), passages, total)

    def save(self, path: str | Path, settings: dict) -> None:
        table = pa.table({"token": list(self.vocabulary), "df": self.document_frequencies})
        meta = {"passages": self.passages, "total_length": self.total_length, "tokenizer": settings}
        table = table.replace_schema_metadata({"polyrag_bm25": json.dumps(meta)})
        pq.write_table(table, path)

    @classmethod
    def load(cls, path: str | Path) -> tuple[Statistics, dict]:
        """The statistics in ``path`` and the tokenizer settings they were gathered with."""
        with reading(path, "BM25 statistics"):
            table = pq.read_table(path)
            meta = json.loads(table.schema.metadata[b"polyrag_bm25"])
        tokens = table.column("token").to_pylist()
        statistics = cls({token: i for i, token in enumerate(tokens)}, table.column("df").to_numpy().astype(np.int64),
                         meta["passages"], meta["total_length"])
        return statistics, meta["tokenizer"]


# --- the score matrix -----------------------------------------------------------------------------

def score_matrix(retriever, parts: list[ChunkTerms], statistics: Statistics) -> dict:
    """bm25s's ``scores`` (a CSC matrix, passages x tokens) of the passages in ``parts``, scored with
    ``statistics`` through bm25s's own IDF and term-weight functions, as ``BM25.build_index_from_ids``
    builds it. ``parts`` is emptied as it is read: each chunk is freed once its scores are written."""
    import scipy.sparse as sp
    from bm25s.scoring import _build_idf_array, _build_nonoccurrence_array, _select_idf_scorer, _select_tfc_scorer

    frequencies = dict(enumerate(statistics.document_frequencies.tolist()))
    average = statistics.average_length
    idf = _build_idf_array(frequencies, statistics.passages, _select_idf_scorer(retriever.idf_method), retriever.dtype)
    nonoccurrence = None
    if retriever.method in retriever.methods_requiring_nonoccurrence:
        nonoccurrence = _build_nonoccurrence_array(
            frequencies, statistics.passages, _select_idf_scorer(retriever.idf_method),
            _select_tfc_scorer(retriever.method), average, average, retriever.k1, retriever.b, retriever.delta,
            retriever.dtype)
    retriever.nonoccurrence_array = nonoccurrence
    term_weight = _select_tfc_scorer(retriever.method)
    distinct = np.concatenate([part.distinct for part in parts])
    n_docs, n_vocab, entries = len(distinct), len(statistics.vocabulary), int(distinct.sum())
    index_dtype = np.int32 if max(entries, n_docs, n_vocab) < 2**31 else np.int64  # scipy keeps int32 indices then
    indptr = np.zeros(n_docs + 1, dtype=index_dtype)
    np.cumsum(distinct, out=indptr[1:])
    del distinct
    data, columns = np.empty(entries, dtype=retriever.dtype), np.empty(entries, dtype=index_dtype)
    start = 0
    while parts:
        part = parts.pop(0)
        stop = start + len(part.terms)
        lengths = np.repeat(part.lengths, part.distinct)
        weights = term_weight(tf_array=part.counts.astype(retriever.dtype), l_d=lengths, l_avg=average,
                              k1=retriever.k1, b=retriever.b, delta=retriever.delta)
        scores = idf[part.terms] * weights
        if nonoccurrence is not None:
            scores -= nonoccurrence[part.terms]
        data[start:stop], columns[start:stop] = scores, part.terms
        start = stop
        del part, lengths, weights, scores
        release_free_memory()
    by_passage = sp.csr_matrix((data, columns, indptr), shape=(n_docs, n_vocab), copy=False)
    del data, columns, indptr
    by_token = by_passage.tocsc()  # counting sort: passages ascending within each token, as bm25s orders them
    del by_passage
    return {"data": by_token.data.astype(retriever.dtype, copy=False),
            "indices": by_token.indices.astype(retriever.int_dtype, copy=False),
            "indptr": by_token.indptr.astype(np.int64, copy=False), "num_docs": n_docs}


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``). The chunks' arrays
    (a few MB each) live on the heap and the matrices that replace them are mapped apart, so without
    this the freed chunks and their text stay in the process's memory at its peak."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its allocator returns memory its own way
        pass


# --- an index -------------------------------------------------------------------------------------

def top_positions(scores: np.ndarray, k: int, docids: np.ndarray) -> np.ndarray:
    """The positions of the ``k`` highest positive ``scores``, highest first, equal scores by docid:
    the order of ``make_run``, so the top k of shards merged is the top k of one index."""
    positive = np.flatnonzero(scores > 0)
    if len(positive) > k:
        kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
        positive = positive[scores[positive] >= kth]  # every passage tied with the k-th: the docid decides
    order = sorted(positive.tolist(), key=lambda p: (-scores[p], docids[p]))
    return np.asarray(order[:k], dtype=np.int64)


class BM25Index:
    def __init__(self, retriever, docids: list[str], tokenizer: Tokenizer | Tokenizers):
        self.retriever, self.docids, self.tokenizer = retriever, docids, tokenizer

    @property
    def pooled(self) -> bool:
        return isinstance(self.tokenizer, Tokenizers)

    @classmethod
    def build(cls, corpus: pd.DataFrame, language: str, k1: float = K1, b: float = B, method: str = METHOD,
              stem: bool = True, stopwords: bool = False) -> BM25Index:
        """The index of ``corpus`` (``docid, title, text`` and optionally ``contents``: see
        ``polyrag.retrieval.corpus``), its passages tokenized for ``language``."""
        if len(corpus) == 0:
            raise DataError("the corpus is empty: there is nothing to index")
        return cls.build_chunks(frame_chunks(corpus), language, k1=k1, b=b, method=method, stem=stem, stopwords=stopwords,
                                total=len(corpus))

    @classmethod
    def build_chunks(cls, chunks: Iterable[Chunk], language: str, k1: float = K1, b: float = B, method: str = METHOD,
                     stem: bool = True, stopwords: bool = False, statistics: Statistics | None = None,
                     total: int | None = None) -> BM25Index:
        """The index of the passages streamed in ``chunks`` (``file_chunks``, ``frame_chunks``), scored
        with the collection's ``statistics`` (a shard's: ``Statistics.gather`` over the whole corpus,
        with the same tokenizer settings), else with their own; ``total``: the passages, for the progress line."""
        import bm25s

        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r} (one of {', '.join(METHODS)})")
        tokenizer = make_tokenizer(language, stem, stopwords)
        vocabulary = {} if statistics is None else statistics.vocabulary
        frequencies = np.zeros(0, dtype=np.int64)
        # docids as Arrow arrays while passages stream: small Python strings kept between each chunk's
        # texts and tokens would pin the memory those free (measured: +0.4 KB a passage)
        docid_chunks: list[pa.Array] = []
        parts: list[ChunkTerms] = []
        bar = progress(total=total, desc=f"BM25 tokens ({language})", unit="passage")
        for chunk_docids, texts in chunks:
            part = chunk_terms(texts, passage_tokenizers(tokenizer, chunk_docids), vocabulary, grow=statistics is None)
            if statistics is None:
                frequencies = add_counts(frequencies, part.terms, len(vocabulary))
            docid_chunks.append(pa.array([str(d) for d in chunk_docids], type=pa.string()))
            parts.append(part)
            bar.update(len(chunk_docids))
            del texts, chunk_docids
            release_free_memory()  # the chunk's text and temporaries, between the arrays kept
        bar.close()
        passages = sum(len(chunk) for chunk in docid_chunks)
        if not passages:
            raise DataError("the corpus is empty: there is nothing to index")
        if statistics is None:
            statistics = Statistics(vocabulary, add_counts(frequencies, np.zeros(0, np.int32), len(vocabulary)),
                                    passages, int(sum(int(p.lengths.sum()) for p in parts)))
        if not vocabulary:
            raise DataError("no passage of the corpus has a token: there is nothing to index")
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        retriever.scores = score_matrix(retriever, parts, statistics)
        # as BM25.index leaves it: the empty token after the others, for an empty query
        retriever.vocab_dict = {**vocabulary, "": len(vocabulary)} if "" not in vocabulary else dict(vocabulary)
        retriever.unique_token_ids_set = set(retriever.vocab_dict.values())
        docids = pa.chunked_array(docid_chunks, type=pa.string()).to_pylist()
        return cls(retriever, docids, tokenizer)

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.retriever.save(folder, show_progress=False)
        (folder / DOCIDS).write_text(json.dumps(self.docids, ensure_ascii=False), encoding="utf-8")
        (folder / SETTINGS).write_text(json.dumps(self.settings(), indent=1) + "\n", encoding="utf-8")
        write_files(folder)  # last: the folder is whole

    def settings(self) -> dict:
        return self.tokenizer.settings()

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = False) -> BM25Index | ShardedBM25:
        """The index saved in ``folder`` (a sharded one: ``ShardedBM25``); a damaged one (a file
        missing, truncated or unreadable) stops with one line naming the folder and how to rebuild it."""
        import bm25s

        folder = Path(folder)
        if (folder / SHARDS).exists():
            return ShardedBM25.load(folder)
        if not (folder / SETTINGS).exists():
            raise DataError(f"{folder}: not a BM25 index written by polyrag (no {SETTINGS})")
        check_files(folder, "BM25")
        with reading(folder, "BM25"):
            settings = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
            retriever = bm25s.BM25.load(folder, mmap=mmap, show_progress=False, verbosity=0)
            docids = json.loads((folder / DOCIDS).read_text(encoding="utf-8"))
        if len(docids) != retriever.scores["num_docs"]:
            raise DataError(f"{folder}: {len(docids)} docids for an index of {retriever.scores['num_docs']} passages")
        tokenizer = tokenizer_from(settings)
        check_analysis(folder, settings, tokenizer)
        return cls(retriever, docids, tokenizer)

    @property
    def parameters(self) -> dict:
        return {"k1": self.retriever.k1, "b": self.retriever.b, "method": self.retriever.method}

    def search(self, queries: Mapping[str, str], k: int = 100, language: str | None = None) -> pd.DataFrame:
        """The top ``k`` passages of each query (``{query_id: text}``) as a run, equal scores by
        docid. A pooled index tokenizes the queries for their ``language`` (required there)."""
        if not queries:
            return empty_run()
        if self.pooled and language is None:
            raise ValueError("a pooled BM25 index tokenizes a question for its language: pass language")
        tokenizer = self.tokenizer[language] if self.pooled else self.tokenizer
        vocabulary = self.retriever.vocab_dict
        docids = np.asarray(self.docids, dtype=object)
        query_ids, found, scores = [], [], []
        for query_id, text in queries.items():
            # token ids of the corpus's tokens only: a query with none retrieves nothing (every score 0)
            ids = [vocabulary[t] for t in tokenizer(text) if t in vocabulary]
            if not ids:
                continue
            passage_scores = self.retriever.get_scores_from_ids(ids)
            top = top_positions(passage_scores, k, docids)
            query_ids += [str(query_id)] * len(top)
            found.append(docids[top])
            scores.append(passage_scores[top].astype(np.float64))
        if not query_ids:
            return empty_run()
        return make_run(query_ids, np.concatenate(found), np.concatenate(scores))


class ShardedBM25:
    """A BM25 index in shards scored with the whole corpus's statistics: each shard searched in turn
    (one in memory at a time), their runs merged by score, equal scores by docid."""

    def __init__(self, folders: list[Path]):
        self.folders = folders

    @classmethod
    def load(cls, folder: str | Path) -> ShardedBM25:
        folder = Path(folder)
        with reading(folder, "BM25"):
            names = json.loads((folder / SHARDS).read_text(encoding="utf-8"))["shards"]
        folders = [(folder / name).resolve() for name in names]
        missing = [str(f) for f in folders if not (f / SETTINGS).exists()]
        if missing:
            raise DataError(f"{folder}: its BM25 shard {missing[0]} is missing; rebuild it: snakemake --forcerun "
                            f"{folder} (with your target and options)")
        return cls(folders)

    @staticmethod
    def write(folder: str | Path, shards: list[str | Path]) -> None:
        """The sharded index in ``folder``: the shard folders' paths relative to it."""
        import os

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        names = [os.path.relpath(Path(shard).resolve(), folder.resolve()) for shard in shards]
        (folder / SHARDS).write_text(json.dumps({"shards": names}, indent=1) + "\n", encoding="utf-8")

    def search(self, queries: Mapping[str, str], k: int = 100, language: str | None = None) -> pd.DataFrame:
        runs = [BM25Index.load(shard, mmap=True).search(queries, k=k, language=language) for shard in self.folders]
        merged = make_run(*(pd.concat(runs)[column] for column in ("query_id", "docid", "score")))
        return merged[merged["rank"] <= k].reset_index(drop=True)


def build_shard(corpus: str | Path, statistics_path: str | Path, shard: int, shards: int, k1: float = K1,
                b: float = B, method: str = METHOD) -> BM25Index:
    """Shard ``shard`` of ``shards`` of a corpus file (its rows split evenly in order), scored with the
    whole corpus's statistics, tokenized with their settings."""
    statistics, settings = Statistics.load(statistics_path)
    start, stop = shard_rows(statistics.passages, shard, shards)
    return BM25Index.build_chunks(file_chunks(corpus, start, stop), settings["language"], k1=k1, b=b, method=method,
                                  stem=settings["stem"], stopwords=settings["stopwords"], statistics=statistics,
                                  total=stop - start)


def shard_rows(passages: int, shard: int, shards: int) -> tuple[int, int]:
    """The rows ``[start, stop)`` of shard ``shard`` of ``shards`` over ``passages`` rows."""
    size = -(-passages // shards)
    return min(shard * size, passages), min((shard + 1) * size, passages)
