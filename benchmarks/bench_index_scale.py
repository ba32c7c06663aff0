"""What the gathering job of a 33M-passage dense index costs, measured on one GPU node's cores
(docs/retrieval.md#the-dry-run-at-miracl-english-size): an IVF-PQ index of 1,024-dimensional vectors
(m=64, nbits=8) trained and filled: seconds, the arithmetic rate of its k-means and cell assignment
(what ``polyrag.retrieval.retrievers.GATHER_FLOPS`` assumes per thread), and the bytes it writes (to
set beside ``polyrag.retrieval.dense.INDEX_TYPES``' estimate). Needs faiss, not polyrag. The encoding
jobs' rate is ``benchmarks/bench_gpu.py``'s dense section (polyrag's own encoder on the GPU).

    python3 benchmarks/bench_index_scale.py --out result.json

Prints one JSON object (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path



def bench_faiss(dim: int, nlist: int, train: int, add: int, threads: int) -> dict:
    import faiss
    import numpy as np

    faiss.omp_set_num_threads(threads)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((256, dim)).astype(np.float32)

    def vectors(n: int) -> np.ndarray:
        x = centres[rng.integers(256, size=n)] + 0.7 * rng.standard_normal((n, dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    sample = vectors(train)
    index = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, nlist, 64, 8, faiss.METRIC_INNER_PRODUCT)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    index.train(sample)
    trained = time.perf_counter() - started
    del sample
    added = 0.0
    for start in range(0, add, 250_000):  # shard by shard, as gather_shards adds them
        part = vectors(min(250_000, add - start))
        started = time.perf_counter()
        index.add(part)
        added += time.perf_counter() - started
    written = len(faiss.serialize_index(index))
    iterations, pq_iterations = index.cp.niter, index.pq.cp.niter
    # k-means of the cells and of each sub-quantizer's codes, then each vector's cell and codes
    train_flops = 2 * dim * train * (nlist * iterations + 256 * pq_iterations)
    add_flops = 2 * dim * add * (nlist + 256)
    return {"dim": dim, "nlist": nlist, "m": 64, "nbits": 8, "train": train, "added": add, "threads": threads,
            "kmeans_iterations": iterations, "pq_kmeans_iterations": pq_iterations,
            "train_s": round(trained, 1), "add_s": round(added, 1),
            "train_gflops_per_thread": round(train_flops / trained / threads / 1e9, 1),
            "add_gflops_per_thread": round(add_flops / added / threads / 1e9, 1),
            "index_bytes_written": written,
            "peak_rss_mb_before_train": round(before / 1024), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "cpus": os.cpu_count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--nlist", type=int, default=2048)
    parser.add_argument("--train", type=int, default=102_400)
    parser.add_argument("--add", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {"faiss": bench_faiss(args.dim, args.nlist, args.train, args.add, args.threads)}
    print(json.dumps(result["faiss"]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
