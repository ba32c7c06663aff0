"""The local data files a validated config points at, per job, and the check that they exist.

The rules list these files as inputs, so that replacing or editing one reruns the jobs that read
it (and everything after them); ``check_local_data`` stops the run before any job when one is
missing, naming the config key. Only paths are computed here (a few ``stat`` calls at most), so
planning stays cheap; downloads (a null directory) are cached by their pinned URL and not listed.
"""

from __future__ import annotations

import os
from pathlib import Path

from polyrag.config.patterns import check_placeholders
from polyrag.config.queries import model_languages
from polyrag.config.retrieval import DEMO_CORPUS_FOLDERS, corpus_language, corpus_source_files
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
    entry, languages = config["models"][model], model_languages(config, model)  # a file for each it answers
    if not reads_answer_files(entry):
        return passage_file_paths(entry, languages)
    return system_files(entry, languages)


def parallel_docids(config: dict, retriever: str, workflow_dir: Path) -> bool:
    """Whether ``retriever``'s corpus was built by polyrag from the files the question data are read
    from, of a parallel data set: then a docid of its corpus in any language names the question's
    passage of that docid or its translation (``polyrag.systems.passages.judged_docids``). True for
    the demo corpus (source demo: the shipped demo questions' passages and XQuAD subset) searched by
    the shipped demo's questions, or by XQuAD's read from the shipped subset (data.dir, its docids
    are positions in that subset, not in the full XQuAD); false for a user's corpus (source file),
    MIRACL's (a docid names another article in each language's Wikipedia) and other question data."""
    corpus = config["retrieval"]["corpora"][config["retrieval"]["retrievers"][retriever]["corpus"]]
    data = config["data"]
    shipped = {"demo": DEMO_CORPUS_FOLDERS["demo_dir"], "xquad": DEMO_CORPUS_FOLDERS["xquad_dir"]}.get(data["source"])
    if corpus["source"] != "demo" or shipped is None:
        return False
    if data["dir"] is None:
        return data["source"] == "demo"  # the shipped demo; XQuAD is then the full download
    return Path(data["dir"]).resolve() == (workflow_dir / shipped).resolve()


def corpus_needs(config: dict) -> list[tuple[str, str, str, str]]:
    """(corpus, language, retriever, key) for each language of a corpus that a retriever indexes,
    each (corpus, language) once: ``key`` is the config key that asks for that language
    (``languages``, the retriever's ``corpus_language``, a pooled corpus's ``languages``)."""
    retrieval = config.get("retrieval")
    needs: dict[tuple[str, str], tuple[str, str]] = {}
    for name, entry in (retrieval["retrievers"] if retrieval else {}).items():
        pooled = retrieval["corpora"][entry["corpus"]]["languages"]
        for lang in config["languages"]:
            if pooled:
                for corpus_lang in pooled:
                    needs.setdefault((entry["corpus"], corpus_lang), (name, f"retrieval.corpora.{entry['corpus']}.languages"))
            else:
                key = f"retrieval.retrievers.{name}.corpus_language" if entry["corpus_language"] else "languages"
                needs.setdefault((entry["corpus"], corpus_language(config, name, lang)), (name, key))
    return [(corpus, lang, name, key) for (corpus, lang), (name, key) in needs.items()]


