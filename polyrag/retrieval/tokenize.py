"""BM25's analyzer for each language: the one place that turns a passage or a question into tokens.

Every language goes through the same steps, each one set by the language (``ANALYZERS``):

1. NFKC, and decimal digits of every script as ASCII digits (``๒๕๖๐`` -> ``2560``; Lucene's
   DecimalDigitFilter in its Arabic, Persian, Hindi, Bengali and Thai analyzers).
2. Lower case; Turkish and Azerbaijani with their own dotted and dotless i (``İ`` -> ``i``,
   ``I`` -> ``ı``; Lucene's TurkishLowerCaseFilter), where Python's ``lower`` gives ``i`` + U+0307
   and ``i``.
3. Turkish: a word's apostrophe suffix is dropped, apostrophe included (``Türkiye'nin`` ->
   ``türkiye``; Lucene's ApostropheFilter).
4. Words by script: Unicode letters with their combining marks and digits; runs of Thai, Lao, Khmer
   and Myanmar (written without spaces) cut into dictionary words by ICU's word break iterator
   (PyICU, from the ``pyicu-wheels`` wheel: the dictionary break iterator Lucene's Thai analyzer
   and its ICU tokenizer use), never split inside a word, so vowel and tone marks stay on their
   consonant; runs of Han, Hiragana and Katakana as overlapping character bigrams, a lone character
   as itself (Lucene's CJK analyzer). Mixed text is split by script: in "iPhone手机", "iphone" is a
   word and "手机" a bigram.
5. Stopwords (off by default; ``stopwords=True``, a bm25 retriever's ``stopwords: true``): the words
   Lucene's analyzer for the language drops (its own list, exported from Lucene into
   ``polyrag/retrieval/stopwords/`` by ``benchmarks/bench_lucene.py --export-stopwords``), removed
   before stemming as Lucene does. A language whose Lucene analyzer drops none is refused.
6. Snowball stemming of the words (never of bigrams or dictionary-segmented words) where PyStemmer
   has a stemmer for the language (``STEMMERS``).

Stopwords are kept by default: BM25's IDF already weights words in most passages near zero, and
measured on XQuAD the difference is within 0.005 nDCG@10 either way (docs/benchmarks.md).

A language with no entry in ``ANALYZERS`` still gets steps 1, 2 and 4 (Unicode words, lower case,
no stemmer), and says so: its ``analysis`` line starts with "no analyzer", the index's metadata
records it (``settings``), and building a tokenizer for it logs a warning. Never a silent fallback.
docs/retrieval.md#bm25 has the table of what polyrag and Lucene do for each language.
"""

from __future__ import annotations

import logging
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import regex

from polyrag.errors import ConfigError, DataError

log = logging.getLogger(__name__)

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

#: Scripts cut into words by ICU's dictionary break iterator, and scripts cut into bigrams.
SEGMENTED = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
BIGRAMMED = r"\p{Han}\p{Hiragana}\p{Katakana}"
UNSPACED = SEGMENTED + BIGRAMMED
WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
TOKEN = regex.compile(rf"([{BIGRAMMED}]+)|([{SEGMENTED}]+)|(?:(?![{UNSPACED}])[\p{{L}}\p{{M}}\p{{N}}])+")
HAS_UNSPACED = regex.compile(rf"[{UNSPACED}]")
HAS_LETTER_OR_DIGIT = regex.compile(r"[\p{L}\p{N}]")
NON_ASCII_DIGIT = regex.compile(r"(?![0-9])\p{Nd}")
#: An apostrophe (U+0027 or U+2019) between letters and everything after it up to the word's end.
APOSTROPHE_SUFFIX = regex.compile(r"(?<=[\p{L}\p{M}])['\u2019](?=\p{L})[\p{L}\p{M}\p{N}'\u2019]*")


