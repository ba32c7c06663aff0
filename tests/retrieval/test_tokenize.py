"""BM25's analyzer per language: stemmed words, ICU dictionary words for Thai, Lao, Khmer and
Myanmar, bigrams for Han and Kana, Turkish casing and apostrophes, Lucene's stopwords. The expected
tokens of Thai and Turkish are Lucene 9.9.1's for the same text (benchmarks/bench_lucene.py prints
both analyzers' tokens side by side)."""

from __future__ import annotations

import json
import logging
import unicodedata

import pandas as pd
import pytest

from polyrag.errors import ConfigError
from polyrag.retrieval.bm25 import BM25Index
from polyrag.retrieval.tokenize import Tokenizer


def test_english_is_lower_cased_split_and_stemmed():
    assert Tokenizer("en")("The rivers were flowing quickly into the sea.") == \
        ["the", "river", "were", "flow", "quick", "into", "the", "sea"]
    assert Tokenizer("en", stem=False)("The rivers were flowing.") == ["the", "rivers", "were", "flowing"]


def test_german_words_are_stemmed_by_snowball():
    assert Tokenizer("de")("Die Flüsse fließen schnell ins Meer.") == ["die", "fluss", "fliess", "schnell", "ins", "meer"]
    # Singular and plural meet at one stem, so a question about "Fluss" matches a passage on "Flüsse".
    assert Tokenizer("de")("Fluss") == Tokenizer("de")("Flüsse")


def test_chinese_becomes_overlapping_character_bigrams():
    assert Tokenizer("zh")("尼日尔河注入几内亚湾。") == ["尼日", "日尔", "尔河", "河注", "注入", "入几", "几内", "内亚", "亚湾"]
    assert Tokenizer("zh")("河") == ["河"]  # a lone character is its own token


def test_hindi_words_keep_their_vowel_signs_and_are_stemmed():
    # Vowel signs (ि, ी, ु) are combining marks: a split on letters alone would cut every word apart.
    assert Tokenizer("hi")("नदियाँ समुद्र में गिरती हैं।") == ["नद", "समुद्र", "म", "गिर", "हैं"]
    assert Tokenizer("hi")("नदी") == Tokenizer("hi")("नदियों")
    assert Tokenizer("hi", stem=False)("नदियाँ समुद्र में") == ["नदियाँ", "समुद्र", "में"]


def test_mixed_scripts_split_by_script_and_bigrams_are_never_stemmed():
    assert Tokenizer("en")("iPhone手机 2024 Ｆｕｌｌ") == ["iphon", "手机", "2024", "full"]


def test_a_language_without_a_stemmer_keeps_its_words():
    assert Tokenizer("sw")("Watoto wanacheza mpira") == ["watoto", "wanacheza", "mpira"]


def test_stopwords_are_lucenes_optional_and_refused_where_lucene_has_none():
    assert Tokenizer("en", stopwords=True)("The rivers were flowing into the sea") == ["river", "were", "flow", "sea"]
    # Lucene's HindiAnalyzer drops में and से (bm25s has no Hindi list; polyrag refused one before).
    assert Tokenizer("hi")("नदियाँ समुद्र में तेज़ी से गिरती हैं") == ["नद", "समुद्र", "म", "तेज़", "स", "गिर", "हैं"]
    assert Tokenizer("hi", stopwords=True)("नदियाँ समुद्र में तेज़ी से गिरती हैं") == ["नद", "समुद्र", "तेज़", "गिर"]
    # Lucene's TurkishAnalyzer drops "ve" and "bir", lower-cased the Turkish way first ("BIR" is "bır", kept).
    assert Tokenizer("tr", stopwords=True)("Ankara ve bir İstanbul") == ["ankar", "istanbul"]
    with pytest.raises(ConfigError, match="Lucene's analyzer for 'sw' drops no stopwords"):
        Tokenizer("sw", stopwords=True)


# Lucene's ThaiAnalyzer on the same text: ทีม แพน เธอ ร์ส ยอม แพ้ คะแนน เท่าไร
THAI = "ทีมแพนเธอร์สยอมแพ้คะแนนเท่าไร"


def test_thai_is_cut_into_dictionary_words_as_lucene_cuts_it():
    assert Tokenizer("th")(THAI) == ["ทีม", "แพน", "เธอ", "ร์ส", "ยอม", "แพ้", "คะแนน", "เท่าไร"]
    # Words written without spaces, between spaces and punctuation, and Thai digits as ASCII digits.
    assert Tokenizer("th")("ประเทศไทย มีประชากร ๖๖ ล้านคน.") == ["ประเทศไทย", "มี", "ประชากร", "66", "ล้าน", "คน"]


def test_no_thai_vowel_or_tone_mark_is_split_from_its_consonant():
    text = "ทีมแพนเธอร์สยอมแพ้คะแนนเท่าไร ประเทศไทยมีประชากรหกสิบหกล้านคน ภาษาไทยเป็นภาษาราชการ"
    tokens = Tokenizer("th")(text)
    assert tokens and not [t for t in tokens if unicodedata.category(t[0]) == "Mn"], tokens
    assert "".join(tokens) == text.replace(" ", "")  # every character in exactly one word: no bigram overlap


