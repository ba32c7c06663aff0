"""What it costs on disk that an answers file carries the passages its system was given.

    .venv/bin/python benchmarks/bench_answer_passages.py [--xquad DIR] [--questions 150] [--passages 10]

MIRAGE-BENCH-like answers files: 150 questions x 10 passages of about 600 characters, and a cited
answer of two sentences per question. The passages are real Wikipedia text cut at 600 characters:
MEMERAG's passages (MIRACL's) and XQuAD's paragraphs of the language, from $POLYRAG_SHARED_DATA
(default ../shared/data beside the checkout), else resources/ (English and German, fewer passages).
Each passage is used once while the pool lasts (MIRAGE-BENCH's passages are mostly distinct across
questions: repeated text would compress and understate the cost); ``repeats`` counts the others.
Each file is written with the generation stage's own schema and writer (Snappy-compressed Parquet),
and again without the ``passages`` and ``passage_source`` columns (the answers schema before), beside
the question file (results/data/{lang}.parquet) that holds the same passages. Prints one row per
language: the three sizes in kB and the passages' share of the answers file.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.data.records import write_questions
from polyrag.generate.answers import SCHEMA, write_answers

REPO = Path(__file__).resolve().parent.parent


def passage_pool(lang: str, data: Path) -> list[tuple[str, str]]:
    """(title, text) of every distinct passage of at least 300 characters in ``lang``: MEMERAG's
    contexts and XQuAD's paragraphs, cut at 600 characters."""
    pool: dict[str, str] = {}
    memerag = data / "memerag" / f"{lang}.jsonl"
    if memerag.exists():
        for line in memerag.read_text(encoding="utf-8").splitlines():
            for context in json.loads(line)["context"]:
                pool.setdefault(context["text"][:600], "")
    xquad = data / "xquad" / f"xquad.{lang}.json"
    if xquad.exists():
        for article in json.loads(xquad.read_text(encoding="utf-8"))["data"]:
            for paragraph in article["paragraphs"]:
                pool.setdefault(paragraph["context"][:600], article["title"])
    return [(title, text) for text, title in pool.items() if len(text) >= 300]


def answers_and_questions(pool, lang: str, questions: int, passages: int, seed: int = 0):
    """Answer rows (the generation stage's) and question records over passages drawn in a seeded
    order, each once until the pool is used up; and the count of passages used again."""
    order = np.random.default_rng(seed).permutation(len(pool))
    rows, records = [], []
    for q in range(questions):
        picked = [int(order[(q * passages + k) % len(pool)]) for k in range(passages)]
        given = [{"docid": f"{k}#0", "title": pool[k][0], "text": pool[k][1]} for k in picked]
        cited = given[0]["docid"]
        answer = f"{given[0]['text'][:80]} [{cited}]. {given[1]['text'][:80]} [{given[1]['docid']}]."
        reason = f"{given[0]['text'][:200]} [{cited}]"
        rows.append({"query_id": f"{lang}-{q}", "raw_output": f"##Reason: {reason}\n\n##Answer: {answer}",
                     "reason": reason, "answer": answer, "cited_docids": [cited, given[1]["docid"]],
                     "error": None, "passages": given, "passage_source": "question"})
        records.append({"query_id": f"{lang}-{q}", "query": given[0]["text"][:60] + "?", "passages": given,
                        "relevant_docids": [cited], "reference_answer": given[0]["text"][:80], "language": lang,
                        "passage_language": lang})
    return rows, records, max(0, questions * passages - len(pool))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = Path(os.environ.get("POLYRAG_SHARED_DATA", REPO.parent / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=shared if (shared / "xquad").is_dir() else REPO / "resources",
                        help="a folder with memerag/{lang}.jsonl and xquad/xquad.{lang}.json")
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--passages", type=int, default=10)
    args = parser.parse_args()
    before = pa.schema([field for field in SCHEMA if field.name not in ("passages", "passage_source")])
    print(f"{args.questions} questions x {args.passages} passages of 300-600 characters from {args.data}")
    print(f"{'lang':5} {'chars/passage':>13} {'repeats':>7} {'answers kB':>10} {'before kB':>9} {'questions kB':>12} "
          f"{'passages kB':>11}")
    languages = sorted({p.name.split(".")[1] for p in (args.data / "xquad").glob("xquad.*.json")}
                       | {p.stem for p in (args.data / "memerag").glob("*.jsonl")})
    with tempfile.TemporaryDirectory() as folder:
        for lang in languages:
            rows, records, repeats = answers_and_questions(passage_pool(lang, args.data), lang, args.questions,
                                                           args.passages)
            answers, plain, data = (Path(folder) / f"{name}-{lang}.parquet" for name in ("answers", "before", "data"))
            write_answers(rows, answers)
            pq.write_table(pa.Table.from_pylist([{k: r[k] for k in before.names} for r in rows], schema=before), plain)
            write_questions(records, data)
            sizes = [p.stat().st_size / 1000 for p in (answers, plain, data)]
            chars = np.mean([len(p["text"]) for r in rows for p in r["passages"]])
            print(f"{lang:5} {chars:13.0f} {repeats:7d} {sizes[0]:10.1f} {sizes[1]:9.1f} {sizes[2]:12.1f} "
                  f"{sizes[0] - sizes[1]:11.1f}")


if __name__ == "__main__":
    main()
