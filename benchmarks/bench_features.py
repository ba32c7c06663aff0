"""Deterministic features per second, printed as a table.

Answers are built from the demo benchmark (all six languages): for each question, its reference
answer, a wrong-language answer, an answer citing a non-relevant passage and a refusal, cycled
until there are ``--answers`` of them (default 10,000).

    .venv/bin/python benchmarks/bench_features.py [--answers 10000]
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import pandas as pd

from polyrag.data.demo import load_demo
from polyrag.features.bergen import bergen_metrics
from polyrag.features.citations import citation_scores
from polyrag.features.deterministic import deterministic_features
from polyrag.features.language import language_features
from polyrag.features.overlap import answer_bleu, answer_rouge_l
from polyrag.generate.parsing import parse_citations

REPO = Path(__file__).resolve().parent.parent
LANGUAGES = ["en", "de", "es", "hi", "ar", "zh"]


def demo_answers(n: int) -> tuple[list[dict], list[dict]]:
    data = {lang: load_demo(lang, REPO / "resources" / "demo") for lang in LANGUAGES}
    variants = []
    for lang in LANGUAGES:
        other = data["en" if lang != "en" else "de"]
        for record, foreign in zip(data[lang], other):
            docids = [p["docid"] for p in record["passages"]]
            non_relevant = next(d for d in docids if d not in record["relevant_docids"])
            for text in (record["reference_answer"], foreign["reference_answer"],
                         record["reference_answer"].split("[")[0] + f"[{non_relevant}].", "—"):
                variants.append((record, {"query_id": record["query_id"], "answer": text,
                                          "cited_docids": parse_citations(text, docids)}))
    chosen = list(itertools.islice(itertools.cycle(variants), n))
    return [r for r, _ in chosen], [a for _, a in chosen]


def timed(label: str, n: int, function) -> dict:
    start = time.perf_counter()
    function()
    seconds = time.perf_counter() - start
    return {"features": label, "answers": n, "seconds": seconds, "answers/s": n / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=10_000)
    args = parser.parse_args()
    records, answers = demo_answers(args.answers)
    language_features("warm up the detector", "en")
    pairs = list(zip(records, answers))
    rows = [
        timed("language (langid)", len(pairs), lambda: [language_features(a["answer"], r["language"]) for r, a in pairs]),
        timed("citations (pytrec_eval)", len(pairs), lambda: citation_scores(
            [a["cited_docids"] for a in answers], [r["relevant_docids"] for r in records])),
        timed("answer_bleu (sacreBLEU)", len(pairs), lambda: [answer_bleu(a["answer"], r["reference_answer"], r["language"]) for r, a in pairs]),
        timed("answer_rougeL (rouge-score)", len(pairs), lambda: [answer_rouge_l(a["answer"], r["reference_answer"]) for r, a in pairs]),
        timed("BERGEN metrics", len(pairs), lambda: [bergen_metrics(a["answer"], r["reference_answer"]) for r, a in pairs]),
        timed("all deterministic features", len(pairs), lambda: deterministic_features(records, answers)),
    ]
    print(f"\nDeterministic features on {args.answers} demo answers (one process, one core)")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
