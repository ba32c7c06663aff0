"""Gold (question, passage, answer) triples from XQuAD for MARS: few-shot examples, the
gold-built calibration set and the mock RAG systems of the meta-evaluation.

XQuAD is parallel across languages, so one question id names the same question in every
language and a pair ``p-q`` takes the paragraph in p and the question and answer in q. The
wrong-language answer is the parallel answer in p (or, for a same-language pair, in the first
of ``second_languages`` that differs from q).

Roles are given per paragraph, the same in every pair, so no paragraph (nor any translation of
it) serves two roles: the first shuffled paragraphs are few-shot examples (one question each),
the next ones the calibration set, the rest the pool for mock systems and the XQuAD corpus.
Questions the workflow evaluates (``exclude_ids``) never take a role.
"""

from __future__ import annotations

import logging
from math import ceil

import pandas as pd

from polyrag.data.xquad import read_squad, xquad_file
from polyrag.errors import DataError
from polyrag.features.bergen import normalize
from polyrag.mars.labels import split_pair
from polyrag.seeds import rng_for

log = logging.getLogger(__name__)

ROLES = ("few_shot", "calibration", "pool")
EXAMPLES_PER_CALIBRATION_ITEM = 4  # a positive and its CR, AR and LC negatives (negatives.with_negatives)


def wrong_language(pair: str, second_languages: list[str]) -> str:
    passage_lang, question_lang = split_pair(pair)
    if passage_lang != question_lang:
        return passage_lang
    for lang in second_languages:
        if lang != question_lang:
            return lang
    raise DataError(f"pair {pair}: mars.second_languages {second_languages} has no language other than "
                    f"{question_lang!r} for wrong-language answers")


def paragraph_roles(articles: list[dict], few_shot: int, calibration_questions: int, seed: int,
                    exclude_ids: set[str]) -> dict[tuple[int, int], str]:
    """Role of every paragraph ``(article, paragraph)``, from a seeded shuffle of the paragraphs."""
    paragraphs = [(a, p) for a, article in enumerate(articles) for p in range(len(article["paragraphs"]))]
    order = rng_for(seed, "mars", "gold-roles").permutation(len(paragraphs))
    roles, few_shot_left, calibration_left = {}, few_shot, calibration_questions
    for index in order:
        a, p = paragraphs[index]
        usable = [qa for qa in articles[a]["paragraphs"][p]["qas"] if qa["id"] not in exclude_ids]
        if few_shot_left > 0 and usable:
            roles[(a, p)] = "few_shot"
            few_shot_left -= 1
        elif calibration_left > 0 and usable:
            roles[(a, p)] = "calibration"
            calibration_left -= len(usable)
        else:
            roles[(a, p)] = "pool"
    return roles


def gold_items(pair: str, *, second_languages: list[str], directory: str | None, revision: str | None, cache_dir: str,
               seed: int, few_shot: int, calibration_size: int, exclude_ids: set[str]) -> pd.DataFrame:
    """One row per usable XQuAD question of ``pair`` with its role, texts and wrong-language answer."""
    passage_lang, question_lang = split_pair(pair)
    other_lang = wrong_language(pair, second_languages)
    languages = {passage_lang, question_lang, other_lang}
    articles = {lang: read_squad(xquad_file(lang, directory, revision, cache_dir,
                                            local_key="mars.gold.dir or $POLYRAG_XQUAD_DIR"))
                for lang in languages}
    # Roles come from the question language's file: the same ids and layout in every language.
    calibration_questions = ceil(calibration_size / EXAMPLES_PER_CALIBRATION_ITEM)
    roles = paragraph_roles(articles[question_lang], few_shot, calibration_questions, seed, exclude_ids)
    answers = {lang: {qa["id"]: qa["answers"][0]["text"]
                      for article in articles[lang] for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
               for lang in languages}
    rows, excluded = [], 0
    for a, article in enumerate(articles[question_lang]):
        for p, paragraph in enumerate(article["paragraphs"]):
            passage = articles[passage_lang][a]["paragraphs"][p]["context"]
            qas = paragraph["qas"]
            if roles[(a, p)] == "few_shot":  # one example per paragraph, the rest of it unused
                qas = [qa for qa in qas if qa["id"] not in exclude_ids]
                # Prefer a question whose parallel answer is another string: one that is the same
                # (a name, a number) teaches the generator to copy it as the wrong-language answer.
                # (String equality is symmetric, so both pairs of two languages pick the same one.)
                qas = sorted(qas, key=lambda qa: normalize(qa["answers"][0]["text"])
                             == normalize(answers[other_lang].get(qa["id"], "")))[:1]
            for qa in qas:
                if qa["id"] in exclude_ids:
                    excluded += 1
                    continue
                if qa["id"] not in answers[other_lang]:
                    raise DataError(f"XQuAD {other_lang}: question id {qa['id']} is missing (files not parallel)")
                rows.append({
                    "id": qa["id"], "role": roles[(a, p)], "paragraph": f"xq{a}#{p}",
                    "Query": qa["question"], "Document": passage, "Answer": qa["answers"][0]["text"],
                    "Wrong_Language_Answer": answers[other_lang][qa["id"]],
                    "doc_lang": passage_lang, "qa_lang": question_lang, "wrong_lang": other_lang,
                })
    log.info("XQuAD pair %s: %d questions (%s); %d evaluated questions excluded", pair, len(rows),
             ", ".join(f"{role} {sum(r['role'] == role for r in rows)}" for role in ROLES), excluded)
    return pd.DataFrame(rows)