def test_lao_khmer_and_myanmar_are_cut_into_words_too():
    assert Tokenizer("lo")("ພາສາລາວເປັນພາສາທາງການ") == ["ພາສາ", "ລາວ", "ເປັນ", "ພາສາ", "ທາງການ"]
    assert Tokenizer("km")("ភាសាខ្មែរជាភាសាផ្លូវការ") == ["ភាសាខ្មែរ", "ជា", "ភាសាផ្លូវការ"]
    assert Tokenizer("my")("မြန်မာဘာသာစကားသည်") == ["မြန်မာဘာသာ", "စကား", "သည်"]


def test_turkish_follows_lucenes_turkish_analyzer():
    # Lucene 9.9.1's TurkishAnalyzer gives exactly these tokens for this sentence.
    assert Tokenizer("tr")("Türkiye'nin başkenti Ankara'dır; İngiltere'de IŞIK ılık.") == \
        ["türki", "başke", "ankar", "ingilter", "ışık", "ılık"]
    # İ is i (Python's lower() gives i + U+0307, a token of its own spelling): one stem with the plain spelling.
    assert Tokenizer("tr")("İngiltere") == Tokenizer("tr")("ingiltere") == ["ingilter"]
    # The apostrophe suffix goes with its apostrophe (' or ’), not into a token of its own.
    assert Tokenizer("tr")("Türkiye'nin") == Tokenizer("tr")("Türkiye’nin") == Tokenizer("tr")("Türkiye") == ["türki"]
    assert Tokenizer("tr", stem=False)("I IŞIK") == ["ı", "ışık"]  # I is dotless ı, not i


def test_azerbaijani_is_lower_cased_the_turkic_way_and_other_languages_are_not():
    assert Tokenizer("az")("İRAN Işıq") == ["iran", "ışıq"]
    assert Tokenizer("en", stem=False)("IRAN") == ["iran"]


def test_a_language_without_a_rule_says_so_in_the_log_and_the_index_never_silently(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="polyrag.retrieval.tokenize"):
        tokenizer = Tokenizer("sw")
    line = "sw: no analyzer; Unicode word split, lower-case, no stemmer, stopwords kept"
    assert tokenizer.analysis == line
    assert line in caplog.text
    corpus = pd.DataFrame({"docid": ["a", "b"], "title": ["", ""], "text": ["Watoto wanacheza mpira", "Mto mkubwa"]})
    BM25Index.build(corpus, "sw").save(tmp_path / "sw")
    assert json.loads((tmp_path / "sw" / "polyrag_bm25.json").read_text())["analysis"] == line
    # A language with a rule says what it does, and logs nothing.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="polyrag.retrieval.tokenize"):
        assert Tokenizer("th").analysis.startswith("th: Unicode words, lower-case, ICU")
        assert Tokenizer("tr").analysis == ("tr: Unicode words, Turkic lower-case (İ->i, I->ı), apostrophe suffixes "
                                            "dropped, Snowball turkish stemmer, stopwords kept")
    assert not caplog.records


def test_a_pooled_index_records_each_languages_analysis(tmp_path):
    corpus = pd.DataFrame({"docid": ["en:a", "sw:b", "th:c"], "title": ["", "", ""],
                           "text": ["The rivers", "Mto mkubwa", THAI]})
    BM25Index.build(corpus, "pooled").save(tmp_path / "pool")
    analysis = json.loads((tmp_path / "pool" / "polyrag_bm25.json").read_text())["analysis"]
    assert sorted(analysis) == ["en", "sw", "th"]
    assert analysis["sw"].startswith("sw: no analyzer;") and not analysis["en"].startswith("en: no analyzer")
    # Loaded, it tokenizes a Thai question as its Thai passages were (dictionary words).
    found = BM25Index.load(tmp_path / "pool").search({"q": "คะแนนเท่าไร"}, k=1, language="th")
    assert found["docid"].tolist() == ["th:c"]


def test_an_index_tokenized_by_another_analysis_is_refused_not_searched_with_other_tokens(tmp_path):
    """A Thai index built with character bigrams, searched with dictionary words, would find
    nothing right and say nothing: the recorded analysis must be today's."""
    from polyrag.errors import DataError
    from polyrag.retrieval.index_files import write_files

    corpus = pd.DataFrame({"docid": ["a", "b"], "title": ["", ""], "text": [THAI, "ภาษาไทยเป็นภาษาราชการ"]})
    folder = tmp_path / "th"
    BM25Index.build(corpus, "th").save(folder)
    assert BM25Index.load(folder).search({"q": "คะแนนเท่าไร"}, k=1)["docid"].tolist() == ["a"]
    settings_file = folder / "polyrag_bm25.json"
    settings = json.loads(settings_file.read_text())
    for recorded, message in [("th: character bigrams", "its passages were tokenized as 'th: character bigrams'"),
                              (None, "a BM25 index built before polyrag recorded its analyzer; rebuild it")]:
        changed = {**settings, "analysis": recorded} if recorded else {k: v for k, v in settings.items() if k != "analysis"}
        settings_file.write_text(json.dumps(changed))
        write_files(folder)  # the folder is whole again: only the analysis differs
        with pytest.raises(DataError, match=message):
            BM25Index.load(folder)
