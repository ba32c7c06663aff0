"""Deterministic features per second, printed as a table.

Answers are built from the demo benchmark (all six languages): for each question, its reference
answer, a wrong-language answer, an answer citing a non-relevant passage and a refusal, cycled
until there are ``--answers`` of them (default 10,000).

With ``--mirage-python`` (``make bench-features`` passes ``.venv-mirage-bench/bin/python``), the
same answers are also scored by the reference package ``mirage-bench`` 0.0.4 in its own
environment (``mirage_bench_reference.py``), and the two are compared side by side: seconds per
feature group, the speed ratio, and per feature the share of answers whose values differ.
Demo docids (``d12#3``) are renamed to MIRACL's numeric form (``1012#3``) for both, because the
reference strips every character but digits and ``#`` from a citation.

    .venv/bin/python benchmarks/bench_features.py [--answers 10000] [--mirage-python PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from polyrag.answer_parsing import parse_citations
from polyrag.data.demo import load_demo
from polyrag.features.bergen import bergen_metrics
from polyrag.features.citations import citation_scores
from polyrag.features.deterministic import deterministic_features
from polyrag.features.language import language_features
from polyrag.features.overlap import answer_bleu, answer_rouge_l

REPO = Path(__file__).resolve().parent.parent
LANGUAGES = ["en", "de", "es", "hi", "ar", "zh"]


def numeric_docids(record: dict) -> dict:
    """The record with MIRACL-style docids (``d12#3`` -> ``1012#3``) in passages, labels and reference."""
    rename = lambda text: re.sub(r"\bd(\d+)#", lambda m: f"{1000 + int(m.group(1))}#", text)  # noqa: E731
    return {**record,
            "passages": [{**p, "docid": rename(p["docid"])} for p in record["passages"]],
            "relevant_docids": [rename(d) for d in record["relevant_docids"]],
            "reference_answer": rename(record["reference_answer"])}


def demo_answers(n: int) -> tuple[list[dict], list[dict]]:
    data = {lang: [numeric_docids(r) for r in load_demo(lang, REPO / "resources" / "demo")] for lang in LANGUAGES}
    variants = []
    for lang in LANGUAGES:
        other = data["en" if lang != "en" else "de"]
        for record, foreign in zip(data[lang], other):
            docids = [p["docid"] for p in record["passages"]]
            non_relevant = next(d for d in docids if d not in record["relevant_docids"])
            kinds = {"reference": record["reference_answer"], "other language": foreign["reference_answer"],
                     "non-relevant cited": record["reference_answer"].split("[")[0] + f"[{non_relevant}].",
                     "refusal": "—"}
            for kind, text in kinds.items():
                variants.append((record, {"query_id": record["query_id"], "answer": text, "kind": kind,
                                          "cited_docids": parse_citations(text, docids)}))
    chosen = list(itertools.islice(itertools.cycle(variants), n))
    return [r for r, _ in chosen], [a for _, a in chosen]


def timed(label: str, n: int, function) -> dict:
    start = time.perf_counter()
    function()
    seconds = time.perf_counter() - start
    return {"features": label, "answers": n, "seconds": seconds, "answers/s": n / seconds}


def run_reference(python: str, records: list[dict], answers: list[dict]) -> dict:
    """Score the answers with mirage-bench 0.0.4 in its own interpreter; values keyed by position."""
    items = [{"id": str(i), "language": r["language"], "prediction": "##Answer: " + a["answer"],
              "reference": "##Answer: " + r["reference_answer"],
              "documents": {p["docid"]: p["text"] for p in r["passages"]},
              "relevant_docids": r["relevant_docids"]} for i, (r, a) in enumerate(zip(records, answers))]
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "in.json", Path(tmp) / "out.json"
        source.write_text(json.dumps(items))
        script = REPO / "benchmarks" / "reference" / "mirage_bench_reference.py"
        done = subprocess.run([python, str(script), str(source), str(target)],
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"mirage-bench reference run failed:\n{done.stderr[-3000:]}")
        return json.loads(target.read_text())


def compare(ours: list[dict], records: list[dict], answers: list[dict], reference: dict, seconds: dict) -> pd.DataFrame:
    """Per feature: seconds on each side and the share of answers whose values differ (> 0.01)."""
    theirs = pd.DataFrame.from_dict(reference["values"], orient="index").sort_index(key=lambda i: i.astype(int))
    ours = pd.DataFrame(ours).fillna(0.0)  # the reference scores a missing value as 0
    languages = pd.Series([r["language"] for r in records])
    kinds = pd.Series([a["kind"] for a in answers])
    groups = {"target_language": "language", "english_language": "language", "citation_map@10": "citations",
              "citation_recall@10": "citations", "answer_rougeL": "answer_rougeL"}
    rows = []
    for feature, group in groups.items():
        ran = theirs[feature].notna().to_numpy() if feature in theirs else np.zeros(len(ours), bool)
        if not ran.any():
            continue
        mine, reference_values = ours[feature].to_numpy()[ran], theirs[feature].to_numpy()[ran].astype(float)
        differs = np.abs(mine - reference_values) > 0.01
        by_language = pd.Series(differs).groupby(languages[ran].to_numpy()).mean()
        by_kind = pd.Series(differs).groupby(kinds[ran].to_numpy()).mean()
        rows.append({"feature": feature, "polyrag s": seconds[group], "mirage-bench s": reference["seconds"][group],
                     "speed ratio": reference["seconds"][group] / seconds[group],
                     "answers": int(ran.sum()), "differ %": 100 * differs.mean(),
                     "differ % by language": " ".join(f"{k}:{100 * v:.0f}" for k, v in by_language.items()),
                     "differ % by answer kind": ", ".join(f"{k}:{100 * v:.0f}" for k, v in by_kind.items())})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=10_000)
    parser.add_argument("--mirage-python", help="interpreter of an environment with mirage-bench 0.0.4")
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
    if args.mirage_python:
        ours = deterministic_features(records, answers)
        reference = run_reference(args.mirage_python, records, answers)
        # The reference's ROUGE runs only for some languages: time ours on those same answers.
        scored = [(r, a) for i, (r, a) in enumerate(pairs) if "answer_rougeL" in reference["values"][str(i)]]
        rouge = timed("", len(scored), lambda: [answer_rouge_l(a["answer"], r["reference_answer"]) for r, a in scored])
        seconds = {"language": rows[0]["seconds"], "citations": rows[1]["seconds"], "answer_rougeL": rouge["seconds"]}
        print(f"\npolyrag against mirage-bench 0.0.4 on the same {args.answers} answers")
        print(compare(ours, records, answers, reference, seconds).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        print("\n".join(["", *reference["notes"]]))


if __name__ == "__main__":
    main()
