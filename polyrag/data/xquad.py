"""XQuAD as cross-lingual RAG: the question in language q, passages in language p.

XQuAD is fully parallel: articles, paragraphs and question ids line up across languages.
A question's own paragraph (in p) is the relevant passage; the other paragraphs of the same
article (in p) are the non-relevant ones; the gold answer (in q) is the reference.
"""

from __future__ import annotations

from pathlib import Path

from polyrag.data.io import cached_download, read_json
from polyrag.data.records import make_record, require
from polyrag.errors import DataError
from polyrag.seeds import rng_for

# A commit of github.com/google-deepmind/xquad; files are fetched from it and cached.
XQUAD_COMMIT = "1b99b75618185a95c825655f77eb21e020f7e2d7"
XQUAD_URL = "https://github.com/google-deepmind/xquad/raw/{revision}/xquad.{lang}.json"


def xquad_docid(article: int, paragraph: int) -> str:
    """The docid of a paragraph: its article's and its own position in the file (parallel across languages)."""
    return f"xq{article}#{paragraph}"


def xquad_file(lang: str, directory: str | None, revision: str | None, cache_dir: str,
               local_key: str = "data.dir or $POLYRAG_XQUAD_DIR") -> Path:
    """The local file in ``directory``, else the cached download at ``revision`` (None: the pinned
    commit); ``local_key`` names the setting of ``directory`` in the download error."""
    if directory:
        return Path(directory) / f"xquad.{lang}.json"
    url = XQUAD_URL.format(revision=revision or XQUAD_COMMIT, lang=lang)
    return cached_download(url, cache_dir, local_key=local_key)


def read_squad(path: Path) -> list[dict]:
    """Articles as ``{title, paragraphs: [{context, qas: [{id, question, answers}]}]}``, checked."""
    document = read_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise DataError(f"{path}: expected a SQuAD v1.1 object with a 'data' list")
    for a, article in enumerate(document["data"]):
        require(article, ("title", "paragraphs"), str(path), a)
        for p, paragraph in enumerate(article["paragraphs"]):
            require(paragraph, ("context", "qas"), f"{path} data[{a}].paragraphs", p)
            for q, qa in enumerate(paragraph["qas"]):
                require(qa, ("id", "question", "answers"), f"{path} data[{a}].paragraphs[{p}].qas", q)
                if not qa["answers"] or not qa["answers"][0].get("text"):
                    raise DataError(f"{path}: data[{a}].paragraphs[{p}].qas[{q}] (id {qa['id']}): no answer text")
    return document["data"]


def load_xquad(
    question_lang: str, passage_lang: str, options: dict, directory: str | None, cache_dir: str, seed: int
) -> list[dict]:
    q_path = xquad_file(question_lang, directory, options["revision"], cache_dir)
    p_path = xquad_file(passage_lang, directory, options["revision"], cache_dir)
    q_articles, p_articles = read_squad(q_path), read_squad(p_path)
    location = {
        qa["id"]: (a, p)
        for a, article in enumerate(p_articles)
        for p, paragraph in enumerate(article["paragraphs"])
        for qa in paragraph["qas"]
    }
    key = f"{question_lang}-{passage_lang}" if question_lang != passage_lang else question_lang
    records = []
    for article in q_articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["id"] not in location:
                    raise DataError(f"{p_path}: question id {qa['id']} of {q_path} has no paragraph here (not parallel)")
                a, p = location[qa["id"]]
                p_article = p_articles[a]
                docid = xquad_docid(a, p)
                others = [k for k in range(len(p_article["paragraphs"])) if k != p]
                rng = rng_for(seed, "xquad", key, qa["id"])
                others = [others[i] for i in rng.permutation(len(others))[: options["max_passages"] - 1]]
                passages = [
                    {"docid": xquad_docid(a, k), "title": p_article["title"], "text": p_article["paragraphs"][k]["context"]}
                    for k in [p, *others]
                ]
                passages = [passages[i] for i in rng.permutation(len(passages))]
                records.append(make_record(
                    str(q_path), len(records) + 1, query_id=qa["id"], query=qa["question"], passages=passages,
                    relevant_docids=[docid], reference_answer=f"{qa['answers'][0]['text']} [{docid}]",
                    language=question_lang, passage_language=passage_lang,
                ))
    return records
