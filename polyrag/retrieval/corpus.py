"""A retrieval corpus: a table of passages ``docid, title, text`` (docid a string always), read from
JSONL or Parquet and checked before any index is built, cut into passages BERGEN's way, and the
demo's corpus per language.

What the retrievers index (BM25's tokens, a dense encoder's passage, a reranker's passage) is the
``contents`` column: the title, a full stop, then the text (BERGEN's ``f"{title}. {text}"``), or
the text alone when there is no title or ``title_prefix`` is off. ``text`` stays the passage
without its title, as a generator is given it (``{docid, title, text}``).

The workflow writes a corpus as it reads it (``write_corpus_batches``): batches of ``BATCH`` rows
are checked (the file and line of a bad row), cut and written as Parquet row groups, so a corpus of
33M passages (MIRACL's English) never sits in memory; only 15 bytes per passage are kept, to find a
docid repeated across batches. A job that needs part of it reads its row groups
(``read_corpus_rows``: a dense shard) or its docids (``read_corpus_docids``: a run's passages).

A *pooled* corpus joins several languages' corpora into one (``pool_corpora``): each passage's
docid is prefixed with its language (``en:123``, ``pooled_docid``) so that two languages' docids
cannot collide. A question's own labels name its passages without the prefix: ``question_docids``
gives a pooled run's docids as the question sees them (its own language's without the prefix,
another language's with it: passages nobody judged for the question) and each one's language.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.data.demo import load_demo
from polyrag.data.io import read_jsonl
from polyrag.data.xquad import read_squad, xquad_docid
from polyrag.docids import as_docid
from polyrag.errors import DataError

REQUIRED = ("docid", "text")  # a corpus without titles has no title column: titles are then ""
COLUMNS = ["docid", "title", "text"]
CONTENTS = "contents"
#: Bad rows named in one error before "... and N more".
SHOWN = 10
DEMO_DIR = Path("resources/demo")
XQUAD_DIR = Path("resources/xquad")
#: Rows read, checked and written at a time: one Parquet row group each (a dense shard reads the
#: row groups its slice spans).
BATCH = 100_000
SCHEMA = pa.schema([(name, pa.string()) for name in (*COLUMNS, CONTENTS)])
#: The corpus language of a pooled corpus (its file ``{corpus}/pooled.parquet``, its indexes'
#: ``{corpus_lang}``): one corpus of several languages' passages.
POOLED = "pooled"
#: Between a pooled passage's language and its docid in its language's corpus: ``en:123``.
LANGUAGE_SEPARATOR = ":"


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
        table = _parquet_file(path).read().to_pandas()
        return check_corpus(table, str(path), list(range(1, len(table) + 1)), "row")
    raise DataError(f"{path}: a corpus is a .jsonl or .parquet file of {', '.join(COLUMNS)}")


def check_corpus(table: pd.DataFrame, source: str, rows: list[int] | None = None, unit: str = "row",
                 of: str | None = None) -> pd.DataFrame:
    """``table`` as ``docid, title, text`` (strings; a missing title ""), or one DataError naming
    ``source``, how many rows are bad and the first of them (their ``unit`` number in ``rows``):
    a missing docid or one ``polyrag.docids`` refuses (whitespace, citation syntax, too long), a
    missing or empty text, a docid seen before. ``of``: what the count
    is out of (default the table's length; a batch names its lines)."""
    missing = [column for column in REQUIRED if column not in table.columns]
    if missing:
        raise DataError(f"{source}: the corpus has no column {', '.join(missing)} (a corpus has the columns "
                        f"{', '.join(COLUMNS)}; title may be left out); its columns: {', '.join(map(str, table.columns))}")
    rows = list(range(1, len(table) + 1)) if rows is None else rows
    titles = table["title"] if "title" in table.columns else [""] * len(table)
    docids, texts, clean_titles, problems, first = [], [], [], [], {}
    for row, docid, title, text in zip(rows, table["docid"], titles, table["text"]):
        faults = []
        try:
            docid = as_docid(docid)
        except ValueError as error:
            faults.append(str(error))
            docid = ""
        if docid in first:
            faults.append(f"its docid repeats {unit} {first[docid]}")
        elif docid:
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
        raise DataError(f"{source}: {len(problems)} bad {unit}{'s' * (len(problems) != 1)} of {of or len(table)}: "
                        f"{'; '.join(problems[:SHOWN])}{more}")
    out = pd.DataFrame({"docid": docids, "title": clean_titles, "text": texts})
    if CONTENTS in table.columns:
        out[CONTENTS] = list(table[CONTENTS])
    return out


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


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



# --- corpora written and read in parts ------------------------------------------------------------

#: A batch of a corpus's rows as read: the rows, the file they come from, each row's number in it
#: and what a number is (``line`` of JSONL, ``row`` of Parquet).
Batch = tuple[pd.DataFrame, str, list[int], str]


def jsonl_batches(paths: Sequence[str | Path], size: int = BATCH) -> Iterator[Batch]:
    """The rows of JSONL files (``.jsonl`` or gzipped ``.jsonl.gz``) in batches of ``size``, each
    with its file and line numbers. A line that is not a JSON object stops with its file and line."""
    for path in paths:
        rows, lines = [], []
        for number, row in read_jsonl(path):
            if not isinstance(row, dict):
                raise DataError(f"{path}: line {number}: expected a JSON object with {', '.join(COLUMNS)}")
            rows.append(row)
            lines.append(number)
            if len(rows) == size:
                yield _records(rows), str(path), lines, "line"
                rows, lines = [], []
        if rows:
            yield _records(rows), str(path), lines, "line"


def _records(rows: list[dict]) -> pd.DataFrame:
    columns = [*COLUMNS, *sorted({key for row in rows for key in row} - set(COLUMNS))]
    return pd.DataFrame.from_records(rows, columns=columns)


def parquet_batches(path: str | Path, size: int = BATCH) -> Iterator[Batch]:
    """The rows of a Parquet corpus file in batches of ``size``, numbered from 1."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    start = 1
    for batch in _parquet_file(path).iter_batches(batch_size=size):
        table = batch.to_pandas()
        yield table, str(path), list(range(start, start + len(table))), "row"
        start += len(table)


def _parquet_file(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:  # a truncated file, or another format named .parquet
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None


def file_batches(path: str | Path, size: int = BATCH) -> Iterator[Batch]:
    """A corpus file (``.jsonl``, ``.jsonl.gz`` or ``.parquet``) in batches."""
    name = str(path)
    if name.endswith((".jsonl", ".jsonl.gz")):
        return jsonl_batches([path], size)
    if name.endswith(".parquet"):
        return parquet_batches(path, size)
    raise DataError(f"{path}: a corpus is a .jsonl, .jsonl.gz or .parquet file of {', '.join(COLUMNS)}")


def write_corpus_batches(read_batches: Callable[[], Iterable[Batch]], path: str | Path, words: int | None = 100,
                         title_prefix: bool = True) -> int:
    """The corpus of ``read_batches()`` checked, cut (``chunk_documents``) and written to ``path``
    batch by batch, each batch a row group; the number of passages written. A bad row stops with
    its file and line (``check_corpus``), a docid repeated in a later batch with both files and
    lines. ``read_batches`` is called again only to name the rows of a repeated docid.

    Memory: one batch, and per passage a 64-bit hash of its docid and where it came from (15 bytes;
    500 MB at 33M passages), to find repeats across batches after the last one (a repeat of a hash
    is confirmed on the docids themselves before anything stops)."""
    path = Path(path)
    hashes, origins, chunk_hashes, sources = [], [], [], {}
    written = 0
    try:
        with pq.ParquetWriter(path, SCHEMA) as writer:
            for table, source, rows, unit in read_batches():
                of = f"the {len(table)} {unit}s {rows[0]}-{rows[-1]} read together" if rows else None
                documents = check_corpus(table, source, rows, unit, of)
                index = sources.setdefault((source, unit), len(sources))
                hashes.append(pd.util.hash_array(documents["docid"].to_numpy(dtype=object)))
                origins.append(np.rec.fromarrays([np.full(len(rows), index, np.int32), np.asarray(rows, np.int64)],
                                                 names="source,row"))
                passages = chunk_documents(documents, words, title_prefix)
                if words is not None:  # a chunk's docid may repeat a docid of another batch
                    chunk_hashes.append(pd.util.hash_array(passages["docid"].to_numpy(dtype=object)))
                writer.write_table(pa.Table.from_pandas(passages[[*COLUMNS, CONTENTS]], schema=SCHEMA,
                                                        preserve_index=False))
                written += len(passages)
        _check_repeats(hashes, origins, sources, read_batches)
        if chunk_hashes:
            _check_chunk_repeats(np.concatenate(chunk_hashes), path, words)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return written


def _repeated_positions(hashes: np.ndarray) -> np.ndarray:
    """Positions whose hash equals an earlier position's (candidates: confirmed on the strings)."""
    order = np.argsort(hashes, kind="stable")
    same = hashes[order][1:] == hashes[order][:-1]
    return np.unique(np.concatenate([order[1:][same], order[:-1][same]]))


def _check_repeats(hashes: list[np.ndarray], origins: list[np.ndarray], sources: dict[tuple[str, str], int],
                   read_batches: Callable[[], Iterable[Batch]]) -> None:
    if not hashes:
        return
    candidates = _repeated_positions(np.concatenate(hashes))
    if not len(candidates):
        return
    wanted, position, docids = set(candidates.tolist()), 0, {}
    for table, _, _, _ in read_batches():  # the docids of the candidates, read again
        for offset, docid in enumerate(table["docid"]):
            if position + offset in wanted:
                docids[position + offset] = as_docid(docid)
        position += len(table)
    where = np.concatenate(origins)
    names = {index: f"{source}: {unit}" for (source, unit), index in sources.items()}
    first: dict[str, int] = {}
    problems = []
    for candidate in sorted(docids):
        docid = docids[candidate]
        if docid not in first:
            first[docid] = candidate
            continue
        earlier, this = where[first[docid]], where[candidate]
        problems.append(f"{names[this['source']]} {this['row']} (docid {docid!r}): its docid repeats "
                        f"{names[earlier['source']]} {earlier['row']}")
    if problems:
        more = f"; ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise DataError(f"{len(problems)} repeated docid{'s' * (len(problems) != 1)}: {'; '.join(problems[:SHOWN])}{more}")


def _check_chunk_repeats(hashes: np.ndarray, path: Path, words: int) -> None:
    candidates = _repeated_positions(hashes)
    if not len(candidates):
        return
    docids = pq.read_table(path, columns=["docid"])["docid"].to_numpy(zero_copy_only=False)[candidates]
    repeated = pd.Series(docids)[pd.Series(docids).duplicated()]
    if len(repeated):
        raise DataError(f"cutting the corpus into chunks of {words} words made {len(repeated)} docids that repeat "
                        f"others, e.g. {repeated.iloc[0]!r}: rename those documents")


def corpus_size(path: str | Path) -> int:
    """The passages of a corpus written by the workflow (from its Parquet footer)."""
    return pq.ParquetFile(path).metadata.num_rows


def row_groups_spanning(parquet: pq.ParquetFile, start: int, stop: int) -> tuple[list[int], int | None]:
    """The row groups of ``parquet`` that rows ``[start, stop)`` span, and the first row of the
    first of them (None where they span none)."""
    groups, offset, first = [], 0, None
    for group in range(parquet.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        if offset < stop and offset + rows > start:
            groups.append(group)
            first = offset if first is None else first
        offset += rows
    return groups, first


def read_corpus_rows(path: str | Path, start: int, stop: int) -> pd.DataFrame:
    """Rows ``[start, stop)`` of a corpus written by the workflow, reading only the row groups they
    span (a dense shard's passages). Not checked again: the workflow checked them when it wrote them."""
    parquet = pq.ParquetFile(path)
    groups, first = row_groups_spanning(parquet, start, stop)
    if not groups:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in parquet.schema_arrow.names})
    table = parquet.read_row_groups(groups).to_pandas()
    return table.iloc[start - first:stop - first].reset_index(drop=True)


