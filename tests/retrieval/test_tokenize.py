"""BM25's tokens per language: stemmed words, bigrams for scripts written without spaces."""

from __future__ import annotations

import pytest

from polyrag.errors import ConfigError
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


def test_stopwords_are_optional_and_refused_where_no_list_exists():
    assert Tokenizer("en", stopwords=True)("The rivers were flowing into the sea") == ["river", "were", "flow", "sea"]
    with pytest.raises(ConfigError, match="no stopword list for 'hi'"):
        Tokenizer("hi", stopwords=True)