@dataclass(frozen=True)
class Analyzer:
    """What one language's analysis does beyond the common steps."""

    #: Lower case with the Turkic dotted and dotless i.
    turkic_casing: bool = False
    #: Drop a word's apostrophe suffix (Lucene's ApostropheFilter).
    apostrophe_suffixes: bool = False
    #: Why a language with neither stemmer nor special step still has a rule (else: "no analyzer").
    note: str = ""


#: The languages polyrag has a rule for. A Snowball language needs no entry beyond its stemmer;
#: these are the ones with more, or whose analysis is complete without a stemmer.
ANALYZERS: dict[str, Analyzer] = {
    "tr": Analyzer(turkic_casing=True, apostrophe_suffixes=True),
    "az": Analyzer(turkic_casing=True, note="Turkic casing; no stemmer"),
    "th": Analyzer(note="ICU dictionary words"),
    "lo": Analyzer(note="ICU dictionary words"),
    "km": Analyzer(note="ICU dictionary words"),
    "my": Analyzer(note="ICU dictionary words"),
    "zh": Analyzer(note="CJK character bigrams"),
    "ja": Analyzer(note="CJK character bigrams"),
    "vi": Analyzer(note="syllables as written (Vietnamese does not inflect)"),
}


@lru_cache(maxsize=1)
def digit_table() -> dict[int, str]:
    """Every Unicode decimal digit that is not ASCII -> its ASCII digit."""
    return {cp: str(unicodedata.decimal(chr(cp))) for cp in range(0x80, sys.maxunicode + 1)
            if unicodedata.category(chr(cp)) == "Nd"}


@lru_cache(maxsize=None)
def lucene_stopwords(language: str) -> frozenset[str] | None:
    """The stopwords Lucene's analyzer for ``language`` drops (None: it drops none)."""
    path = resources.files("polyrag.retrieval") / "stopwords" / f"{language}.txt"
    if not path.is_file():
        return None
    return frozenset(line for line in path.read_text(encoding="utf-8").splitlines() if line)


def stopword_languages() -> list[str]:
    folder = resources.files("polyrag.retrieval") / "stopwords"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def icu_version() -> str:
    import icu

    return icu.ICU_VERSION


