"""The embedded demo benchmark meets its specification."""

import re
import unicodedata

from polyrag.answer_parsing import parse_citations
from polyrag.data.demo import load_demo

DOCID = re.compile(r"^d\d+#\d+$")


def scripts(text: str) -> set[str]:
    return {unicodedata.name(ch, "?").split()[0] for ch in text if ch.isalpha()}


def test_demo_languages_questions_and_passages(repo):
    files = sorted(p.stem for p in (repo / "resources" / "demo").glob("*.jsonl"))
    assert len(files) >= 6
    non_latin = set()
    ids_per_language = {}
    for lang in files:
        records = load_demo(lang, repo / "resources" / "demo")
        assert len(records) >= 12, lang
        ids_per_language[lang] = [r["query_id"] for r in records]
        for record in records:
            docids = [p["docid"] for p in record["passages"]]
            relevant = set(record["relevant_docids"])
            assert 6 <= len(docids) <= 10
            assert all(DOCID.match(d) for d in docids)
            assert len(relevant) >= 1 and len(set(docids) - relevant) >= 2
            cited = parse_citations(record["reference_answer"], docids)
            assert cited and set(cited) <= relevant, (lang, record["query_id"])
            text_scripts = scripts(record["query"] + " ".join(p["text"] for p in record["passages"]))
            if "LATIN" not in text_scripts:
                non_latin.add(lang)
    assert len(non_latin) >= 2, non_latin
    # Parallel across languages: the same questions everywhere (mock systems rely on it).
    assert len({tuple(ids) for ids in ids_per_language.values()}) == 1
