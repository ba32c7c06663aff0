"""The passages a system was given for a question, and what is known of a docid's relevance.

A system answers from the passages it was given: the generation stage records them in every answer
row (``passages``, ``passage_source``; docs/outputs.md), and every stage after it (features,
judges, style control, MARS, the human-label tasks) reads the answer's passages, never the
question's. What a system is given, a model entry's ``passages:``:

- ``question``: the question's passages, in their order (MIRAGE-BENCH's setting; the default);
- ``oracle``: only the relevant ones, in their order (the oracle baseline, the teacher's prompt);
- ``closed_book``: none (the closed-book baseline).

An answer records where its passages came from (``passage_source``, decided once for a model by
``polyrag.config.queries.passage_source``): one of the modes above, ``retrieved`` (a retrieved
system's, ``systems:``: its run's first top_k) or ``file`` (a user's own file). The relevance of a docid comes from the question's labels: the docids of the
question's passages are the judged ones (MIRACL's passages in a record are its judged passages; the
demo's and XQuAD's distractors are non-relevant by construction), ``relevant_docids`` the relevant
ones among them. A passage is judged where its docid is one of the question's passages' and either
its text is that passage's text (``passage_text_key``) or it carries ``parallel_docid``: polyrag's own
retrieval took it from a corpus built from the question data's parallel source (the demo's and
XQuAD's paragraphs, whose docid names the same paragraph in every language), so it is the judged
passage or its translation (an English datastore's answer to a German question,
``corpus_language: en``). Only rule system_passages writes that mark (``polyrag.retrieval.questions.top_passages``,
decided by ``polyrag.config.retrieval.parallel_docids``); a user's file cannot set it
(``polyrag.systems.answer_files`` refuses it), so a passage from a file is judged by its text. Any
other passage (a docid outside the question's passages, a file's judged docid with another text, a
MIRACL corpus's docid, which names another article in each language) was judged by nobody: it is
*unjudged* (``None``), never credited and never counted as non-relevant. ``judged_docids`` is the
one place this is decided: the features, the judges, style control and the passage_order check read it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from polyrag.errors import DataError

QUESTION, ORACLE, CLOSED_BOOK = "question", "oracle", "closed_book"
#: ``passage_source`` of passages read from a file: a system's answer file, or a model's ``passages: {file}``.
FILE = "file"
#: ``passage_source`` of a retrieved system's passages (``systems:``), though generation reads them from its passage file.
RETRIEVED = "retrieved"
#: A passage's mark that polyrag's own retrieval took it from a corpus of the question data's parallel
#: source: its docid is the data set's, the same paragraph in every language (``judged_docids``).
PARALLEL_DOCID = "parallel_docid"
#: What a model entry's ``passages:`` may say; the answer's ``passage_source`` is the same word.
PASSAGE_MODES = (QUESTION, ORACLE, CLOSED_BOOK)
DEFAULT_MODE = QUESTION


def as_passage(passage: Mapping[str, Any]) -> dict[str, str]:
    """``{docid, title, text}`` (title "" when missing), the layout of ``polyrag.data.records.PASSAGE``."""
    return {"docid": str(passage["docid"]), "title": passage.get("title") or "", "text": passage["text"]}


def passages_for(record: Mapping[str, Any], mode: str) -> list[dict[str, str]]:
    """The passages a system of ``mode`` is given for ``record``, in the order given."""
    passages = [as_passage(p) for p in record["passages"]]
    if mode == QUESTION:
        return passages
    if mode == ORACLE:
        relevant = set(record["relevant_docids"])
        return [p for p in passages if p["docid"] in relevant]
    if mode == CLOSED_BOOK:
        return []
    raise ValueError(f"unknown passages mode {mode!r} (one of {', '.join(PASSAGE_MODES)})")


def given_passages(answer: Mapping[str, Any], record: Mapping[str, Any]) -> list[dict[str, str]]:
    """The passages the system behind ``answer`` (a row of results/answers/{system}/{lang}) was given.

    An answer row without a ``passages`` field was written before answers recorded them, when every
    system was given its question's passages: those are then what it was given. A row whose field
    is null is broken (a closed-book answer has an empty list), and stops the stage. A passage
    keeps its ``PARALLEL_DOCID`` mark where it has one (what ``judged_docids`` reads)."""
    return [as_passage(p) | ({PARALLEL_DOCID: True} if p.get(PARALLEL_DOCID) is True else {})
            for p in recorded_passages(answer, record)]


def given_docids(answer: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    """The docids of ``given_passages``, in order: the citations the answer can make."""
    return [str(p["docid"]) for p in recorded_passages(answer, record)]


def recorded_passages(answer: Mapping[str, Any], record: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    if "passages" not in answer:
        return record["passages"]
    if answer["passages"] is None:
        raise DataError(f"the answer to question {answer.get('query_id')!r} has null passages (an answer "
                        "records the passages it was given, an empty list for none): rewrite its answers file")
    return answer["passages"]  # a pandas row holds a numpy array of dicts


def question_docids(record: Mapping[str, Any]) -> list[str]:
    """The docids of the question's own passages: what its reference answer cites."""
    return [str(p["docid"]) for p in record["passages"]]


