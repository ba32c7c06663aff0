"""Mock RAG systems: realised error rates equal the configured ones, corruptions are what they say."""

from __future__ import annotations

import pytest

from polyrag.answer_parsing import parse_sectioned
from polyrag.data.demo import load_demo
from polyrag.generate.answers import build_requests, foreign_answers
from polyrag.llm.mock import CORRUPTIONS, MockBackend

SETTINGS = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 256, "seed": 42, "max_failure_fraction": 0.05}


def answer_all(backend, records, foreign):
    requests = build_requests(records, SETTINGS, foreign)
    texts = dict(backend.stream(requests))
    return [parse_sectioned(texts[i].text, [p["docid"] for p in r["passages"]]) for i, r in enumerate(records)]


def is_correct(parsed, record) -> bool:
    return parsed.answer == record["reference_answer"] and set(parsed.cited_docids) <= set(record["relevant_docids"])


@pytest.fixture(scope="module")
def demo(repo):
    directory = repo / "resources" / "demo"
    return {lang: load_demo(lang, directory) for lang in ("en", "de", "hi", "zh")}


@pytest.mark.parametrize("error_rate", [0.0, 0.2, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("lang", ["en", "hi", "zh"])
def test_error_rate_is_exact(demo, error_rate, lang):
    records = demo[lang]
    foreign = foreign_answers(records, demo["de" if lang == "en" else "en"], 42, "m", lang)
    parsed = answer_all(MockBackend("m", error_rate, seed=42), records, foreign)
    wrong = sum(not is_correct(p, r) for p, r in zip(parsed, records))
    assert wrong == round(error_rate * len(records))


def test_error_rate_on_many_questions():
    passages = [{"docid": f"d{i}#0", "title": "", "text": f"Fact {i}."} for i in range(4)]
    records = [
        {"query_id": str(k), "query": "q?", "passages": passages, "relevant_docids": ["d0#0"],
         "reference_answer": "Fact 0 [d0#0].", "language": "en"}
        for k in range(1000)
    ]
    for rate in (0.05, 0.2, 0.37):
        parsed = answer_all(MockBackend("m", rate, corruptions=["non_relevant_answer"]), records, None)
        assert sum(not is_correct(p, r) for p, r in zip(parsed, records)) == round(rate * 1000)


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_each_corruption(demo, kind):
    records = demo["hi"]
    foreign = foreign_answers(records, demo["en"], 42, "m", "hi")
    parsed = answer_all(MockBackend("m", 1.0, corruptions=[kind]), records, foreign)
    for answer, record in zip(parsed, records):
        relevant = set(record["relevant_docids"])
        non_relevant = {p["docid"] for p in record["passages"]} - relevant
        if kind == "wrong_language":
            assert answer.answer == foreign[record["query_id"]]
            assert not any("\u0900" <= ch <= "\u097f" for ch in answer.answer)  # no Devanagari
        elif kind == "refusal":
            assert answer.cited_docids == [] and "उत्तर नहीं" in answer.answer
        else:
            assert answer.cited_docids and set(answer.cited_docids) <= non_relevant
            if kind == "non_relevant_answer":
                cited = next(p for p in record["passages"] if p["docid"] == answer.cited_docids[0])
                assert answer.answer.split(" [")[0] in cited["text"]


def test_same_seed_same_answers_other_seed_other_choice(demo):
    records = demo["en"]
    first = answer_all(MockBackend("m", 0.5, seed=1), records, None)
    again = answer_all(MockBackend("m", 0.5, seed=1), records, None)
    other = answer_all(MockBackend("m", 0.5, seed=2), records, None)
    assert [p.answer for p in first] == [p.answer for p in again]
    assert [is_correct(p, r) for p, r in zip(first, records)] != [is_correct(p, r) for p, r in zip(other, records)]


def test_bad_mock_settings():
    with pytest.raises(ValueError, match="error_rate"):
        MockBackend("m", 1.2)
    with pytest.raises(ValueError, match="corruptions"):
        MockBackend("m", 0.1, corruptions=["typo"])


MIRAGE_BENCH_LANGUAGES = "ar bn de en es fa fi fr hi id ja ko ru sw te th yo zh".split()
XQUAD_LANGUAGES = "ar de el en es hi ro ru th tr vi zh".split()


@pytest.mark.parametrize("language", sorted(set(MIRAGE_BENCH_LANGUAGES) | set(XQUAD_LANGUAGES)))
def test_refusals_are_in_the_question_language(language):
    from polyrag.features.language import language_probabilities
    from polyrag.generate.prompts import refusal

    text = refusal(language)
    assert text, f"no refusal for {language}"
    # langid where it knows the language, lingua for Yoruba (the project's detector either way).
    probabilities = language_probabilities(text, language)
    assert max(probabilities, key=probabilities.get) == language, (text, sorted(probabilities.items(),
                                                                                key=lambda kv: -kv[1])[:3])
    if language != "en":
        assert text != refusal("en")


def test_a_language_without_a_refusal_is_an_error_not_english():
    from polyrag.config.validate import check_mock_refusals
    from polyrag.errors import ConfigError, DataError

    passages = [{"docid": "d0#0", "title": "", "text": "Fakt."}]
    records = [{"query_id": "1", "query": "q?", "passages": passages, "relevant_docids": ["d0#0"],
                "reference_answer": "Fakt [d0#0].", "language": "xx"}]
    with pytest.raises(DataError, match="no refusal in language 'xx'"):
        answer_all(MockBackend("m", 1.0, corruptions=["refusal"]), records, None)
    with pytest.raises(ConfigError, match=r"my.yaml: models.m: a mock system's refusal has no translation in \['xx'\]"):
        check_mock_refusals("m", ["en", "xx-en"], "my.yaml")
    check_mock_refusals("m", MIRAGE_BENCH_LANGUAGES + XQUAD_LANGUAGES, "my.yaml")
