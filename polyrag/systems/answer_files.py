"""A RAG system whose outputs come from files (``backend: file``): the answers a user's own system
gave, read and checked instead of asking a language model, then featured, judged, scored and ranked
like any system's (docs/systems.md).

Per language key one JSONL or Parquet file (by its extension), one row per question:

- ``query_id``: the question's id in ``results/data/{lang}.parquet`` (text; a whole number is read
  as its digits, so an id with a leading zero must be written as text);
- ``answer``: the answer text, citations as ``[docid]`` markers; at least one visible character
  (a zero-width or no-break space is none) and at most ``max_answer_chars`` characters;
- the passages the system was given: ``passages`` (a list of ``{docid, title, text}``) or
  ``docids`` (a list of docids, looked up in the model's ``corpus`` file when it declares one, else
  among the question's own passages); an empty list is a closed-book system; at most
  ``max_passages`` of them; every docid is one ``polyrag.docids`` accepts (no whitespace, brackets,
  commas or semicolons: citation syntax);
- optional: ``cited_docids`` (else parsed from the answer's markers), ``raw_output`` (else the
  answer), ``reason``.

Every problem stops the generation job, before any judging, with one ``DataError`` naming the file
and the row (``line N`` of a JSONL file, 1-based; ``row N`` of a Parquet file) and, where it helps,
the config key that would accept it. Questions the file does not answer are refused
(``missing: refuse``, the default) or counted as unanswered (``missing: unanswered``): an answer row
with ``error`` set and no answer, which the arena and MARS treat as a model's failed answer (it loses
every game against an answer and scores 0 on MARS's answer-based metrics), so that a system cannot
improve its rank by leaving out the questions it would answer badly. Rows for questions the data
stage did not select are refused (``unknown: refuse``) or skipped (``unknown: ignore``: a file that
answers every question of a benchmark of which the config selects a sample, ``data.max_questions``);
a row whose id is an unanswered question's id written another way (``10`` for ``"0010"``) is refused
either way, naming the question it likely means.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import pyarrow.parquet as pq

from polyrag.answer_parsing import has_visible_text, parse_citations
from polyrag.data.io import read_jsonl
from polyrag.docids import checked_docid
from polyrag.errors import DataError
from polyrag.llm.backends import LLM_BACKENDS
from polyrag.systems.passages import PARALLEL_DOCID

log = logging.getLogger(__name__)

#: The placeholder of a language key in the ``answers`` and ``corpus`` path patterns.
LANG = "{lang}"
#: File types a system's answers and corpus can come in, by extension.
SUFFIXES = (".jsonl", ".parquet")
#: The fields of an answer row polyrag reads; others are ignored (and named once in the log).
ROW_FIELDS = ("query_id", "answer", "passages", "docids", "cited_docids", "raw_output", "reason")
#: ``passage_source`` of a file system's answers: its passages are those its file gave.
PASSAGE_SOURCE = "file"
#: How many ids a message lists before it says "and N more".
SHOWN = 5


def reads_answer_files(entry: Mapping) -> bool:
    """Whether a ``models:`` entry is a system read from files (its backend is no language model)."""
    return not LLM_BACKENDS[entry["backend"]].language_model


def language_path(pattern: str, lang: str) -> str:
    """The file of language key ``lang``: ``pattern`` with ``{lang}`` replaced (no other brace is read)."""
    return pattern.replace(LANG, lang)


def answer_paths(entry: Mapping, languages: list[str]) -> list[str]:
    """The answer file of each language key, in the order of ``languages``."""
    return [language_path(entry["answers"], lang) for lang in languages]


def corpus_paths(entry: Mapping, languages: list[str]) -> list[str]:
    """The corpus files the system's ``docids`` resolve in (one for all languages, or one per
    language when the pattern has ``{lang}``); none without ``corpus``."""
    if not entry.get("corpus"):
        return []
    return list(dict.fromkeys(language_path(entry["corpus"], lang) for lang in languages))


def system_files(entry: Mapping, languages: list[str]) -> list[str]:
    """Every local file a file system's generation job reads: its inputs, so that editing one
    reruns the job and what depends on its answers."""
    return answer_paths(entry, languages) + corpus_paths(entry, languages)


def passage_file_spec(entry: Mapping) -> Mapping | None:
    """A language model's ``passages: {file, corpus}`` (the passages it is given come from a file,
    e.g. a retrieval run of the user's own), else None."""
    spec = entry.get("passages")
    return spec if isinstance(spec, Mapping) else None