def read_corpus_docids(path: str | Path, docids: Iterable[str]) -> pd.DataFrame:
    """The passages of ``docids`` in a corpus written by the workflow (a run's, for a reranker or a
    system's passage file), scanning the file a row group at a time; a docid not in it is absent."""
    wanted = sorted(set(map(str, docids)))
    if not wanted:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in pq.read_schema(path).names})
    return pq.read_table(path, filters=[("docid", "in", wanted)]).to_pandas()


# --- pooled corpora ---------------------------------------------------------------------------------

def pooled_docid(language: str, docid: str) -> str:
    """A passage's docid in a pooled corpus: its language, ``:``, its docid in its language's corpus."""
    return f"{language}{LANGUAGE_SEPARATOR}{docid}"


def split_pooled_docid(docid: str) -> tuple[str, str]:
    """(language, docid in its language's corpus) of a pooled corpus's docid."""
    language, separator, own = str(docid).partition(LANGUAGE_SEPARATOR)
    if not separator or not language:
        raise DataError(f"docid {docid!r} is not a pooled corpus's (language{LANGUAGE_SEPARATOR}docid)")
    return language, own


def question_docids(docids: Iterable[str], lang: str, corpus_lang: str) -> tuple[list[str], list[str]]:
    """A run's docids as a question of ``lang`` names them, and each passage's language, for a run
    over the corpus of ``corpus_lang``. A pooled corpus's passage (``POOLED``) in the question's
    language loses its prefix (``hi:123`` is the question's ``123``, which its labels judge);
    another language's keeps it (``en:123``: a passage nobody judged for the question). A
    language's own corpus changes nothing: its passages are in ``corpus_lang``."""
    docids = [str(docid) for docid in docids]
    if corpus_lang != POOLED:
        return docids, [corpus_lang] * len(docids)
    named, languages = [], []
    for docid in docids:
        language, own = split_pooled_docid(docid)
        named.append(own if language == lang else docid)
        languages.append(language)
    return named, languages


