"""The data stage: questions and passages for one language key from the configured source."""

from __future__ import annotations

import logging

from polyrag.data.demo import load_demo
from polyrag.data.mirage_bench import load_mirage_bench
from polyrag.data.miracl import memerag_context, mirage_context, read_miracl
from polyrag.data.records import mark_arena, subsample
from polyrag.data.xquad import load_xquad
from polyrag.errors import DataError

log = logging.getLogger(__name__)


def split_language_key(key: str) -> tuple[str, str]:
    """``de`` -> (de, de); ``de-en`` -> questions in de, passages in en."""
    question, _, passage = key.partition("-")
    return question, passage or question


def load_source(config: dict, key: str) -> list[dict]:
    data, seed, cache_dir = config["data"], config["seed"], config["cache_dir"]
    question_lang, passage_lang = split_language_key(key)
    source = data["source"]
    if source == "demo":
        return load_demo(key, data["dir"])
    if source == "mirage_bench":
        return load_mirage_bench(key, data["mirage_bench"], data["dir"], cache_dir)
    if source == "miracl":
        options = data["miracl"]
        records = read_miracl(key, options, data["dir"], cache_dir)
        if options["context"] == "memerag":
            return memerag_context(records, options["top_k"])
        return mirage_context(records, key, options, seed)
    if source == "xquad":
        return load_xquad(question_lang, passage_lang, data["xquad"], data["dir"], cache_dir, seed)
    raise ValueError(f"unknown data source {source!r}")


def select_questions(config: dict, key: str, time_filter_llm=None) -> list[dict]:
    """Records for one language key: loaded, optionally filtered and capped, arena sample marked."""
    data, seed = config["data"], config["seed"]
    records = load_source(config, key)
    log.info("%s: %d questions from %s", key, len(records), data["source"])
    if time_filter_llm is not None:
        from polyrag.data.time_filter import drop_time_dependent

        records = drop_time_dependent(records, time_filter_llm, seed, config["generation"]["max_failure_fraction"])
    # seeded without the language: parallel data keep the same questions in every language (subsample)
    records = subsample(records, data["max_questions"], seed, "questions")
    if not records:
        raise DataError(f"language {key!r}: no questions left from source {data['source']!r}")
    records = mark_arena(records, data["arena_queries"], seed)
    log.info("%s: %d questions kept, %d in the arena sample", key, len(records), sum(r["arena"] for r in records))
    return records
