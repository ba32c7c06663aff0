"""The deterministic features of one model's answers in one language.

Every feature is computed on the answer with its citations removed (citations of the passages its
system was given). A feature whose inputs are missing (no parsed answer, no reference answer, no
relevance labels) is null, and the reason is counted in the log; it is never 0.

Citation features rank the answer's citations against the question's relevance labels. A cited
passage that nobody judged for the question (not among its passages: a retriever's or a file's; or
a judged docid given with another text, ``polyrag.systems.passages.judged_docids``) is left out of them, never counted as non-relevant; ``unjudged_citations`` is the share of the
answer's citations left out that way (null for an answer citing nothing), reported beside them
and not a feature of the surrogate judge (``polyrag.arena.surrogate.NOT_FEATURES``).
"""

from __future__ import annotations

import logging
from collections import Counter


from polyrag.answer_parsing import strip_citations
from polyrag.features.bergen import bergen_metrics
from polyrag.features.citations import citation_scores
from polyrag.features.language import language_features
from polyrag.features.overlap import answer_bleu, answer_rouge_l
from polyrag.progress import progress
from polyrag.systems.passages import given_docids, given_passages, judged_citations, question_docids, unjudged_share

log = logging.getLogger(__name__)

LANGUAGE = ["target_language", "english_language", "correct_language"]
CITATION = ["citation_map@10", "citation_recall@10"]
REFERENCE = ["answer_bleu", "answer_rougeL", "match", "exact_match", "token_f1", "char3_recall"]
UNJUDGED_CITATIONS = "unjudged_citations"
COLUMNS = LANGUAGE + CITATION + REFERENCE + [UNJUDGED_CITATIONS]


def deterministic_features(records: list[dict], answers: list[dict]) -> list[dict]:
    """One row per question (``query_id`` + COLUMNS); ``records`` and ``answers`` in the same order."""
    missing: Counter = Counter()
    relevant = [r["relevant_docids"] if a["answer"] is not None else [] for r, a in zip(records, answers)]
    given = [given_passages(a, r) for r, a in zip(records, answers)]
    citations = citation_scores([judged_citations(r, g, a["cited_docids"]) for r, g, a in zip(records, given, answers)],
                                relevant)
    rows, unjudged = [], Counter()
    for record, answer, passages, cited in progress(zip(records, answers, given, citations), total=len(records),
                                                    desc="features", unit="answer"):
        row = {"query_id": record["query_id"], **dict.fromkeys(COLUMNS)}
        if answer["answer"] is None:
            missing["no parsed answer (all features)"] += 1
            rows.append(row)
            continue
        text = strip_citations(answer["answer"], given_docids(answer, record))
        cited_docids = list(answer["cited_docids"])
        row[UNJUDGED_CITATIONS] = unjudged_share(record, passages, cited_docids)
        unjudged["cited"] += len(cited_docids)
        unjudged["unjudged"] += len(cited_docids) - len(judged_citations(record, passages, cited_docids))
        row.update(language_features(text, record["language"]))
        if row["target_language"] is None:
            missing["answer without letters (language features)"] += 1
        elif row["correct_language"] is None:
            missing["answer of 20 characters or fewer (correct_language)"] += 1
        if not record["relevant_docids"]:
            missing["no relevance labels (citation features)"] += 1
        elif row[UNJUDGED_CITATIONS] == 1.0:
            missing["every citation unjudged (citation features)"] += 1
        else:
            row.update(cited)
        if record.get("reference_answer"):
            reference = strip_citations(record["reference_answer"], question_docids(record))
            row["answer_bleu"] = answer_bleu(text, reference, record["language"])
            row["answer_rougeL"] = answer_rouge_l(text, reference)
            row.update(bergen_metrics(text, reference))
        else:
            missing["no reference answer (reference features)"] += 1
        rows.append(row)
    for reason, count in sorted(missing.items()):
        log.info("%d of %d answers: null features because of %s", count, len(rows), reason)
    if unjudged["unjudged"]:
        log.warning("%d of %d citations name a passage nobody judged for its question: left out of the citation "
                    "features (unjudged_citations)", unjudged["unjudged"], unjudged["cited"])
    return rows