def passage_file_paths(entry: Mapping, languages: list[str]) -> list[str]:
    """The passage files (and their corpus) of a language model given its passages from files: the
    inputs of its generation job."""
    spec = passage_file_spec(entry)
    if spec is None:
        return []
    corpus = list(dict.fromkeys(language_path(spec["corpus"], lang) for lang in languages)) if spec.get("corpus") else []
    return [language_path(spec["file"], lang) for lang in languages] + corpus


def _listed(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return f"{ids[:SHOWN]}{more}"


def read_rows(path: str | Path) -> list[tuple[str, object]]:
    """``(position, row)`` of every row of a JSONL or Parquet file: ``line 3`` of a JSONL file (blank
    lines skipped but counted, as an editor counts them), ``row 3`` of a Parquet file (1-based)."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise DataError(f"{path}: unknown file type {path.suffix!r}; a system's file is JSONL (.jsonl) or "
                        "Parquet (.parquet)")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if path.suffix == ".jsonl":
        return [(f"line {number}", row) for number, row in read_jsonl(path)]
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as error:  # pyarrow raises several types for a file that is not Parquet
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    return [(f"row {number}", row) for number, row in enumerate(rows, start=1)]


def _text_id(value: object, where: str, field: str) -> str:
    """An id as text: a string, or a whole number written as its digits (JSON and Parquet can
    hold either); anything else (a float, a bool, a list) is refused."""
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise DataError(f"{where}: {field} must be a non-empty text, got {value!r}")


def _passage(value: object, where: str, retrieved: bool = False) -> dict:
    """A ``{docid, title, text}`` passage, with its ``language`` (a language code) where the row
    gives one: the generator's prompt then says what its passages are written in (a cross-lingual
    system's). ``where`` names it (a row's passage, or a corpus row). ``PARALLEL_DOCID`` is kept
    only in a retrieved system's passage file (``retrieved``: written by rule system_passages); a
    user's file that sets it is refused, so that a file cannot claim a judged passage's labels for
    another text (``polyrag.systems.passages.judged_docids``)."""
    if not isinstance(value, Mapping):
        raise DataError(f"{where}: expected an object with docid, title and text, got {type(value).__name__}")
    docid = checked_docid(value.get("docid"), where)
    mark = {PARALLEL_DOCID: True} if retrieved and value.get(PARALLEL_DOCID) is True else {}
    if not retrieved and value.get(PARALLEL_DOCID) is not None:
        raise DataError(f"{where} ({docid}): {PARALLEL_DOCID} is polyrag's own mark on the passages its retrieval "
                        "takes from the question data's parallel corpus, not a field of a user's file; remove it "
                        "(a file's passage is judged by the question's labels where its docid and text are the "
                        "judged passage's)")
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where} ({docid}): no text")
    title = value.get("title")
    if title is not None and not isinstance(title, str):
        raise DataError(f"{where} ({docid}): title must be a text, got {title!r}")
    language = value.get("language")
    if language is None:
        return {"docid": docid, "title": title or "", "text": text, **mark}
    if not isinstance(language, str) or not language.strip():
        raise DataError(f"{where} ({docid}): language must be a language code (en, hi), got {language!r}")
    return {"docid": docid, "title": title or "", "text": text, "language": language, **mark}


def read_corpus(path: str | Path) -> dict[str, dict]:
    """The passages of a corpus file (rows ``docid, title, text``) by docid. A corpus shared by
    every language is read once per job (the last file read is kept, while it is unchanged)."""
    stat = Path(path).stat() if Path(path).is_file() else None
    return _read_corpus(str(path), stat and (stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=1)
def _read_corpus(path: str, version: tuple[int, int] | None) -> dict[str, dict]:
    corpus: dict[str, dict] = {}
    first: dict[str, str] = {}
    for position, row in read_rows(path):
        where = f"{path}: {position}"
        passage = _passage(row, where)
        if passage["docid"] in corpus:
            raise DataError(f"{where}: docid {passage['docid']!r} again (first at {first[passage['docid']]}); "
                            "a corpus has one row per docid")
        corpus[passage["docid"]] = passage
        first[passage["docid"]] = position
    return corpus


def _optional_text(row: Mapping, field: str, where: str) -> str | None:
    value = row.get(field)
    if value is not None and not isinstance(value, str):
        raise DataError(f"{where}: {field} must be a text, got {type(value).__name__}")
    return value


def _check_passage_count(count: int, where: str, max_passages: int | None, name: str) -> None:
    if max_passages is not None and count > max_passages:
        raise DataError(f"{where}: {count} passages, more than the {max_passages} models.{name}.max_passages allows "
                        "(each is featured and shown to judges); give the passages the system was given, or raise "
                        f"models.{name}.max_passages")


def _given_passages(row: Mapping, where: str, question: dict, corpus_path: str | None, questions_path: str,
                    name: str, max_passages: int | None = None, retrieved: bool = False) -> list[dict]:
    """The passages the system was given: its ``passages``, or its ``docids`` looked up in the
    corpus file (when the model declares one) or among the question's passages; more than
    ``max_passages`` of them are refused before any is read. ``retrieved``: the file is a retrieved
    system's, written by rule system_passages (``_passage``)."""
    passages, docids = row.get("passages"), row.get("docids")
    if (passages is None) == (docids is None):
        given = "both passages and docids" if passages is not None else "no passages or docids"
        raise DataError(f"{where}: {given}; give the passages the system was given in one of them: passages "
                        "(docid, title, text) or docids (an empty list: no passages, closed book)")
    if passages is not None:
        if not isinstance(passages, list):
            raise DataError(f"{where}: passages must be a list of objects with docid, title and text")
        _check_passage_count(len(passages), where, max_passages, name)
        return [_passage(passage, f"{where}: passage {index}", retrieved) for index, passage in enumerate(passages, start=1)]
    if not isinstance(docids, list):
        raise DataError(f"{where}: docids must be a list of docids")
    _check_passage_count(len(docids), where, max_passages, name)
    docids = [checked_docid(docid, f"{where}: docid {index}") for index, docid in enumerate(docids, start=1)]
    if corpus_path is not None:
        known, in_what = read_corpus(corpus_path), f"the corpus file {corpus_path}"
    else:
        known = {p["docid"]: p for p in question["passages"]}
        in_what = f"the question's passages in {questions_path} (or declare their file: models.{name}.corpus)"
    unresolved = [docid for docid in docids if docid not in known]
    if unresolved:
        raise DataError(f"{where}: docids {_listed(unresolved)} are not in {in_what}")
    return [{"docid": docid, "title": known[docid]["title"] or "", "text": known[docid]["text"]} for docid in docids]


