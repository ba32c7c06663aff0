"""What retrieval reads from the question records (``results/data/{lang}.parquet``): the query of
each question and its relevance labels, and what a system is given: its run's top passages.

Relevance labels (qrels) are the question's own: its relevant docids are relevant (1), its other
passages judged non-relevant (0; MIRACL's passages in a record are its judged ones, the demo's and
XQuAD's distractors are non-relevant by construction). Any other docid a retriever returns was
judged by nobody for the question: unjudged, reported as such (``metrics.unjudged_at_k``), never
counted as non-relevant by a label we do not have.
"""

from __future__ import annotations

import pandas as pd

from polyrag.errors import DataError
from polyrag.retrieval.corpus import question_docids
from polyrag.systems.passages import PARALLEL_DOCID, as_passage


def queries_of(records: list[dict]) -> dict[str, str]:
    """``{query_id: query}``: what each question searches with."""
    return {str(record["query_id"]): record["query"] for record in records}


def qrels_of(records: list[dict]) -> dict[str, dict[str, int]]:
    """``{query_id: {docid: 1 relevant, 0 judged non-relevant}}`` from the questions' passages."""
    qrels = {}
    for record in records:
        relevant = {str(docid) for docid in record["relevant_docids"]}
        judged = {str(p["docid"]): int(str(p["docid"]) in relevant) for p in record["passages"]}
        qrels[str(record["query_id"])] = judged | {docid: 1 for docid in relevant}
    return qrels


def top_passages(run: pd.DataFrame, corpus: pd.DataFrame, records: list[dict], top_k: int,
                 source: str, lang: str | None = None, corpus_lang: str | None = None,
                 parallel_docids: bool = False) -> list[dict]:
    """One row per question: ``query_id`` and ``passages``, the run's first ``top_k`` (docid, title,
    text), in rank order, the rows a passage file holds (``systems.answer_files``). A question the run
    retrieved nothing for is given no passages (and counted by the caller's log); a docid missing from
    the corpus stops, naming ``source``. A run over a pooled corpus (``corpus_lang`` pooled) gives
    the passages of the question's language ``lang`` without their prefix, as its labels name them
    (``corpus.question_docids``), so that citations and judges find them judged. With ``corpus_lang``
    each passage also names its ``language`` (the generator's prompt says what its passages are
    written in: the corpus's language, or each pooled passage's own). With ``parallel_docids`` (the
    corpus is the question data's parallel source, ``polyrag.config.data_files.parallel_docids``)
    each passage carries ``PARALLEL_DOCID``: its docid names the question's passage of that docid
    or its translation, which ``polyrag.systems.passages.judged_docids`` then judges by its labels."""
    head = run[run["rank"] <= top_k].sort_values(["query_id", "rank"])
    by_docid = corpus.set_index("docid")
    missing = sorted(set(head["docid"]) - set(by_docid.index))
    if missing:
        raise DataError(f"{source}: {len(missing)} docids of the run are not in its corpus: {missing[:5]}")
    ranked = head.groupby("query_id", sort=False)["docid"].agg(list).to_dict()
    rows = []
    for record in records:
        docids = ranked.get(str(record["query_id"]), [])
        named, languages = question_docids(docids, lang, corpus_lang) if corpus_lang is not None else (docids, None)
        passages = [as_passage({"docid": name, "title": by_docid.at[docid, "title"], "text": by_docid.at[docid, "text"]})
                    for docid, name in zip(docids, named)]
        if languages is not None:
            passages = [passage | {"language": language} for passage, language in zip(passages, languages)]
        if parallel_docids:
            passages = [passage | {PARALLEL_DOCID: True} for passage in passages]
        rows.append({"query_id": str(record["query_id"]), "passages": passages})
    return rows
