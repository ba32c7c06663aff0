"""The deterministic features of one model's answers in one language.

Every feature is computed on the answer with its citations removed. A feature whose inputs are
missing (no parsed answer, no reference answer, no relevance labels) is null, and the reason is
counted in the log; it is never 0.
"""

from __future__ import annotations

import logging
from collections import Counter


from polyrag.features.bergen import bergen_metrics
from polyrag.features.citations import citation_scores
from polyrag.features.language import language_features
from polyrag.features.overlap import answer_bleu, answer_rouge_l
from polyrag.generate.parsing import strip_citations
from polyrag.progress import progress

log = logging.getLogger(__name__)

LANGUAGE = ["target_language", "english_language", "correct_language"]
CITATION = ["citation_map@10", "citation_recall@10"]
REFERENCE = ["answer_bleu", "answer_rougeL", "match", "exact_match", "token_f1", "char3_recall"]
COLUMNS = LANGUAGE + CITATION + REFERENCE


def deterministic_features(records: list[dict], answers: list[dict]) -> list[dict]:
    """One row per question (``query_id`` + COLUMNS); ``records`` and ``answers`` in the same order."""
    missing: Counter = Counter()
    relevant = [r["relevant_docids"] if a["answer"] is not None else [] for r, a in zip(records, answers)]
    citations = citation_scores([list(a["cited_docids"]) for a in answers], relevant)
    rows = []
    for record, answer, cited in progress(zip(records, answers, citations), total=len(records), desc="features", unit="answer"):
        row = {"query_id": record["query_id"], **dict.fromkeys(COLUMNS)}
        if answer["answer"] is None:
            missing["no parsed answer (all features)"] += 1
            rows.append(row)
            continue
        docids = [p["docid"] for p in record["passages"]]
        text = strip_citations(answer["answer"], docids)
        row.update(language_features(text, record["language"]))
        if row["target_language"] is None:
            missing["answer without letters (language features)"] += 1
        elif row["correct_language"] is None:
            missing["answer of 20 characters or fewer (correct_language)"] += 1
        if record["relevant_docids"]:
            row.update(cited)
        else:
            missing["no relevance labels (citation features)"] += 1
        if record.get("reference_answer"):
            reference = strip_citations(record["reference_answer"], docids)
            row["answer_bleu"] = answer_bleu(text, reference, record["language"])
            row["answer_rougeL"] = answer_rouge_l(text, reference)
            row.update(bergen_metrics(text, reference))
        else:
            missing["no reference answer (reference features)"] += 1
        rows.append(row)
    for reason, count in sorted(missing.items()):
        log.info("%d of %d answers: null features because of %s", count, len(rows), reason)
    return rows
