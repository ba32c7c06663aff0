"""BM25 over a corpus with ``bm25s``: built once per (corpus, language), saved to a folder,
searched with the tokens of ``polyrag.retrieval.tokenize``.

Defaults are Pyserini's (and so BERGEN's BM25): ``k1=0.9, b=0.4`` and Lucene's scoring
(``method="lucene"``: IDF ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive; term weight
``tf / (tf + k1 (1 - b + b dl / avgdl))``). bm25s's other variants (``robertson``, ``atire``,
``bm25l``, ``bm25+``) are one parameter away.

A run lists a question's passages with a positive score only: a passage that shares no token with
the question is not retrieved (Lucene's behaviour). With ``bm25l`` or ``bm25+`` every passage
scores above zero, so every question gets ``k`` passages.

A pooled corpus (``language="pooled"``, docids ``{lang}:{docid}``) is one index whose passages are
each tokenized for their own language (their stemmer), and a question for its own; the IDF is the
pooled corpus's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from polyrag.errors import DataError
from polyrag.progress import progress
from polyrag.retrieval.corpus import POOLED, indexed_texts, split_pooled_docid
from polyrag.retrieval.index_files import check_files, reading, write_files
from polyrag.retrieval.runs import empty_run, make_run
from polyrag.retrieval.tokenize import Tokenizer, check_analysis

K1, B, METHOD = 0.9, 0.4, "lucene"
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
SETTINGS = "polyrag_bm25.json"
DOCIDS = "docids.json"


class Tokenizers:
    """A tokenizer per language, made when first asked for, with the same settings."""

    def __init__(self, stem: bool, stopwords: bool):
        self.stem, self.stopwords, self.made = stem, stopwords, {}

    def __getitem__(self, language: str) -> Tokenizer:
        if language not in self.made:
            self.made[language] = Tokenizer(language, stem=self.stem, stopwords=self.stopwords)
        return self.made[language]

    def settings(self) -> dict:
        """As ``Tokenizer.settings``, with the analysis line of each language the index holds."""
        return {"language": POOLED, "stem": self.stem, "stopwords": self.stopwords,
                "analysis": {language: made.analysis for language, made in sorted(self.made.items())}}


class BM25Index:
    def __init__(self, retriever, docids: list[str], tokenizer: Tokenizer | Tokenizers):
        self.retriever, self.docids, self.tokenizer = retriever, docids, tokenizer

    @property
    def pooled(self) -> bool:
        return isinstance(self.tokenizer, Tokenizers)

    @classmethod
    def build(cls, corpus: pd.DataFrame, language: str, k1: float = K1, b: float = B, method: str = METHOD,
              stem: bool = True, stopwords: bool = False) -> BM25Index:
        """The index of ``corpus`` (``docid, title, text`` and optionally ``contents``: see
        ``polyrag.retrieval.corpus``), its passages tokenized for ``language``."""
        import bm25s

        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r} (one of {', '.join(METHODS)})")
        if len(corpus) == 0:
            raise DataError("the corpus is empty: there is nothing to index")
        docids = [str(d) for d in corpus["docid"]]
        if language == POOLED:  # each passage in its own language
            tokenizer = Tokenizers(stem, stopwords)
            tokenizers = [tokenizer[split_pooled_docid(docid)[0]] for docid in docids]
        else:
            tokenizer = Tokenizer(language, stem=stem, stopwords=stopwords)
            tokenizers = [tokenizer] * len(docids)
        vocabulary: dict[str, int] = {}  # token -> id in order of first appearance: the same index files on every run
        ids = [[vocabulary.setdefault(token, len(vocabulary)) for token in tokenize(text)]
               for tokenize, text in zip(tokenizers, progress(indexed_texts(corpus), desc=f"BM25 tokens ({language})",
                                                              unit="passage"))]
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        retriever.index((ids, vocabulary), show_progress=False)
        return cls(retriever, docids, tokenizer)

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.retriever.save(folder, show_progress=False)
        (folder / DOCIDS).write_text(json.dumps(self.docids, ensure_ascii=False), encoding="utf-8")
        settings = self.tokenizer.settings()
        (folder / SETTINGS).write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
        write_files(folder)  # last: the folder is whole

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = False) -> BM25Index:
        """The index saved in ``folder``; a damaged one (a file missing, truncated or unreadable)
        stops with one line naming the folder and how to rebuild it."""
        import bm25s

        folder = Path(folder)
        if not (folder / SETTINGS).exists():
            raise DataError(f"{folder}: not a BM25 index written by polyrag (no {SETTINGS})")
        check_files(folder, "BM25")
        with reading(folder, "BM25"):
            settings = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
            retriever = bm25s.BM25.load(folder, mmap=mmap, show_progress=False, verbosity=0)
            docids = json.loads((folder / DOCIDS).read_text(encoding="utf-8"))
        if len(docids) != retriever.scores["num_docs"]:
            raise DataError(f"{folder}: {len(docids)} docids for an index of {retriever.scores['num_docs']} passages")
        if settings["language"] == POOLED:
            tokenizer = Tokenizers(settings["stem"], settings["stopwords"])
        else:
            tokenizer = Tokenizer(settings["language"], stem=settings["stem"], stopwords=settings["stopwords"])
        check_analysis(folder, settings, tokenizer)
        return cls(retriever, docids, tokenizer)

    @property
    def parameters(self) -> dict:
        return {"k1": self.retriever.k1, "b": self.retriever.b, "method": self.retriever.method}

    def search(self, queries: Mapping[str, str], k: int = 100, threads: int = 1,
               language: str | None = None) -> pd.DataFrame:
        """The top ``k`` passages of each query (``{query_id: text}``) as a run. A pooled index
        tokenizes the queries for their ``language`` (required there)."""
        if not queries:
            return empty_run()
        if self.pooled and language is None:
            raise ValueError("a pooled BM25 index tokenizes a question for its language: pass language")
        tokenizer = self.tokenizer[language] if self.pooled else self.tokenizer
        vocabulary = self.retriever.vocab_dict
        # Token ids, of the corpus's tokens only: a query with none retrieves nothing (every score 0).
        tokens = {str(q): [vocabulary[t] for t in tokenizer(text) if t in vocabulary] for q, text in queries.items()}
        tokens = {q: ids for q, ids in tokens.items() if ids}
        if not tokens:
            return empty_run()
        found = self.retriever.retrieve(list(tokens.values()), k=min(k, len(self.docids)), show_progress=False,
                                        n_threads=threads if threads > 1 else 0)
        positions, scores = np.asarray(found.documents), np.asarray(found.scores, dtype=np.float64)
        keep = scores > 0
        query_rows = np.nonzero(keep)[0]
        return make_run(np.asarray(list(tokens), dtype=object)[query_rows],
                        np.asarray(self.docids, dtype=object)[positions[keep]], scores[keep])
