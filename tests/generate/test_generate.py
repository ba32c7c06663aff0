"""Generation requests per prompt style, and the prefill path for base models."""

from polyrag.data.demo import load_demo
from polyrag.generate.answers import build_requests
from polyrag.generate.prompts import answer_messages

SETTINGS = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 64, "seed": 3, "max_failure_fraction": 0.05}


def test_mirage_prompt_is_filled_per_question(repo):
    records = load_demo("zh", repo / "resources" / "demo")[:2]
    first, second = (answer_messages("mirage", r)[0]["content"] for r in records)
    assert first != second
    for record, text in zip(records, (first, second)):
        assert text.startswith(f"Question: {record['query']}\n\nContexts:\n")
        for passage in record["passages"]:
            assert f"[{passage['docid']}] {passage['title']} - {passage['text']}" in text
        assert "contexts written in Chinese" in text and "##Reason: {reason} ##Answer: {answer}." in text


def test_passages_are_not_html_escaped():
    record = {"query": "Is 1 < 2 & 3 > 2?", "language": "en", "passages": [
        {"docid": "a#0", "title": "", "text": 'Yes: 1 < 2 & "3" > 2.'}]}
    for style in ("mirage", "memerag", "bergen"):
        text = "\n".join(m["content"] for m in answer_messages(style, record))
        assert 'Yes: 1 < 2 & "3" > 2.' in text and "&lt;" not in text and "&amp;" not in text


def test_bergen_system_prompt_in_the_question_language(repo):
    record = load_demo("de", repo / "resources" / "demo")[0]
    system, user = answer_messages("bergen", record)
    assert system["role"] == "system" and system["content"].endswith("Antworte bitte auf Deutsch.")
    assert user["content"].startswith("Background:\nDocument 1: ")
    hindi = answer_messages("bergen", {**record, "language": "hi"})
    assert hindi[1]["content"].startswith("पृष्ठभूमि:\n")
    persian = answer_messages("bergen", {**record, "language": "fa"})  # BERGEN has no Persian prompt
    assert persian[0]["content"].endswith("Please reply in Persian.")


def test_cross_lingual_mirage_prompt_names_both_languages():
    record = {"query": "Wo?", "language": "de", "passage_language": "en",
              "passages": [{"docid": "x#0", "title": "T", "text": "There."}]}
    text = answer_messages("mirage", record)[0]["content"]
    assert "contexts written in English" in text and "your answer in German" in text


def test_passages_that_name_their_languages_set_the_contexts_language():
    """A pooled run's passages (retrieval.questions.top_passages) name each one's language; the
    prompt names those, not the question's passage_language."""
    record = {"query": "कहाँ?", "language": "hi", "passage_language": "hi", "passages": [
        {"docid": "1", "title": "", "text": "यहाँ।", "language": "hi"},
        {"docid": "en:1", "title": "", "text": "Here.", "language": "en"},
        {"docid": "en:2", "title": "", "text": "There.", "language": "en"}]}
    text = answer_messages("mirage", record)[0]["content"]
    assert "contexts written in Hindi and English" in text and "your answer in Hindi" in text
    three = {**record, "passages": [*record["passages"], {"docid": "de:1", "title": "", "text": "Da.", "language": "de"}]}
    assert "contexts written in Hindi, English and German" in answer_messages("mirage", three)[0]["content"]
    unnamed = {**record, "passage_language": "en", "passages": [{"docid": "x", "title": "", "text": "Here."}]}
    assert "contexts written in English" in answer_messages("mirage", unnamed)[0]["content"]


def test_response_prefix_makes_a_completion_request(repo):
    records = load_demo("en", repo / "resources" / "demo")[:2]
    chat = build_requests(records, SETTINGS)
    assert chat[0].is_chat and chat[0].stop == []
    settings = {**SETTINGS, "response_prefix": "##Answer: According to [", "stop": ["\n\n"]}
    [request, _] = build_requests(records, settings)
    assert not request.is_chat and request.stop == ["\n\n"]
    assert request.prompt.startswith(f"Question: {records[0]['query']}")
    assert request.prompt.endswith("##Answer: {answer}.\n\n##Answer: According to [")
