"""A retrieval corpus: a table of passages ``docid, title, text`` (docid a string always), read from
JSONL or Parquet and checked before any index is built, cut into passages BERGEN's way, and the
demo's corpus per language.

What the retrievers index (BM25's tokens, a dense encoder's passage, a reranker's passage) is the
``contents`` column: the title, a full stop, then the text (BERGEN's ``f"{title}. {text}"``), or
the text alone when there is no title or ``title_prefix`` is off. ``text`` stays the passage
without its title, as a generator is given it (``{docid, title, text}``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from polyrag.data.demo import load_demo
from polyrag.data.io import read_jsonl
from polyrag.data.xquad import read_squad, xquad_docid
from polyrag.errors import DataError

REQUIRED = ("docid", "text")  # a corpus without titles has no title column: titles are then ""
COLUMNS = ["docid", "title", "text"]
CONTENTS = "contents"
#: Bad rows named in one error before "... and N more".
SHOWN = 10
DEMO_DIR = Path("resources/demo")
XQUAD_DIR = Path("resources/xquad")


def read_corpus(path: str | Path) -> pd.DataFrame:
    """The corpus file (``.jsonl`` or ``.parquet``) as ``docid, title, text``, checked
    (``check_corpus``): a bad row stops here, before any index is built."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if path.suffix == ".jsonl":
        rows, numbers = [], []
        for number, row in read_jsonl(path):
            if not isinstance(row, dict):
                raise DataError(f"{path}: line {number}: expected a JSON object with {', '.join(COLUMNS)}")
            rows.append(row)
            numbers.append(number)
        table = pd.DataFrame.from_records(rows, columns=sorted({key for row in rows for key in row}))
        return check_corpus(table, str(path), numbers, "line")
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
        return check_corpus(table, str(path), list(range(1, len(table) + 1)), "row")
    raise DataError(f"{path}: a corpus is a .jsonl or .parquet file of {', '.join(COLUMNS)}")


def check_corpus(table: pd.DataFrame, source: str, rows: list[int] | None = None, unit: str = "row") -> pd.DataFrame:
    """``table`` as ``docid, title, text`` (strings; a missing title ""), or one DataError naming
    ``source``, how many rows are bad and the first of them (their ``unit`` number in ``rows``):
    a missing or empty docid, a missing or empty text, a docid seen before."""
    missing = [column for column in REQUIRED if column not in table.columns]
    if missing:
        raise DataError(f"{source}: the corpus has no column {', '.join(missing)} (a corpus has the columns "
                        f"{', '.join(COLUMNS)}; title may be left out); its columns: {', '.join(map(str, table.columns))}")
    rows = list(range(1, len(table) + 1)) if rows is None else rows
    titles = table["title"] if "title" in table.columns else [""] * len(table)
    docids, texts, clean_titles, problems, first = [], [], [], [], {}
    for row, docid, title, text in zip(rows, table["docid"], titles, table["text"]):
        docid = as_docid(docid)
        faults = []
        if not docid:
            faults.append("no docid")
        elif docid in first:
            faults.append(f"its docid repeats {unit} {first[docid]}")
        else:
            first[docid] = row
        if not isinstance(text, str) or not text.strip():
            faults.append(f"{'no' if is_missing(text) else 'empty' if isinstance(text, str) else 'non-text'} text")
        if faults:
            problems.append(f"{unit} {row}" + (f" (docid {docid!r})" if docid else "") + f": {', '.join(faults)}")
        docids.append(docid)
        texts.append(text)
        clean_titles.append("" if is_missing(title) else str(title))
    if problems:
        more = f"; ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise DataError(f"{source}: {len(problems)} bad {unit}{'s' * (len(problems) != 1)} of {len(table)}: {'; '.join(problems[:SHOWN])}{more}")
    out = pd.DataFrame({"docid": docids, "title": clean_titles, "text": texts})
    if CONTENTS in table.columns:
        out[CONTENTS] = list(table[CONTENTS])
    return out


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def as_docid(value) -> str:
    """A docid as a string: ``80`` (a number in JSON or an integer Parquet column) is ``"80"``;
    a string is kept as is (``"080"`` stays ``"080"``); a missing one is ""."""
    if is_missing(value):
        return ""
    if isinstance(value, float) and value == int(value):
        return str(int(value))  # an integer column with nulls, read as floats
    return str(value).strip()


def write_corpus(corpus: pd.DataFrame, path: str | Path) -> None:
    """The corpus as Parquet, docids as strings."""
    corpus.assign(docid=corpus["docid"].astype(str)).to_parquet(path, index=False)