def passage_text_key(text: str) -> str:
    """What two copies of one passage's text share: Unicode NFC, runs of whitespace as one space,
    no space at either end (a passage read back from another file, re-wrapped, is the same passage)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def judged_docids(record: Mapping[str, Any], given: Iterable[Mapping[str, Any]]) -> set[str]:
    """The docids of ``given`` (the passages a system was given) whose relevance to the question is
    known: a passage with the docid of one of the question's passages and either its text, or the
    ``PARALLEL_DOCID`` mark of polyrag's own retrieval from the data's parallel corpus (the judged
    passage or its translation). A file's passage that reuses a judged docid with another text is
    unjudged: its docid says nothing of what it says."""
    judged = {str(p["docid"]): passage_text_key(p["text"]) for p in record["passages"]}
    return {str(p["docid"]) for p in given if str(p["docid"]) in judged
            and (p.get(PARALLEL_DOCID) is True or judged[str(p["docid"])] == passage_text_key(p["text"]))}


def relevance(record: Mapping[str, Any], passage: Mapping[str, Any]) -> bool | None:
    """True: ``passage`` (docid, text, mark) is labelled relevant to the question; False: judged and
    not relevant; None: unjudged (``judged_docids``)."""
    if str(passage["docid"]) not in judged_docids(record, [passage]):
        return None
    return str(passage["docid"]) in set(record["relevant_docids"])


def split_by_relevance(record: Mapping[str, Any], given: Iterable[Mapping[str, Any]],
                       docids: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
    """``docids`` (e.g. an answer's citations, among the passages ``given`` to its system) as
    (relevant, non-relevant, unjudged), each in order."""
    relevant, judged = set(record["relevant_docids"]), judged_docids(record, given)
    parts: tuple[list[str], list[str], list[str]] = ([], [], [])
    for docid in docids:
        parts[2 if docid not in judged else 0 if docid in relevant else 1].append(docid)
    return parts


def judged_citations(record: Mapping[str, Any], given: Iterable[Mapping[str, Any]], cited: Iterable[str]) -> list[str]:
    """The cited docids whose relevance is known (``judged_docids`` of the passages ``given``), in
    order: what citation precision and recall are computed on (an unjudged citation is left out of
    both, and counted by ``unjudged_share``)."""
    judged = judged_docids(record, given)
    return [docid for docid in cited if docid in judged]


def unjudged_share(record: Mapping[str, Any], given: Iterable[Mapping[str, Any]], cited: Sequence[str]) -> float | None:
    """The share of ``cited`` that nobody judged for this question (``judged_docids``); None when
    nothing is cited."""
    if not cited:
        return None
    judged = judged_docids(record, given)
    return sum(docid not in judged for docid in cited) / len(cited)


def same_passages(first: Sequence[Mapping], second: Sequence[Mapping]) -> bool:
    """Whether two systems were given the same passages, in the same order."""
    return [as_passage(p) for p in first] == [as_passage(p) for p in second]


def passages_shown_to_compare(first: Sequence[Mapping], second: Sequence[Mapping]) -> list[dict] | None:
    """What a judge (or a person) comparing two answers reads when they were given different
    passages: the union, the first answer's passages then the second's others, each with ``given``
    (``"first"``, ``"second"`` or ``"both"``). None when both were given the same passages (the
    comparison then shows them once, as it always did)."""
    if same_passages(first, second):
        return None
    key = lambda p: (p["docid"], p["title"], p["text"])  # noqa: E731 - a docid with two texts is shown twice
    firsts = [as_passage(p) for p in first]
    seconds = [as_passage(p) for p in second]
    in_second = {key(p) for p in seconds}
    in_first = {key(p) for p in firsts}
    union = [{**p, "given": "both" if key(p) in in_second else "first"} for p in firsts]
    union += [{**p, "given": "second"} for p in seconds if key(p) not in in_first]
    return union
