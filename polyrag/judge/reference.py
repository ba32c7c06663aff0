"""The offline ``reference`` judge for the demo and CI.

Each answer gets a score, a weighted sum of three parts in [0, 1]:
  similarity  cosine similarity of the answer to the reference answer (multilingual-e5-small;
              not computed, None, when its weight is 0),
  citation    share of its cited docids that are relevant, among those judged for the question
              (0 when it cites nothing; unknown when every citation names a passage nobody
              judged: the game is then decided without the citation part, for both answers),
  language    probability that it is written in the question's language: the answer's
              ``target_language`` as the deterministic features detected it (langid / lingua,
              ``features/language.py``), read from results/features/{model}/answer_languages.parquet;
              0 for an answer without a letter (no evidence of any language, a null feature).
Citations (of the passages each answer's system was given) are removed before the text parts
are computed. An answer's language is detected once,
by its features job, not again by each of the pairs it is in (19 at 20 models). The higher score wins when the
difference exceeds ``tie_margin``, otherwise the game is a tie. An answer that could not be
parsed loses to one that could; two such answers tie. The judge sees no model names and no
order, so both orders of a pair get the same verdict.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.answer_parsing import strip_citations
from polyrag.errors import DataError
from polyrag.features.embedding import embed
from polyrag.systems.passages import given_docids, given_passages, question_docids, split_by_relevance

#: The deterministic features' column the judge reads: the answer's probability of being in the
#: question's language (features.language.language_features decides it; null without a letter).
ANSWER_LANGUAGE = "target_language"


def write_answer_languages(rows: list[dict], path: str | Path) -> None:
    """Each answer's ``target_language`` in every language of one model (rows: ``lang``,
    ``query_id`` and the deterministic features), the file a judge reads."""
    schema = pa.schema([("lang", pa.string()), ("query_id", pa.string()), (ANSWER_LANGUAGE, pa.float64())])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([{name: row[name] for name in schema.names} for row in rows], schema=schema), path)


def with_answer_languages(answers: list[dict], languages_path: str, lang: str) -> list[dict]:
    """``answers`` (to the questions of language key ``lang``) with each one's ``target_language``
    from its model's answer-languages file (``write_answer_languages``)."""
    table = pq.read_table(languages_path, filters=[("lang", "=", lang)], columns=["query_id", ANSWER_LANGUAGE])
    languages = dict(zip(table.column("query_id").to_pylist(), table.column(ANSWER_LANGUAGE).to_pylist()))
    missing = [a["query_id"] for a in answers if a["query_id"] not in languages]
    if missing:
        raise DataError(f"{languages_path} has no row for questions {missing[:5]} in {lang}: rerun the deterministic features")
    return [{**a, ANSWER_LANGUAGE: languages[a["query_id"]]} for a in answers]


def language_part(answer: dict) -> float:
    if ANSWER_LANGUAGE not in answer:
        raise DataError(f"answer to {answer.get('query_id')}: the reference judge reads the answer's language from its "
                        "deterministic features (with_answer_languages), and this answer has none")
    value = answer[ANSWER_LANGUAGE]
    return 0.0 if value is None else value


def answer_scores(record: dict, answers: list[dict | None], weights: dict[str, float], embed=embed) -> list[dict | None]:
    """Score parts and total for each answer (None for an unparseable answer); ``embed`` may be
    an ``EmbeddingStore``."""
    texts = [strip_citations(a["answer"], given_docids(a, record)) if a and a["answer"] else None for a in answers]
    # A judge that gives similarity no weight (a cheap citation-and-language judge) embeds nothing
    # and reads no reference answer (the data may have none).
    vectors = None
    if weights["similarity"]:
        reference = strip_citations(record["reference_answer"], question_docids(record))
        vectors = embed([reference] + [t for t in texts if t is not None])
    scores, k = [], 1
    for answer, text in zip(answers, texts):
        if text is None:
            scores.append(None)
            continue
        parts = {
            "similarity": float(vectors[0] @ vectors[k]) if vectors is not None else None,
            "citation": citation_part(record, given_passages(answer, record), list(answer["cited_docids"])),
            "language": language_part(answer),
        }
        k += 1
        scores.append(parts)
    # An answer whose citations nobody judged has no citation part: the answers compared are then
    # scored on the other parts alike, none of them on a guess.
    unknown = any(parts is not None and parts["citation"] is None for parts in scores)
    for parts in scores:
        if parts is not None:
            parts["total"] = sum(weights[name] * parts[name] for name in ("similarity", "citation", "language")
                                 if weights[name] and not (name == "citation" and unknown))
    return scores


def citation_part(record: dict, given: list[dict], cited: list[str]) -> float | None:
    """The share of the cited docids (among the passages ``given`` to the answer's system) that are
    relevant among those judged for the question; 0 for an answer citing nothing, None when every
    citation is unjudged."""
    if not cited:
        return 0.0
    relevant, non_relevant, _ = split_by_relevance(record, given, cited)
    judged = len(relevant) + len(non_relevant)
    return len(relevant) / judged if judged else None


def reference_letter(first: dict | None, second: dict | None, tie_margin: float) -> str:
    """'A' if the first shown answer wins, 'B' if the second does, 'C' for a tie."""
    if first is None or second is None:
        return "C" if first is second else ("B" if first is None else "A")
    difference = first["total"] - second["total"]
    return "A" if difference > tie_margin else "B" if difference < -tie_margin else "C"
