"""MEMERAG (Cruz Blandón et al., 2025): MIRACL questions, five passages, LLM answers split into
sentences with expert labels for faithfulness and relevance, in en, de, es, fr and hi.

Files are ``data/{variant}/{lang}.jsonl`` of github.com/amazon-science/MEMERAG, downloaded at a
pinned commit and cached, or read from a local directory (the same ``{variant}/{lang}.jsonl``
layout, or a flat ``{lang}.jsonl`` for the base variant). The language is the file name;
``query_id`` (an int in en, a string elsewhere) becomes a string. One row per answer sentence.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from polyrag.data.io import cached_download, read_jsonl
from polyrag.errors import DataError

MEMERAG_COMMIT = "bf8c052a209e971020975dc3634169cfa5f908f2"
MEMERAG_URL = "https://raw.githubusercontent.com/amazon-science/MEMERAG/{revision}/data/{variant}/{lang}.jsonl"
VARIANTS = ("memerag", "memerag_ext", "memerag_ext_w_majority_vote")
#: memerag_ext labels each sentence with a list of five annotations, which polyrag does not combine.
ANNOTATION_LIST_VARIANTS = ("memerag_ext",)
ONE_LABEL_HINT = "use the variant memerag_ext_w_majority_vote for one label per sentence"

FACTUALITY = {"Supported": 1, "Not Supported": 0, "Challenging to determine": None}
RELEVANCE = {"Directly answers the question": 1, "Adds context to the answer": 1, "Unrelated to the question": 0}
FINE_GRAINED = {None, "Direct paraphrase", "Logical conclusion", "Adds new information", "Contradiction",
                "Nuance shift", "Mis-referencing", "Wrong reasoning", "Opinion as fact", "Other mistake", "Other"}
COLUMNS = ["lang", "query_id", "query", "context", "sentence_id", "sentence", "factuality",
           "fine_grained_factuality", "relevance", "faithful", "relevant"]


def memerag_file(lang: str, variant: str, directory: str | None, cache_dir: str,
                 revision: str = MEMERAG_COMMIT) -> Path:
    """``{directory}/{variant}/{lang}.jsonl`` (the upstream layout), or ``{directory}/{lang}.jsonl``
    for the base variant only, so a flat copy of ``memerag`` is never read as another variant;
    without a directory, the pinned download."""
    if variant not in VARIANTS:
        raise DataError(f"unknown MEMERAG variant {variant!r} (one of {list(VARIANTS)})")
    if directory:
        nested, flat = Path(directory) / variant / f"{lang}.jsonl", Path(directory) / f"{lang}.jsonl"
        if nested.exists():
            return nested
        if variant == "memerag" and flat.exists():
            return flat
        if variant != "memerag":
            raise DataError(f"{directory}: no MEMERAG {variant} file for language {lang!r}: expected {nested} "
                            f"(a flat {flat.name} is read for the base variant memerag only)")
        raise DataError(f"{directory}: no MEMERAG memerag file for language {lang!r}: expected {nested} or {flat}")
    return cached_download(MEMERAG_URL.format(revision=revision, variant=variant, lang=lang), cache_dir,
                           local_key="meta_eval.dir or $POLYRAG_MEMERAG_DIR")


def read_memerag(path: str | Path, lang: str) -> pd.DataFrame:
    """Sentence rows of one language file, every field and label value checked."""
    rows = []
    for line_number, item in read_jsonl(path):
        where = f"{path}: line {line_number}"
        missing = [key for key in ("query_id", "query", "context", "answer") if key not in item]
        if missing:
            raise DataError(f"{where}: missing field {missing[0]!r}")
        context = [passage.get("text") if isinstance(passage, dict) else None for passage in item["context"]]
        if not context or any(not isinstance(text, str) for text in context):
            raise DataError(f"{where}: context must be a non-empty list of {{'text': ...}}")
        for sentence in item["answer"]:
            rows.append(sentence_row(sentence, item, context, lang, where))
    if not rows:
        raise DataError(f"{path}: no answer sentences")
    sentences = pd.DataFrame(rows, columns=COLUMNS)
    require_usable_labels(sentences, str(path))
    return sentences


def require_usable_labels(sentences: pd.DataFrame, where: str) -> None:
    """Stop at load time, naming the file, when a task would have no sentence to score: later
    steps only know the language."""
    for task, column, raw in (("faithfulness", "faithful", "factuality"), ("relevance", "relevant", "relevance")):
        if sentences[column].isna().all():
            values = sorted(sentences[raw].astype(str).unique())
            raise DataError(f"{where}: no sentence with a usable {task} label ({raw} values: {values})")


def sentence_row(sentence: dict, item: dict, context: list[str], lang: str, where: str) -> dict:
    for key in ("sentence_id", "sentence", "factuality", "relevance"):
        if key not in sentence:
            raise DataError(f"{where}: answer sentence without field {key!r}")
    for key, allowed in (("factuality", FACTUALITY), ("relevance", RELEVANCE),
                         ("fine_grained_factuality", FINE_GRAINED)):
        value = sentence.get(key)
        if isinstance(value, list):
            raise DataError(f"{where}: {key} is a list of annotations {value!r}; {ONE_LABEL_HINT}")
        if value not in allowed:
            raise DataError(f"{where}: unknown {key} value {value!r} (sentence {sentence['sentence_id']})")
    return {"lang": lang, "query_id": str(item["query_id"]), "query": item["query"], "context": context,
            "sentence_id": int(sentence["sentence_id"]), "sentence": sentence["sentence"],
            "factuality": sentence["factuality"], "fine_grained_factuality": sentence.get("fine_grained_factuality"),
            "relevance": sentence["relevance"], "faithful": FACTUALITY[sentence["factuality"]],
            "relevant": RELEVANCE[sentence["relevance"]]}


def sample_questions(sentences: pd.DataFrame, max_questions: int | None, rng) -> pd.DataFrame:
    """At most ``max_questions`` questions (seeded), each with all its sentences, in file order."""
    questions = sentences["query_id"].unique()
    if max_questions is None or max_questions >= len(questions):
        return sentences
    chosen = set(rng.choice(questions, size=max_questions, replace=False))
    return sentences[sentences["query_id"].isin(chosen)].reset_index(drop=True)


def task_rows(sentences: pd.DataFrame, task: str) -> pd.DataFrame:
    """The sentences scored for ``task`` (faithfulness or relevance) with their binary ``label``.

    Faithfulness leaves out sentences labelled ``Challenging to determine`` (counted by callers
    from the difference); a language with no usable sentence is an error."""
    column = {"faithfulness": "faithful", "relevance": "relevant"}[task]
    rows = sentences[sentences[column].notna()].assign(task=task, label=lambda d: d[column].astype(int))
    for lang in sentences["lang"].unique():
        if not (rows["lang"] == lang).any():
            raise DataError(f"MEMERAG {lang}: no sentence with a usable {task} label")
    return rows
