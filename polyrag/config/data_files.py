"""The local data files a validated config points at, per job, and the check that they exist.

The rules list these files as inputs, so that replacing or editing one reruns the jobs that read
it (and everything after them); ``check_local_data`` stops the run before any job when one is
missing, naming the config key. Only paths are computed here (a few ``stat`` calls at most), so
planning stays cheap; downloads (a null directory) are cached by their pinned URL and not listed.
"""

from __future__ import annotations

import os
from pathlib import Path

from polyrag.errors import ConfigError, DataError
from polyrag.meta_eval.memerag import memerag_file
from polyrag.systems.answer_files import (answer_paths, corpus_paths, passage_file_paths, passage_file_spec,
                                          reads_answer_files, system_files)

def question_files(config: dict, lang: str) -> list[str]:
    """The local files ``select_questions`` reads for the language key ``lang`` (data.dir)."""
    data = config["data"]
    if not data["dir"]:
        return []  # downloaded (Hub or pinned XQuAD commit) and cached
    if data["source"] == "xquad":
        question_lang, _, passage_lang = lang.partition("-")
        return list(dict.fromkeys(str(Path(data["dir"]) / f"xquad.{code}.json")
                                  for code in (question_lang, passage_lang or question_lang)))
    return [str(Path(data["dir"]) / f"{lang}.jsonl")]  # demo, mirage_bench, miracl


def memerag_files(config: dict, lang: str) -> list[str]:
    """The MEMERAG file ``memerag_sentences`` reads for ``lang`` (meta_eval.dir); where none
    exists, the upstream layout's path, which Snakemake then reports as missing."""
    meta_eval = config["meta_eval"]
    if not meta_eval or not meta_eval["dir"]:
        return []
    try:
        return [str(memerag_file(lang, meta_eval["variant"], meta_eval["dir"], cache_dir=""))]
    except DataError:
        return [str(Path(meta_eval["dir"]) / meta_eval["variant"] / f"{lang}.jsonl")]


def mars_gold_files(config: dict, pair: str) -> list[str]:
    """The XQuAD files ``mars_gold`` reads for ``pair`` (mars.gold.dir): its passage and question
    languages and the language of its wrong-language answers."""
    from polyrag.mars.gold import wrong_language  # here: polyrag.mars imports pandas and numpy
    from polyrag.mars.labels import split_pair

    mars = config["mars"]
    if not mars or not mars["gold"]["dir"]:
        return []
    passage_lang, question_lang = split_pair(pair)
    try:
        other = [wrong_language(pair, mars["second_languages"])]
    except DataError:
        other = []  # the job stops with that message
    return [str(Path(mars["gold"]["dir"]) / f"xquad.{lang}.json")
            for lang in dict.fromkeys([passage_lang, question_lang, *other])]


def training_files(config: dict, languages: list[str]) -> list[str]:
    """The local files ``finetune_questions`` reads (finetune.training.dir)."""
    training = (config["finetune"] or {}).get("training")
    if not training or not training["dir"]:
        return []
    return [str(Path(training["dir"]) / f"{lang}.jsonl") for lang in languages]


def recorded_files(config: dict, judge: str, languages: list[str]) -> list[str]:
    """The local verdict files of a ``recorded`` judge (judges.{judge}.dir), else none."""
    entry = config["judges"][judge]
    if entry["backend"] != "recorded" or not entry.get("dir"):
        return []
    return [str(Path(entry["dir"]) / f"{lang}.jsonl") for lang in languages]


def system_answer_files(config: dict, model: str) -> list[str]:
    """The answer files (one per language) and corpus files of a system read from files
    (models.{model}.answers, corpus), or the passage files of a model given its passages from files
    (models.{model}.passages.file, corpus), else none: the inputs of its generation job."""
    entry = config["models"][model]
    if not reads_answer_files(entry):
        return passage_file_paths(entry, config["languages"])
    return system_files(entry, config["languages"])


def _from_variable(value: str, variable: str) -> str:
    return f" (from ${variable})" if os.environ.get(variable) == value else ""


def check_local_data(config: dict, source: str, training_languages: list[str], gold_pairs: list[str]) -> None:
    """Every local data file the config implies exists; else one message naming the key."""
    data = config["data"]
    for lang in config["languages"]:
        for path in question_files(config, lang):
            if not Path(path).is_file():
                origin = _from_variable(data["dir"], "POLYRAG_XQUAD_DIR") if data["source"] == "xquad" else ""
                raise ConfigError(f"{source}: data.dir{origin}: {path} does not exist (data.source {data['source']}, "
                                  f"language {lang!r} of languages)")
    meta_eval = config["meta_eval"]
    if meta_eval and meta_eval["dir"]:
        for lang in meta_eval["languages"]:
            try:
                memerag_file(lang, meta_eval["variant"], meta_eval["dir"], cache_dir="")
            except DataError as error:
                origin = _from_variable(meta_eval["dir"], "POLYRAG_MEMERAG_DIR")
                raise ConfigError(f"{source}: meta_eval.dir{origin}: {error} (meta_eval.languages)") from None
    for pair in gold_pairs:
        for path in mars_gold_files(config, pair):
            if not Path(path).is_file():
                origin = _from_variable(config["mars"]["gold"]["dir"], "POLYRAG_XQUAD_DIR")
                raise ConfigError(f"{source}: mars.gold.dir{origin}: {path} does not exist (MARS gold data of the "
                                  f"pair {pair})")
    for path, lang in zip(training_files(config, training_languages), training_languages):
        if not Path(path).is_file():
            raise ConfigError(f"{source}: finetune.training.dir: {path} does not exist (training questions in {lang!r})")
    for name in config["judges"]:
        for path, lang in zip(recorded_files(config, name, config["languages"]), config["languages"]):
            if not Path(path).is_file():
                raise ConfigError(f"{source}: judges.{name}.dir: {path} does not exist (recorded verdicts in {lang!r})")
    for name, entry in config["models"].items():
        written = name in (config.get("systems") or {})  # a retrieved system's passage files are the workflow's
        for path in passage_file_paths(entry, config["languages"]) if passage_file_spec(entry) and not written else ():
            if not Path(path).is_file():
                raise ConfigError(f"{source}: models.{name}.passages: {path} does not exist (a file of the passages "
                                  f"model {name!r} is given, or their corpus)")
        if not reads_answer_files(entry):
            continue
        for path, lang in zip(answer_paths(entry, config["languages"]), config["languages"]):
            if not Path(path).is_file():
                raise ConfigError(f"{source}: models.{name}.answers: {path} does not exist (the answers of system "
                                  f"{name!r} in {lang!r})")
        for path in corpus_paths(entry, config["languages"]):
            if not Path(path).is_file():
                raise ConfigError(f"{source}: models.{name}.corpus: {path} does not exist (the passages the docids of "
                                  f"system {name!r} are looked up in)")