def _cited(row: Mapping, answer: str, docids: list[str], question: dict, where: str) -> list[str]:
    """The docids the answer cites, each among the system's passages: the row's ``cited_docids``,
    else the ``[docid]`` markers of the answer (``answer_parsing.parse_citations``). A marker is
    read as a docid when it is one of the system's passages or of the question's: any other bracket
    (``[1]``, ``[citation needed]``) is text, as in a language model's answer."""
    if row.get("cited_docids") is not None:
        given = row["cited_docids"]
        if not isinstance(given, list):
            raise DataError(f"{where}: cited_docids must be a list of docids")
        cited = list(dict.fromkeys(checked_docid(docid, f"{where}: cited docid {index}")
                                   for index, docid in enumerate(given, start=1)))
        source = "cited_docids"
    else:
        cited = parse_citations(answer, [*docids, *(p["docid"] for p in question["passages"])])
        source = "the answer's [docid] markers"
    absent = [docid for docid in cited if docid not in set(docids)]
    if absent:
        raise DataError(f"{where}: {source} cite {_listed(absent)}, which are not among the system's passages "
                        f"{_listed(docids)}")
    return cited


def _distinct_docids(passages: list[dict], where: str) -> list[str]:
    docids = [passage["docid"] for passage in passages]
    duplicated = sorted({docid for docid in docids if docids.count(docid) > 1})
    if duplicated:
        raise DataError(f"{where}: duplicated docids {_listed(duplicated)} among its passages")
    return docids


