"""MARS synthetic data for one passage-language x question-language pair.

1. Sample passages of the corpus (in the passage language), truncated by embedding-model tokens.
2. Ask the generator for a question in the question language with the few-shot prompt that names
   both languages (``prompts/mars/question.j2``).
3. Keep a question only if it is usable (at least 3 words, not a duplicate) and passes the
   round-trip filter (its passage is retrieved at rank 1 among all corpus passages).
4. Answer each kept question in its language and, for language-consistency negatives, in the
   wrong language (``prompts/mars/answer.j2``); an item whose answer the language detector puts
   in another language than the question's is left out (small generators often ignore the
   language asked for; its LC=1 label would be wrong).
5. Add negatives as MARS builds them (``negatives.with_negatives``); a wrong-language answer equal
   to the answer or not detected as the wrong language gives no LC negative (counted).

Every count along the way is returned, so a pair that yields little is reported, not hidden.
"""

from __future__ import annotations

import logging

import pandas as pd

from polyrag.errors import DataError
from polyrag.generate.prompts import language_name
from polyrag.llm.client import LLM
from polyrag.llm.types import Request
from polyrag.mars.gold import wrong_language
from polyrag.mars.labels import parse_label, split_pair
from polyrag.features.language import detected_language
from polyrag.mars.negatives import label_counts, with_negatives
from polyrag.mars.retrieval_filter import round_trip_filter
from polyrag.prompts import render
from polyrag.seeds import rng_for
from polyrag.text import word_tokens

log = logging.getLogger(__name__)

MIN_QUESTION_WORDS = 3  # words of polyrag.text.word_tokens: character bigrams for zh/ja/th


def is_completion_model(entry: dict) -> bool:
    """Base models (a prefilled answer start, or completion mode) continue the few-shot text."""
    return entry.get("response_prefix") is not None or entry.get("mode") == "completion"


