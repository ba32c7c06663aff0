"""Overlap with the reference answer: sentence BLEU (sacreBLEU) and ROUGE-L (rouge-score).

Both scorers default to tokenisers that fail non-Latin scripts: BLEU's ``13a`` sees a Chinese
answer as one token and rouge-score's default tokeniser drops every non-ASCII character (so any
Hindi answer scores 0). Here BLEU uses sacreBLEU's ``zh`` tokeniser for Chinese, characters for
Japanese and Thai-like scripts, ``intl`` (Unicode punctuation) for other non-Latin languages, and
``13a`` for the rest; ROUGE-L counts words, or characters in scripts written without spaces.
"""

from __future__ import annotations

from functools import lru_cache

import regex
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from polyrag.text import UNSPACED

BLEU_TOKENIZER = {"zh": "zh", "ja": "char", "th": "char", "lo": "char", "km": "char", "my": "char"}
LATIN_SCRIPT = {"en", "de", "es", "fr", "fi", "id", "sw", "yo", "it", "pt", "nl", "tr", "vi", "ro", "da", "sv", "no", "pl", "cs"}
ROUGE_TOKEN = regex.compile(rf"[{UNSPACED}]|(?:(?![{UNSPACED}])[\p{{L}}\p{{M}}\p{{N}}])+")


def bleu_tokenizer(language: str) -> str:
    return BLEU_TOKENIZER.get(language, "13a" if language in LATIN_SCRIPT else "intl")


@lru_cache(maxsize=None)
def bleu_scorer(language: str) -> BLEU:
    return BLEU(tokenize=bleu_tokenizer(language), effective_order=True)


class ScriptAwareTokenizer:
    """rouge-score's tokenizer interface: lower-cased words, single characters for unspaced scripts."""

    def tokenize(self, text: str) -> list[str]:
        return ROUGE_TOKEN.findall(text.lower())


@lru_cache(maxsize=1)
def rouge() -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=ScriptAwareTokenizer())


def answer_bleu(answer: str, reference: str, language: str) -> float:
    """Sentence BLEU in [0, 1]."""
    return bleu_scorer(language).sentence_score(answer, [reference]).score / 100.0


def answer_rouge_l(answer: str, reference: str) -> float:
    """ROUGE-L F-measure."""
    return rouge().score(reference, answer)["rougeL"].fmeasure