def given_from_file(name: str, spec: Mapping, lang: str, records: list[dict], questions_path: str,
                    retrieved: bool = False) -> dict[str, list[dict]]:
    """The passages language model ``name`` is given per question of language key ``lang``, from its
    ``passages: {file, corpus}``: rows of ``query_id`` and ``passages`` (docid, title, text) or
    ``docids`` (found in ``corpus`` or among the question's passages), as in a system's answer file.
    ``retrieved``: ``name`` is a retrieved system (``systems:``), its file written by rule
    system_passages, whose ``PARALLEL_DOCID`` marks are kept; a user's file may not set them.
    Rows of questions the config did not select are skipped (a retrieval run covers them all); a
    selected question without a row stops the job, naming the file."""
    path = language_path(spec["file"], lang)
    corpus_path = language_path(spec["corpus"], lang) if spec.get("corpus") else None
    questions = {record["query_id"]: record for record in records}
    given, first = {}, {}
    for position, row in read_rows(path):
        where = f"{path}: {position}"
        if not isinstance(row, Mapping) or row.get("query_id") is None:
            raise DataError(f"{where}: expected an object with query_id and passages or docids")
        query_id = _text_id(row["query_id"], where, "query_id")
        if query_id in first:
            raise DataError(f"{where}: query_id {query_id!r} again (first at {first[query_id]}); one row per question")
        first[query_id] = position
        if query_id in questions:
            where = f"{where} (query_id {query_id})"
            passages = _given_passages(row, where, questions[query_id], corpus_path, questions_path, f"{name}.passages",
                                       retrieved=retrieved)
            _distinct_docids(passages, where)
            given[query_id] = passages
    missing = [record["query_id"] for record in records if record["query_id"] not in given]
    if missing:
        raise DataError(f"{path}: no row for {len(missing)} of the {len(records)} questions of {questions_path}: "
                        f"{_listed(missing)}; models.{name}.passages.file must give the passages of every question")
    log.info("%s: the passages of %d questions (%d rows of other questions skipped)", path, len(given),
             len(first) - len(given))
    return given


def _id_key(query_id: str) -> str:
    """What two spellings of one question id share: case and surrounding spaces ignored, a number's
    leading zeros dropped ("0010" and 10)."""
    key = query_id.strip().casefold()
    return (key.lstrip("0") or "0") if key.isdigit() else key


def _likely_matches(unknown: list[str], questions: Mapping[str, dict], answered: set[str]) -> dict[str, str]:
    """``{unknown id: the question id it likely means}`` for unknown ids that are the id of a
    question no row answers, written another way."""
    by_key: dict[str, list[str]] = {}
    for query_id in questions:
        if query_id not in answered:
            by_key.setdefault(_id_key(query_id), []).append(query_id)
    return {query_id: by_key[_id_key(query_id)][0] for query_id in unknown if len(by_key.get(_id_key(query_id), [])) == 1}


def _unanswered(query_id: str, path: str) -> dict:
    return {"query_id": query_id, "raw_output": None, "reason": None, "answer": None, "cited_docids": [],
            "error": f"missing: no row in {path}", "passages": [], "passage_source": PASSAGE_SOURCE}


