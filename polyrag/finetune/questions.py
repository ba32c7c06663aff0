"""Training questions of the fine-tuning stage (``finetune.training``), one language at a time.

``source: demo`` reads ``{dir}/{lang}.jsonl`` in the demo format (``resources/demo-train``);
``source: miracl`` reads MIRACL's ``train`` split (MIRAGE-BENCH trains on it), passages trimmed like
the data stage's. Then a seeded subsample of ``questions_per_language`` questions, and at most
``distractors`` non-relevant passages per question (a seeded choice; null keeps all): fewer
passages make shorter training prompts, the main cost of training on CPU.

The Parquet layout is the data stage's plus ``reference_reason`` (the demo's written reasons, which
a mock teacher answers with; null elsewhere).

Every training example gets docids of its own (``with_fresh_docids``): the document part of each
docid is replaced by a seeded random number, never one of the evaluated questions' docids. A
student trained on the docids as written learnt their strings: it cited a training question's
relevant docid (``d1#1``) when that string named a distractor of an evaluated question.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.data.demo import load_demo
from polyrag.data.miracl import read_miracl
from polyrag.data.records import subsample, to_table
from polyrag.errors import DataError
from polyrag.seeds import rng_for

def with_distractors_capped(record: dict, distractors: int | None, seed: int) -> dict:
    """``record`` with every relevant passage and at most ``distractors`` non-relevant ones (a seeded
    choice), in their original order."""
    relevant = set(record["relevant_docids"])
    others = [i for i, p in enumerate(record["passages"]) if p["docid"] not in relevant]
    if distractors is None or len(others) <= distractors:
        return record
    chosen = set(rng_for(seed, "sft-distractor-choice", record["language"], record["query_id"])
                 .choice(others, size=distractors, replace=False).tolist())
    return {**record, "passages": [p for i, p in enumerate(record["passages"])
                                   if p["docid"] in relevant or i in chosen]}


def with_fresh_docids(record: dict, evaluated_docids: set[str], seed: int) -> dict:
    """``record`` with every docid's document part (before ``#``, digits after any letter prefix)
    replaced by a seeded random number, distinct within the record and from ``evaluated_docids``,
    in the passages, ``relevant_docids`` and the reference answer and reason."""
    rng = rng_for(seed, "sft-docids", record["language"], record["query_id"])
    renamed: dict[str, str] = {}
    for passage in record["passages"]:
        document, _, part = passage["docid"].partition("#")
        prefix = re.match(r"\D*", document).group()
        while True:
            fresh = f"{prefix}{rng.integers(100, 1_000_000)}" + (f"#{part}" if part else "")
            if fresh not in evaluated_docids and fresh not in renamed.values():
                break
        renamed[passage["docid"]] = fresh
    # One pass over the text, longest docid first, bounded so that d1#1 never matches inside d1#10.
    pattern = re.compile(r"(?<![\w#])(" + "|".join(map(re.escape, sorted(renamed, key=len, reverse=True))) + r")(?![\w#])")

    def rewrite(text: str | None) -> str | None:
        return None if text is None else pattern.sub(lambda match: renamed[match.group(1)], text)

    return {**record, "passages": [{**p, "docid": renamed[p["docid"]]} for p in record["passages"]],
            "relevant_docids": [renamed.get(d, d) for d in record["relevant_docids"]],
            "reference_answer": rewrite(record.get("reference_answer")),
            "reference_reason": rewrite(record.get("reference_reason"))}


def load_training_questions(training: dict, language: str, seed: int, cache_dir: str,
                            evaluated_docids: set[str] = frozenset()) -> list[dict]:
    """The training questions of one language (``training``: the validated ``finetune.training``),
    with docids of their own, none of ``evaluated_docids`` (``with_fresh_docids``)."""
    if training["source"] == "demo":
        records = load_demo(language, training["dir"])
    elif training["source"] == "miracl":
        from polyrag.text import truncate_tokens

        records = read_miracl(language, training["miracl"], training["dir"], cache_dir)
        records = [{**r, "passages": [{**p, "text": truncate_tokens(p["text"], training["miracl"]["max_passage_tokens"])}
                                      for p in r["passages"]]} for r in records]
    else:
        raise ValueError(f"finetune.training.source: unknown source {training['source']!r}")
    records = subsample(records, training["questions_per_language"], seed, "sft-questions", language)
    if not records:
        raise DataError(f"finetune.training: no training questions in {language!r} ({training['source']})")
    return [with_fresh_docids(with_distractors_capped(r, training["distractors"], seed), evaluated_docids, seed)
            for r in records]


def write_training_questions(records: list[dict], path: str | Path) -> None:
    table = to_table(records).append_column("reference_reason", pa.array([r.get("reference_reason") for r in records],
                                                                          pa.string()))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def read_training_questions(path: str | Path) -> list[dict]:
    return pq.read_table(path).to_pylist()
