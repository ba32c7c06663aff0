"""Citation quality: the cited docids, in order of first citation, ranked against the question's
relevance labels with ``pytrec_eval`` (MAP@10 and Recall@10, as MIRAGE-BENCH reports them)."""

from __future__ import annotations

import pytrec_eval

MEASURES = {"map_cut.10": "citation_map@10", "recall.10": "citation_recall@10"}


def citation_scores(cited: list[list[str]], relevant: list[list[str]]) -> list[dict[str, float | None]]:
    """Per answer; None where the question has no relevant docid (nothing to score against)."""
    qrels = {str(i): {d: 1 for d in rel} for i, rel in enumerate(relevant) if rel}
    # An answer citing nothing still gets its scores (0), so every judged question is in the run.
    run = {str(i): ({d: float(len(c) - k) for k, d in enumerate(c)} or {"__none__": 0.0})
           for i, c in enumerate(cited) if str(i) in qrels}
    results = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run) if qrels else {}
    out = []
    for i in range(len(cited)):
        scores = results.get(str(i))
        out.append({name: (None if scores is None else scores[key.replace(".", "_")]) for key, name in MEASURES.items()})
    return out
