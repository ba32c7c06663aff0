"""Training questions of the fine-tuning stage (``finetune.training``), one language at a time.

``source: demo`` reads ``{dir}/{lang}.jsonl`` in the demo format (``resources/demo-train``);
``source: miracl`` reads MIRACL's ``train`` split (MIRAGE-BENCH trains on it), passages trimmed like
the data stage's. Then a seeded subsample of ``questions_per_language`` questions, and at most
``distractors`` non-relevant passages per question (a seeded choice; null keeps all): fewer
passages make shorter training prompts, the main cost of training on CPU.

The Parquet layout is the data stage's plus ``reference_reason`` (the demo's written reasons, which
a mock teacher answers with; null elsewhere).
"""

from __future__ import annotations

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


def load_training_questions(training: dict, language: str, seed: int, cache_dir: str) -> list[dict]:
    """The training questions of one language (``training``: the validated ``finetune.training``)."""
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
    return [with_distractors_capped(r, training["distractors"], seed) for r in records]


def write_training_questions(records: list[dict], path: str | Path) -> None:
    table = to_table(records).append_column("reference_reason", pa.array([r.get("reference_reason") for r in records],
                                                                          pa.string()))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def read_training_questions(path: str | Path) -> list[dict]:
    return pq.read_table(path).to_pylist()
