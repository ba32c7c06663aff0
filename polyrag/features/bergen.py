"""BERGEN's answer metrics against a reference answer.

Texts are normalised as in SQuAD (lower case, punctuation and English articles removed,
whitespace collapsed), with Unicode punctuation classes so that ``।``, ``،`` and ``。`` count, and
split into words, or into characters in scripts written without spaces.

- ``match``: the normalised reference occurs in the normalised answer;
- ``exact_match``: they are equal;
- ``token_f1``: F1 of the bags of tokens;
- ``char3_recall``: share of the reference's character 3-grams (taken within each token; a token
  shorter than 3 characters counts as one gram) that the answer's tokens contain.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

import regex

from polyrag.features.overlap import ROUGE_TOKEN

PUNCTUATION = regex.compile(r"[\p{P}\p{S}]")
ARTICLES = regex.compile(r"\b(a|an|the)\b")


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = PUNCTUATION.sub(" ", text)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    return ROUGE_TOKEN.findall(normalize(text))


def char_ngrams(words: list[str], n: int = 3) -> Counter:
    grams: Counter = Counter()
    for word in words:
        grams.update([word] if len(word) < n else [word[i : i + n] for i in range(len(word) - n + 1)])
    return grams


def bergen_metrics(answer: str, reference: str) -> dict[str, float]:
    answer_norm, reference_norm = normalize(answer), normalize(reference)
    answer_tokens, reference_tokens = tokens(answer), tokens(reference)
    common = sum((Counter(answer_tokens) & Counter(reference_tokens)).values())
    if common == 0:
        f1 = 0.0
    else:
        precision, recall = common / len(answer_tokens), common / len(reference_tokens)
        f1 = 2 * precision * recall / (precision + recall)
    reference_grams = char_ngrams(reference_tokens)
    overlap = sum((reference_grams & char_ngrams(answer_tokens)).values())
    return {
        "match": float(bool(reference_norm) and reference_norm in answer_norm),
        "exact_match": float(answer_norm == reference_norm),
        "token_f1": f1,
        "char3_recall": overlap / sum(reference_grams.values()) if reference_grams else 0.0,
    }