def pool_corpora(paths: dict[str, str | Path], path: str | Path, size: int = BATCH) -> int:
    """The corpora of several languages (``{language: corpus file written by the workflow}``, each
    already checked, its docids unique) as one, in the order given, each docid prefixed with its
    language (``pooled_docid``), written batch by batch; the number of passages."""
    written = 0
    try:
        with pq.ParquetWriter(path, SCHEMA) as writer:
            for language, source in paths.items():
                for batch in pq.ParquetFile(source).iter_batches(batch_size=size, columns=[*COLUMNS, CONTENTS]):
                    table = batch.to_pandas()
                    table["docid"] = [pooled_docid(language, docid) for docid in table["docid"]]
                    writer.write_table(pa.Table.from_pandas(table, schema=SCHEMA, preserve_index=False))
                    written += len(table)
    except BaseException:
        Path(path).unlink(missing_ok=True)
        raise
    return written


def build_corpus(entry: dict, language: str, path: str | Path, cache_dir: str | Path,
                 demo_dirs: dict | None = None) -> int:
    """One language's corpus of a config's corpus ``entry`` (``retrieval.corpora.{name}``) read from
    its source, checked, cut by its ``chunk_words`` and written to ``path``; the passages written.
    ``demo``: ``demo_corpus``; ``file``: its file with ``{lang}``; ``miracl``: MIRACL's corpus
    (``polyrag.retrieval.miracl``), downloaded into ``cache_dir``."""
    source = entry["source"]
    if source == "demo":
        documents = demo_corpus(language, **(demo_dirs or {}))
        batches = lambda: [(documents, f"the demo corpus of {language}", list(range(1, len(documents) + 1)), "row")]  # noqa: E731
    elif source == "file":
        file = entry["file"].replace("{lang}", language)
        batches = lambda: file_batches(file)  # noqa: E731
    elif source == "miracl":
        from polyrag.retrieval.miracl import OPTIONS, corpus_files

        files = corpus_files(language, {**OPTIONS, **(entry.get("miracl") or {})}, cache_dir)
        batches = lambda: jsonl_batches(files)  # noqa: E731
    else:
        raise DataError(f"unknown corpus source {source!r} (demo, file, miracl)")
    return write_corpus_batches(batches, path, entry["chunk_words"])