class Tokenizer:
    """The tokens of a text in ``language``; the same object tokenizes passages and queries."""

    def __init__(self, language: str, stem: bool = True, stopwords: bool = False):
        self.language, self.stem, self.stopwords = language, stem, stopwords
        self.rule = ANALYZERS.get(language, Analyzer())
        self.stemmer = None
        if stem and language in STEMMERS:
            import Stemmer

            self.stemmer = Stemmer.Stemmer(STEMMERS[language], STEM_CACHE)
        self.stopword_set: frozenset[str] = frozenset()
        if stopwords:
            found = lucene_stopwords(language)
            if found is None:
                raise ConfigError(f"BM25 stopwords: Lucene's analyzer for {language!r} drops no stopwords (lists "
                                  f"exist for {', '.join(stopword_languages())}); set the retriever's stopwords: "
                                  f"false for this language")
            self.stopword_set = found
        self.word_break = None  # ICU's, made on the first Thai, Lao, Khmer or Myanmar text
        if not self.has_rule:
            log.warning("BM25 tokens: %s", self.analysis)

    @property
    def has_rule(self) -> bool:
        return self.language in ANALYZERS or self.language in STEMMERS

    @property
    def analysis(self) -> str:
        """One line saying what this tokenizer does for its language."""
        stopwords = f"Lucene's stopwords ({len(self.stopword_set)})" if self.stopwords else "stopwords kept"
        stemmer = f"Snowball {STEMMERS[self.language]} stemmer" if self.stemmer is not None else "no stemmer"
        if not self.has_rule:
            return f"{self.language}: no analyzer; Unicode word split, lower-case, {stemmer}, {stopwords}"
        casing = "Turkic lower-case (İ->i, I->ı)" if self.rule.turkic_casing else "lower-case"
        steps = ["Unicode words", casing]
        if self.rule.apostrophe_suffixes:
            steps.append("apostrophe suffixes dropped")
        if self.rule.note:
            # The segmentation is ICU's dictionary: its version is part of what the tokens are.
            steps.append(self.rule.note.replace("ICU", f"ICU {icu_version()}") if "ICU" in self.rule.note
                         else self.rule.note)
        return f"{self.language}: {', '.join(steps)}, {stemmer}, {stopwords}"

    def normalize(self, text: str) -> str:
        text = unicodedata.normalize("NFKC", text)
        if not text.isascii() and NON_ASCII_DIGIT.search(text):
            text = text.translate(digit_table())
        if self.rule.turkic_casing:
            text = text.replace("İ", "i").replace("I", "ı")
        text = text.lower()
        if self.rule.apostrophe_suffixes:
            text = APOSTROPHE_SUFFIX.sub("", text)
        return text

    def segment(self, run: str) -> list[str]:
        """A run of Thai, Lao, Khmer or Myanmar as ICU's dictionary words (letters or digits only)."""
        if self.word_break is None:
            import icu

            self.word_break = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
        self.word_break.setText(run)
        bounds = [0, *self.word_break]
        return [w for w in (run[i:j] for i, j in zip(bounds, bounds[1:])) if HAS_LETTER_OR_DIGIT.search(w)]

    def words(self, text: str) -> tuple[list[str], list[int] | None]:
        """The normalized text's tokens, and the positions of the stemmable ones (None: all)."""
        if not HAS_UNSPACED.search(text):  # words only (the common case)
            return WORD.findall(text), None
        tokens: list[str] = []
        stemmable: list[int] = []
        for match in TOKEN.finditer(text):
            bigrammed, segmented = match.group(1), match.group(2)
            if bigrammed:
                tokens.extend(bigrammed[i : i + 2] for i in range(max(1, len(bigrammed) - 1)))
            elif segmented:
                tokens.extend(self.segment(segmented))
            else:
                stemmable.append(len(tokens))
                tokens.append(match.group(0))
        return tokens, stemmable

    def __call__(self, text: str) -> list[str]:
        tokens, stemmable = self.words(self.normalize(text))
        if self.stopword_set:
            if stemmable is not None:
                stemmable_set = set(stemmable)
                kept = [(t, i in stemmable_set) for i, t in enumerate(tokens) if t not in self.stopword_set]
                tokens = [t for t, _ in kept]
                stemmable = [i for i, (_, s) in enumerate(kept) if s]
            else:
                tokens = [t for t in tokens if t not in self.stopword_set]
        if self.stemmer is None:
            return tokens
        if stemmable is None:
            return self.stemmer.stemWords(tokens)
        for i, stemmed in zip(stemmable, self.stemmer.stemWords([tokens[i] for i in stemmable])):
            tokens[i] = stemmed
        return tokens

    def settings(self) -> dict:
        """What an index records to tokenize its queries as it tokenized its passages, and what
        the analysis was (``analysis``: a language without a rule says "no analyzer")."""
        return {"language": self.language, "stem": self.stem, "stopwords": self.stopwords,
                "stemmer": STEMMERS.get(self.language) if self.stem else None, "analysis": self.analysis}


def check_analysis(folder, settings: dict, tokenizer) -> None:
    """An index's passages were tokenized as its settings record (``analysis``: one line, or one per
    language of a pooled index); its questions must be tokenized the same way. An index built by
    another analysis (an older polyrag, another ICU) stops here naming the folder, rather than being
    searched with tokens its passages never had."""
    recorded = settings.get("analysis")
    if recorded is None:
        raise DataError(f"{folder}: a BM25 index built before polyrag recorded its analyzer; rebuild it "
                        "(delete the folder: the workflow builds it again)")
    lines = recorded if isinstance(recorded, dict) else {None: recorded}
    for language, line in lines.items():
        now = (tokenizer if language is None else tokenizer[language]).analysis
        if now != line:
            raise DataError(f"{folder}: its passages were tokenized as {line!r}, and this polyrag tokenizes as "
                            f"{now!r}; rebuild the index (delete the folder: the workflow builds it again)")