def contents(title: str, text: str, title_prefix: bool = True) -> str:
    """What is indexed for a passage: ``"{title}. {text}"`` (BERGEN's), or the text alone."""
    return f"{title}. {text}" if title_prefix and title else text


def chunk_documents(corpus: pd.DataFrame, words: int | None = 100, title_prefix: bool = True) -> pd.DataFrame:
    """The corpus cut BERGEN's way: a document longer than ``words`` whitespace-separated words
    becomes consecutive chunks of ``words`` words (the last one shorter), docids ``{docid}#0``,
    ``{docid}#1``, ...; a document that fits keeps its docid and its text unchanged. Every chunk
    keeps its document's title in ``title``; ``contents`` (what is indexed) has it prepended when
    ``title_prefix``. ``words=None`` cuts nothing (a corpus of passages, MIRACL's).

    Words are runs of non-whitespace, so Chinese, Japanese or Thai text, written without spaces,
    is cut only where it has spaces (BERGEN counts characters for those; not done here)."""
    if words is not None and words < 1:
        raise ValueError(f"words must be at least 1, not {words}")
    docids, titles, texts = [], [], []
    for docid, title, text in zip(corpus["docid"], corpus["title"], corpus["text"]):
        split = text.split()
        if words is None or len(split) <= words:
            docids.append(docid)
            titles.append(title)
            texts.append(text)
            continue
        for i, start in enumerate(range(0, len(split), words)):
            docids.append(f"{docid}#{i}")
            titles.append(title)
            texts.append(" ".join(split[start:start + words]))
    out = pd.DataFrame({"docid": docids, "title": titles, "text": texts})
    out[CONTENTS] = [contents(title, text, title_prefix) for title, text in zip(titles, texts)]
    repeated = out["docid"][out["docid"].duplicated()]
    if len(repeated):  # a chunk's id can be another document's docid ("a" cut into "a#0" beside a document "a#0")
        raise DataError(f"cutting the corpus into chunks of {words} words made {len(repeated)} docids that repeat "
                        f"others, e.g. {repeated.iloc[0]!r}: rename those documents")
    return out


def indexed_texts(corpus: pd.DataFrame) -> list[str]:
    """The text each retriever indexes, one per passage: ``contents`` when the corpus went through
    ``chunk_documents``, else the title-prefixed text (its default)."""
    if CONTENTS in corpus.columns:
        return list(corpus[CONTENTS])
    return [contents(title, text) for title, text in zip(corpus["title"], corpus["text"])]


def demo_corpus(language: str, demo_dir: str | Path | None = None, xquad_dir: str | Path | None = None) -> pd.DataFrame:
    """The demo's corpus of one language: every passage of every demo question
    (``resources/demo/{language}.jsonl``, all of its questions, each docid once, in file order),
    then every paragraph of the shipped XQuAD subset of that language where there is one
    (``resources/xquad``: en, de; docids ``xq{article}#{paragraph}`` as ``polyrag.data.xquad``
    names them), so that a question's passages are a few among many. Not chunked."""
    demo_dir = Path(demo_dir or DEMO_DIR)
    passages: dict[str, dict] = {}
    for record in load_demo(language, demo_dir):
        for passage in record["passages"]:
            docid = str(passage["docid"])
            known = passages.setdefault(docid, {"docid": docid, "title": passage.get("title") or "", "text": passage["text"]})
            if known["text"] != passage["text"]:
                raise DataError(f"{demo_dir / f'{language}.jsonl'}: question {record['query_id']}: docid {docid!r} "
                                "has another text in an earlier question")
    squad = Path(xquad_dir or XQUAD_DIR) / f"xquad.{language}.json"
    if squad.exists():
        for a, article in enumerate(read_squad(squad)):
            for p, paragraph in enumerate(article["paragraphs"]):
                docid = xquad_docid(a, p)
                passages[docid] = {"docid": docid, "title": article["title"], "text": paragraph["context"]}
    return check_corpus(pd.DataFrame(list(passages.values()), columns=COLUMNS), f"the demo corpus of {language}")


def corpus_texts(corpus: pd.DataFrame, docids) -> dict[str, str]:
    """``{docid: indexed text}`` for the given docids (a run's), for a reranker."""
    wanted = set(docids)
    mask = corpus["docid"].isin(wanted)
    return dict(zip(corpus["docid"][mask], indexed_texts(corpus[mask])))

