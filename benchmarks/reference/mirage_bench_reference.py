"""Compute the deterministic features with the reference package ``mirage-bench`` 0.0.4.

Runs inside its own environment (``make bench-features`` builds ``.venv-mirage-bench`` with
``mirage-bench --no-deps`` plus only what the compared modules import), called by
``bench_features.py``:

    .venv-mirage-bench/bin/python benchmarks/reference/mirage_bench_reference.py INPUT.json OUTPUT.json

INPUT holds one item per answer: ``id, language, prediction`` (the raw ``##Answer: ...`` text),
``reference`` (same form), ``documents`` (docid -> text) and ``relevant_docids``. OUTPUT holds
the per-answer values and the seconds each feature group took.

The package's ``__init__`` files import every generator client (vllm, openai, anthropic, ...),
so the compared modules are imported with their parent packages registered empty: only
``evaluate/{language_detection,rouge_and_blue,context_map_recall,util,tokenizer}.py`` run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from mirage_packages import register_empty_parents  # beside this script


def import_compared_modules():
    register_empty_parents("evaluate")
    from mirage_bench.evaluate import context_map_recall, language_detection, rouge_and_blue, util

    return context_map_recall, language_detection, rouge_and_blue, util


def main(input_path: str, output_path: str) -> None:
    context_map_recall, language_detection, rouge_and_blue, util = import_compared_modules()
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0  # langdetect samples n-grams at random; the reference never seeds it
    items = json.loads(Path(input_path).read_text())
    values = {item["id"]: {} for item in items}
    seconds, notes = {}, []

    # Language: LanguageDetectionEvaluator.evaluate() itself raises KeyError ("other_language" is
    # incremented before it exists), so its detector is called on its own parsed text, per answer.
    start = time.perf_counter()
    detectors: dict = {}
    crashes = 0
    for item in items:
        language = item["language"]
        evaluator = detectors.setdefault(language, language_detection.LanguageDetectionEvaluator(language))
        text = util.parse_text_wo_citation(item["prediction"], regex=None, doc_ids=item["documents"])
        try:
            detected = evaluator.detector.detect(text)
        except Exception:  # langdetect raises on text without letters
            crashes += 1
            detected = {}
        values[item["id"]]["target_language"] = detected.get(language, 0.0)
        values[item["id"]]["english_language"] = detected.get("en", 0.0)
    seconds["language"] = time.perf_counter() - start
    try:
        first = items[0]
        language_detection.LanguageDetectionEvaluator("de").evaluate(
            {first["id"]: first["prediction"]}, {first["id"]: first["documents"]})
        notes.append("LanguageDetectionEvaluator.evaluate ran")
    except KeyError as error:
        notes.append(f"LanguageDetectionEvaluator.evaluate raises KeyError {error}; its detector was called directly")
    if crashes:
        notes.append(f"langdetect raised on {crashes} answers (scored 0 here, as the reference initialises them)")

    # Citations: the evaluator as published, on all answers at once.
    start = time.perf_counter()
    scores = context_map_recall.ContextMAPRecallEvaluator("xx").evaluate(
        {item["id"]: item["prediction"] for item in items},
        {item["id"]: item["documents"] for item in items},
        {item["id"]: {docid: 1 for docid in item["relevant_docids"]} for item in items},
    )
    for query_id, score in scores.items():
        values[query_id]["citation_map@10"] = score["citation_MAP@10"]
        values[query_id]["citation_recall@10"] = score["citation_Recall@10"]
    seconds["citations"] = time.perf_counter() - start

    # ROUGE-L: RougeBleuEvaluator's constructor calls evaluate.load("sacrebleu"), which fetches a
    # script from the Hugging Face Hub (unreachable here), so its ROUGE scorer is built with the
    # constructor's own arguments and scored as evaluate() does.
    from multilingual_rouge import rouge_scorer

    start = time.perf_counter()
    scorers, unavailable = {}, set()
    for item in items:
        language = item["language"]
        if language not in scorers and language not in unavailable:
            try:
                scorers[language] = rouge_scorer.RougeScorer(
                    ["rougeL"], use_stemmer=language in rouge_and_blue.WITH_STEMMER, lang=util.ISO_TO_LANG[language])
            except LookupError:  # its Snowball stemmers want NLTK's stopwords corpus from GitHub
                unavailable.add(language)
        if language in unavailable:
            continue
        answer = util.parse_text_wo_citation(item["prediction"], regex=r"Answer:(.*?)$", doc_ids=item["documents"])
        reference = util.parse_text_wo_citation(item["reference"], regex=r"Answer:(.*?)$", doc_ids=item["documents"])
        values[item["id"]]["answer_rougeL"] = round(scorers[language].score(answer, reference)["rougeL"].fmeasure, 4)
    seconds["answer_rougeL"] = time.perf_counter() - start
    if unavailable:
        notes.append(f"answer_rougeL not run for {sorted(unavailable)}: its stemmers need NLTK's 'stopwords'"
                     " corpus, which nltk.download fetches from GitHub (unreachable here)")
    notes.append("answer_bleu not run: evaluate.load('sacrebleu') needs the Hugging Face Hub")

    Path(output_path).write_text(json.dumps({"values": values, "seconds": seconds, "notes": notes}))


if __name__ == "__main__":
    main(*sys.argv[1:])
