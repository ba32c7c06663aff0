"""BM25's tokens for each language: words split the way ``polyrag.text.word_tokens`` splits them
(NFKC, lower case, Unicode letters with their combining marks and digits; runs of Han, Hiragana,
Katakana, Thai, Lao, Khmer and Myanmar, written without spaces, as overlapping character bigrams,
a lone character as itself: Lucene's CJK bigram analyser), then Snowball stemming of the words
(never of the bigrams) where PyStemmer has a stemmer for the language.

Stemmers (``STEMMERS``) exist for ar, de, el, en, es, fa, fi, fr, hi, id, it, pt, ro, ru, tr
and others; bn, ja, ko, sw, te, th, vi, yo and zh have none, and their words are left as they are
(ja, th and zh are bigrams anyway). Mixed text is split by script: in "iPhone手机", "iphone" is a
word and "手机" a bigram.

Stopwords are kept by default: BM25's IDF already gives words in most passages a weight near
zero, and a list exists for only some languages (bm25s ships English and a few European lists),
so removing them would treat languages unequally. ``stopwords=True`` removes bm25s's list for the
language (before stemming) and refuses a language that has none.

Pyserini's defaults differ: English uses the Porter stemmer and Lucene's English stopwords, other
languages Lucene's language analysers. The ranking of the same k1, b over those tokens is the same
formula (tests/retrieval/test_bm25.py checks the formula against rank_bm25 on the same tokens).
"""

from __future__ import annotations

from polyrag.errors import ConfigError
from polyrag.text import HAS_UNSPACED, UNSPACED_RUN, word_tokens

#: Stems kept in memory: a corpus's common words are stemmed once (PyStemmer's default of 10,000
#: is smaller than a corpus's vocabulary, and evicting costs more than stemming again).
STEM_CACHE = 200_000

#: ISO 639-1 code -> PyStemmer (Snowball) algorithm.
STEMMERS = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german", "el": "greek",
    "en": "english", "es": "spanish", "et": "estonian", "eu": "basque", "fa": "persian", "fi": "finnish",
    "fr": "french", "ga": "irish", "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish",
}
#: ISO 639-1 code -> the name of bm25s's stopword list (``bm25s.stopwords.STOPWORDS_*``).
STOPWORD_LISTS = {
    "da": "DANISH", "de": "GERMAN", "en": "EN", "es": "SPANISH", "fr": "FRENCH", "it": "ITALIAN",
    "ko": "KOREAN", "nl": "DUTCH", "no": "NORWEGIAN", "pt": "PORTUGUESE", "ru": "RUSSIAN", "sv": "SWEDISH",
    "tr": "TURKISH", "zh": "CHINESE",
}


class Tokenizer:
    """The tokens of a text in ``language``; the same object tokenizes passages and queries."""

    def __init__(self, language: str, stem: bool = True, stopwords: bool = False):
        self.language, self.stem, self.stopwords = language, stem, stopwords
        self.stemmer = None
        if stem and language in STEMMERS:
            import Stemmer

            self.stemmer = Stemmer.Stemmer(STEMMERS[language], STEM_CACHE)
        self.stopword_set: frozenset[str] = frozenset()
        if stopwords:
            if language not in STOPWORD_LISTS:
                raise ConfigError(f"BM25 stopwords: bm25s has no stopword list for {language!r} (it has "
                                  f"{', '.join(sorted(STOPWORD_LISTS))}); leave stopwords off for this language")
            import bm25s.stopwords

            self.stopword_set = frozenset(getattr(bm25s.stopwords, f"STOPWORDS_{STOPWORD_LISTS[language]}"))

    def __call__(self, text: str) -> list[str]:
        tokens = word_tokens(text)
        if self.stopword_set:
            tokens = [t for t in tokens if t not in self.stopword_set]
        if self.stemmer is None:
            return tokens
        if not HAS_UNSPACED.search("".join(tokens)):  # no bigram: every token is a word (the common case)
            return self.stemmer.stemWords(tokens)
        words = [i for i, t in enumerate(tokens) if not UNSPACED_RUN.match(t)]
        for i, stemmed in zip(words, self.stemmer.stemWords([tokens[i] for i in words])):
            tokens[i] = stemmed
        return tokens

    def settings(self) -> dict:
        """What an index records to tokenize its queries as it tokenized its passages."""
        return {"language": self.language, "stem": self.stem, "stopwords": self.stopwords,
                "stemmer": STEMMERS.get(self.language) if self.stem else None}