def first_line(text: str | None, label: str) -> str:
    """The generated field: its first non-empty line, without an echoed ``Question (X):`` label."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith(label):
            line = line.split(":", 1)[-1].strip()
        line = line.strip('"“”«»').strip()
        if line:
            return line
    return ""


def few_shot_from_gold(gold: pd.DataFrame, count: int, pair: str) -> tuple[list[dict], list[dict]]:
    """(examples, wrong-language examples) from the gold rows whose role is few_shot."""
    rows = gold[gold["role"] == "few_shot"].head(count)
    if rows.empty:
        raise DataError(f"pair {pair}: no few-shot examples in the gold data")
    examples = rows[["Query", "Document", "Answer"]].to_dict("records")
    wrong = rows[["Query", "Document"]].assign(Answer=rows["Wrong_Language_Answer"]).to_dict("records")
    return examples, wrong


def few_shot_from_file(table: pd.DataFrame, path: str, pair: str, count: int) -> tuple[list[dict], list[dict]]:
    """Examples of ``pair`` from a TSV in the ARES/MARS schema: rows with a Language_Consistency_Label
    of No are the wrong-language examples, the others the positive ones."""
    missing = [c for c in ("Query", "Document", "Answer", "doc_lang", "qa_lang") if c not in table.columns]
    if missing:
        raise DataError(f"{path}: few-shot file has no column {missing[0]!r}")
    passage_lang, question_lang = split_pair(pair)
    rows = table[(table["doc_lang"] == passage_lang) & (table["qa_lang"] == question_lang)]
    if rows.empty:
        raise DataError(f"{path}: no few-shot examples for language pair {pair} "
                        f"(doc_lang {passage_lang}, qa_lang {question_lang})")
    if "Language_Consistency_Label" in rows.columns:
        lc = [parse_label(v, f"{path}: Language_Consistency_Label") for v in rows["Language_Consistency_Label"]]
        is_wrong = pd.Series([v == 0.0 for v in lc], index=rows.index)
    else:
        is_wrong = pd.Series(False, index=rows.index)
    examples = rows[~is_wrong][["Query", "Document", "Answer"]].head(count).to_dict("records")
    wrong = rows[is_wrong][["Query", "Document", "Answer"]].head(count).to_dict("records")
    if not examples or not wrong:
        kind = "positive" if not examples else "wrong-language (Language_Consistency_Label No)"
        raise DataError(f"{path}: no {kind} few-shot examples for language pair {pair}")
    return examples, wrong


def truncate_examples(examples: list[dict], max_tokens: int, embedder) -> list[dict]:
    return [{**e, "Document": embedder.truncate(e["Document"], max_tokens)} for e in examples]


def requests_for(texts: list[str], entry: dict, settings: dict, max_tokens: int, seed: int) -> list[Request]:
    if is_completion_model(entry):
        return [Request(prompt=t, temperature=settings["temperature"], max_tokens=max_tokens, seed=seed,
                        stop=["\n"]) for t in texts]
    return [Request(messages=[{"role": "user", "content": t}], temperature=settings["temperature"],
                    max_tokens=max_tokens, seed=seed) for t in texts]


def generate_synthetic(llm: LLM, entry: dict, pair: str, corpus: list[str], examples: tuple[list[dict], list[dict]],
                       settings: dict, embedder, seed: int) -> tuple[pd.DataFrame, dict]:
    """Labelled synthetic examples of one pair, and the counts of every step.

    ``corpus`` holds the pair's passages, already truncated and without duplicates; ``settings``
    is ``mars.generation`` plus ``documents``.
    """
    passage_lang, question_lang = split_pair(pair)
    if len(corpus) < 2:
        raise DataError(f"pair {pair}: the corpus has {len(corpus)} passages in {passage_lang!r}; "
                        "MARS needs at least 2 (one to ask about, others for negatives and the filter)")
    other_lang = wrong_language(pair, settings["second_languages"])
    positive_examples, wrong_examples = examples
    rng = rng_for(seed, "mars", "synthetic", pair)
    chosen = sorted(rng.permutation(len(corpus))[: settings["documents"]].tolist())
    chat = not is_completion_model(entry)
    names = {"passage_language": language_name(passage_lang), "question_language": language_name(question_lang)}

    prompts = [render("mars/question.j2", chat=chat, examples=positive_examples, document=corpus[i], **names)
               for i in chosen]
    outputs = llm.generate(requests_for(prompts, entry, settings, settings["question_max_tokens"], seed),
                           desc=f"synthetic questions {pair}")
    seen = {" ".join(word_tokens(e["Query"])) for e in positive_examples}
    questions, sources, stats = [], [], {"pair": pair, "corpus_passages": len(corpus), "documents": len(chosen),
                                         "llm_failures": 0, "questions_unusable": 0}
    for i, response in zip(chosen, outputs):
        if not response.ok:
            stats["llm_failures"] += 1
            continue
        question = first_line(response.text, "Question")
        key = " ".join(word_tokens(question))
        if len(word_tokens(question)) < MIN_QUESTION_WORDS or key in seen:
            stats["questions_unusable"] += 1
            continue
        seen.add(key)
        questions.append(question)
        sources.append(i)
    kept = round_trip_filter(questions, sources, corpus, embedder) if questions else []
    stats["questions_usable"] = len(questions)
    stats["filter_kept"] = int(sum(kept))
    stats["filter_kept_share"] = round(stats["filter_kept"] / len(questions), 4) if questions else None
    questions = [q for q, keep in zip(questions, kept) if keep]
    sources = [s for s, keep in zip(sources, kept) if keep]

    def answers(language: str, answer_examples: list[dict], rows: pd.DataFrame) -> list[str]:
        texts = [render("mars/answer.j2", chat=chat, examples=answer_examples, answer_column="Answer",
                        answer_language=language_name(language), document=row.Document, question=row.Query, **names)
                 for row in rows.itertuples()]
        responses = llm.generate(requests_for(texts, entry, settings, settings["answer_max_tokens"], seed),
                                 desc=f"synthetic answers {pair} ({language})")
        return [first_line(r.text, "Answer") if r.ok else "" for r in responses]

    positives = pd.DataFrame({
        "Query": questions, "Document": [corpus[s] for s in sources], "doc_lang": passage_lang,
        "qa_lang": question_lang, "wrong_lang": other_lang,
    })
    positives.insert(2, "Answer", answers(question_lang, positive_examples, positives))
    empty = positives["Answer"] == ""
    stats["answers_empty"] = int(empty.sum())
    # An answer detected in another language would be labelled LC=1 wrongly; one without letters
    # (a number) has no language and is kept.
    detected = positives["Answer"].map(lambda a: detected_language(a, question_lang) if a else None)
    off_language = ~empty & detected.notna() & (detected != question_lang)
    stats["answers_not_in_question_language"] = int(off_language.sum())
    positives = positives[~empty & ~off_language].reset_index(drop=True)
    # Wrong-language answers only for the kept questions: a dropped one's would be paid for nothing.
    positives.insert(3, "Wrong_Language_Answer", answers(other_lang, wrong_examples, positives))
    stats["positives"] = len(positives)
    if len(positives) < 2:
        raise DataError(
            f"pair {pair}: the generator produced {len(positives)} usable question-answer pairs (at least 2 "
            f"are needed): {stats['documents']} passages asked, {stats['llm_failures']} LLM failures, "
            f"{stats['questions_unusable']} unusable questions, {stats['questions_usable'] - stats['filter_kept']} "
            f"not retrieved at rank 1, {stats['answers_empty']} empty answers, "
            f"{stats['answers_not_in_question_language']} answers not in the question's language"
        )
    table, stats["lc_negatives_dropped"] = with_negatives(positives, rng, passage_pool=corpus)
    stats["rows"] = len(table)
    stats["labels"] = label_counts(table)
    log.info("pair %s: %s", pair, {k: v for k, v in stats.items() if k != "labels"})
    return table, stats