def system_answers(name: str, entry: Mapping, lang: str, records: list[dict], questions_path: str) -> list[dict]:
    """The answer rows of file system ``name`` (its ``models:`` entry ``entry``) to the questions
    ``records`` of language key ``lang`` (read from ``questions_path``), in their order, in the
    layout of ``generate.answers.SCHEMA``; one ``DataError`` naming the file and row for the first
    problem found."""
    path = language_path(entry["answers"], lang)
    corpus_path = language_path(entry["corpus"], lang) if entry.get("corpus") else None
    questions = {record["query_id"]: record for record in records}
    rows, first, ignored = [], {}, set()
    for position, row in read_rows(path):
        where = f"{path}: {position}"
        if not isinstance(row, Mapping):
            raise DataError(f"{where}: expected an object with query_id and answer, got {type(row).__name__}")
        if row.get("query_id") is None:
            raise DataError(f"{where}: missing field 'query_id'")
        query_id = _text_id(row["query_id"], where, "query_id")
        if query_id in first:
            raise DataError(f"{where}: query_id {query_id!r} again (first at {first[query_id]}); one row per question")
        first[query_id] = position
        ignored |= set(row) - set(ROW_FIELDS)
        rows.append((where, query_id, row))
    if ignored:
        log.info("%s: fields %s are not read (polyrag reads %s)", path, sorted(ignored), ", ".join(ROW_FIELDS))

    unknown = [(where, query_id) for where, query_id, _ in rows if query_id not in questions]
    # An unknown id that is an unanswered question's id written another way (10 for "0010") is a
    # mistake in the file, refused whatever ``unknown`` says: skipped, it would leave that question
    # unanswered.
    matches = _likely_matches([query_id for _, query_id in unknown], questions, set(first))
    if matches:
        where, query_id = next((w, q) for w, q in unknown if q in matches)
        listed = ", ".join(f"{q!r} for {m!r}" for q, m in list(matches.items())[:SHOWN])
        raise DataError(f"{where}: query_id {query_id!r} is not a question of {questions_path}, but {matches[query_id]!r}, "
                        f"which no row answers, is (rows whose id likely means a question's: {listed}); write each "
                        "query_id as the question's id, as text (a JSON number loses leading zeros)")
    if unknown:
        ids = _listed([query_id for _, query_id in unknown])
        if entry["unknown"] == "refuse":
            where, query_id = unknown[0]
            raise DataError(f"{where}: query_id {query_id!r} is not a question of {questions_path}; {len(unknown)} of the "
                            f"file's {len(rows)} rows answer no selected question ({ids}). If the file answers more "
                            f"questions than the config selects (data.max_questions), set models.{name}.unknown: ignore")
        log.warning("%s: %d rows answer no selected question of %s and are skipped (unknown: ignore): %s",
                    path, len(unknown), questions_path, ids)

    answers = {}
    for where, query_id, row in rows:
        question = questions.get(query_id)
        if question is None:
            continue
        where = f"{where} (query_id {query_id})"
        answer = row.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise DataError(f"{where}: answer must be a text, got {type(answer).__name__}")
        if not has_visible_text(answer):
            raise DataError(f"{where}: empty answer (no visible character); leave the row out and set "
                            f"models.{name}.missing: unanswered if the system gave no answer")
        if len(answer) > entry["max_answer_chars"]:
            raise DataError(f"{where}: an answer of {len(answer)} characters, more than the {entry['max_answer_chars']} "
                            f"models.{name}.max_answer_chars allows (every feature and judge reads it); shorten it, or "
                            f"raise models.{name}.max_answer_chars")
        passages = _given_passages(row, where, question, corpus_path, questions_path, name, entry["max_passages"])
        docids = _distinct_docids(passages, where)
        answers[query_id] = {
            "query_id": query_id,
            "raw_output": _optional_text(row, "raw_output", where) or answer,
            "reason": _optional_text(row, "reason", where),
            "answer": answer,
            "cited_docids": _cited(row, answer, docids, question, where),
            "error": None,
            "passages": passages,
            "passage_source": PASSAGE_SOURCE,
        }

    missing = [record["query_id"] for record in records if record["query_id"] not in answers]
    if missing:
        counted = f"{len(missing)} of the {len(records)} questions of {questions_path}: {_listed(missing)}"
        if entry["missing"] == "refuse":
            raise DataError(f"{path}: no row for {counted}; add them, or set models.{name}.missing: unanswered to count "
                            "them as unanswered (they lose every game and score 0 on MARS's answer-based metrics)")
        log.warning("%s: no row for %s; counted as unanswered (missing: unanswered): they lose every game and score 0 "
                    "on MARS's answer-based metrics", path, counted)
    log.info("%s: %d answers, %d unanswered, %d rows skipped", path, len(answers), len(missing), len(unknown))
    return [answers.get(record["query_id"]) or _unanswered(record["query_id"], path) for record in records]