def check_corpora(config: dict, source: str, workflow_dir: Path) -> None:
    """Every corpus language a retriever indexes can be read: its file (source file), the demo's
    questions of that language (source demo), MIRACL's language (its local copy's folder)."""
    from polyrag.retrieval.miracl import FOLDER, LANGUAGES, SHARDS

    demo_dirs = {key: str(workflow_dir / folder) for key, folder in DEMO_CORPUS_FOLDERS.items()}
    for corpus, lang, retriever, key in corpus_needs(config):
        entry = config["retrieval"]["corpora"][corpus]
        files = corpus_source_files(config, corpus, lang, demo_dirs)  # what its corpus job reads
        local = (entry.get("miracl") or {}).get("dir")
        asked = f"corpus {corpus!r} in {lang!r}, which retriever {retriever!r} indexes for {key}"
        if entry["source"] == "file" and not Path(files[0]).is_file():
            raise ConfigError(f"{source}: retrieval.corpora.{corpus}.file: {files[0]} does not exist ({asked}); write "
                              f"that file, or change {key}")
        if entry["source"] == "demo" and not Path(files[0]).is_file():
            shipped = ", ".join(sorted(p.stem for p in Path(files[0]).parent.glob("*.jsonl")))
            raise ConfigError(f"{source}: {key}: the demo corpus {corpus!r} has no language {lang!r} ({files[0]} does "
                              f"not exist; it has {shipped})")
        if entry["source"] == "miracl" and local and not files:
            raise ConfigError(f"{source}: retrieval.corpora.{corpus}.miracl.dir: {Path(local) / FOLDER.format(lang=lang)} "
                              f"holds no {SHARDS} ({asked})")
        if entry["source"] == "miracl" and not local and lang not in LANGUAGES:
            raise ConfigError(f"{source}: {key}: MIRACL's corpus ({corpus!r}) has no language {lang!r} (it has "
                              f"{', '.join(sorted(LANGUAGES))})")


def single_paths(config: dict) -> dict[str, str]:
    """The config's local folders and single files by key: no ``{lang}`` in them (rules read them
    as they are)."""
    paths = {"data.dir": config["data"]["dir"]}
    if config["meta_eval"]:
        paths["meta_eval.dir"] = config["meta_eval"]["dir"]
    if config["mars"]:
        paths |= {"mars.gold.dir": config["mars"]["gold"]["dir"], "mars.few_shot.file": config["mars"]["few_shot"]["file"],
                  "mars.calibration.path": config["mars"]["calibration"].get("path")}
    if config["finetune"] and config["finetune"].get("training"):
        paths["finetune.training.dir"] = config["finetune"]["training"]["dir"]
    paths |= {f"judges.{name}.dir": entry.get("dir") for name, entry in config["judges"].items()}
    for lang, path in ((config["arena"]["human_labels"] or {}).get("labels") or {}).items():
        paths[f"arena.human_labels.labels.{lang}"] = path
    for name, entry in ((config.get("retrieval") or {}).get("corpora") or {}).items():
        paths[f"retrieval.corpora.{name}.miracl.dir"] = (entry.get("miracl") or {}).get("dir")
    return {key: path for key, path in paths.items() if isinstance(path, str)}


def _from_variable(value: str, variable: str) -> str:
    return f" (from ${variable})" if os.environ.get(variable) == value else ""


def check_local_data(config: dict, source: str, training_languages: list[str], gold_pairs: list[str],
                     workflow_dir: Path = Path(".")) -> None:
    """Every local data file the config implies exists; else one message naming the key.
    ``workflow_dir``: the folder the shipped demo corpus lies under."""
    for key, path in single_paths(config).items():
        check_placeholders(f"{source}: {key}", path, allowed=())
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
        languages = model_languages(config, name)  # a language it does not answer needs no file
        for path in passage_file_paths(entry, languages) if passage_file_spec(entry) and not written else ():
            if not Path(path).is_file():
                raise ConfigError(f"{source}: models.{name}.passages: {path} does not exist (a file of the passages "
                                  f"model {name!r} is given, or their corpus)")
        if not reads_answer_files(entry):
            continue
        for path, lang in zip(answer_paths(entry, languages), languages):
            if not Path(path).is_file():
                raise ConfigError(f"{source}: models.{name}.answers: {path} does not exist (the answers of system "
                                  f"{name!r} in {lang!r})")
        for path in corpus_paths(entry, languages):
            if not Path(path).is_file():
                raise ConfigError(f"{source}: models.{name}.corpus: {path} does not exist (the passages the docids of "
                                  f"system {name!r} are looked up in)")
    check_corpora(config, source, workflow_dir)
