# Config validation, names, resources and input functions shared by every stage.
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError

from polyrag.config.queries import (
    gold_languages,
    arena_judge,
    control_name,
    families,
    finetune_adapter_dir,
    finetune_languages,
    finetune_resources,
    judge_contestants,
    judge_pairs,
    judge_roles as configured_judge_roles,
    meta_evaluators,
    generation_settings,
    judged_models,
    judging_settings,
    mars_gold_pairs,
    mars_languages,
    mars_pairs,
    mars_calibration_pairs,
    model_pairs,
    model_resources,
    budget_spec,
    models_at,
    placement_round,
    round_judges,
    settings_entry,
    wrong_language_source,
)
from polyrag.checks import CHECKS as KNOWN_TRUTHS, check_settings, enabled_checks
from polyrag.config.data_files import mars_gold_files, memerag_files, question_files, recorded_files, training_files
from polyrag.config.validate import check_unique_keys, validate_config
from polyrag.judge.kinds import judge_kind, judges_scheduled
from polyrag.arena.rounds import judge_round_count
from polyrag.errors import ConfigError

try:
    # Snakemake has already loaded these files, keeping the last of a repeated key: refuse that first.
    for configfile_path in workflow.overwrite_configfiles or workflow.configfiles:
        check_unique_keys(configfile_path)
    validate_config(
        config,
        Path(workflow.basedir) / "schemas" / "config.schema.yaml",
        source=", ".join(map(str, workflow.overwrite_configfiles or workflow.configfiles)) or "config",
        workflow_dir=workflow.basedir,
    )
except ConfigError as error:
    # One line naming the file and key, before any job is scheduled.
    raise WorkflowError(f"invalid config: {error}") from None


onstart:
    # On SLURM, stop before the first job where job states could never be read (see polyrag/cluster.py).
    if workflow.executor_plugin.name == "slurm":
        from polyrag.cluster import check_slurm_run

        try:
            check_slurm_run(workflow.executor_settings)
        except ConfigError as error:
            raise WorkflowError(str(error)) from None


LANGUAGES = config["languages"]
MODELS = list(config["models"])
JUDGES = list(config["judges"])
# How each judge judges (polyrag/judge/kinds.py): on local weights, one job for every pair (one
# model load); a panel votes with its members' verdicts, one games file per language; the others
# one job per pair, or under arena.budget in rounds of adaptively chosen pairs (rules/arena.smk).
LOCAL_MODEL_JUDGES = judges_scheduled(config, "local_weights")
PANEL_JUDGES = judges_scheduled(config, "panel")
ROUND_JUDGES = round_judges(config)
PER_PAIR_JUDGES = [judge for judge in judges_scheduled(config, "per_pair") if judge not in ROUND_JUDGES]
JUDGED = judged_models(config)
PAIRS = model_pairs(JUDGED)
ARENA_JUDGE = arena_judge(config)  # None without judges: no arena, no leaderboard
META_EVAL = config["meta_eval"] and {**config["meta_eval"], "seed": config["seed"]}
META_LANGUAGES = META_EVAL["languages"] if META_EVAL else []
META_EVALUATORS = meta_evaluators(config)
MARS = config["mars"]
MARS_LANGUAGES = mars_languages(config) if MARS else []
MARS_PAIRS = mars_pairs(config) if MARS else []
MARS_GOLD_PAIRS = mars_gold_pairs(config) if MARS else []
MARS_METRICS = MARS["metrics"] if MARS else []
GOLD = config["arena"]["gold"]
GOLD_LANGUAGES = gold_languages(config)
# The gold-anchored table the leaderboard shows: pooled over the labelled languages, or the one.
GOLD_TABLE = (
    f"results/arena/{GOLD['judge']}/{'all' if len(GOLD_LANGUAGES) > 1 else GOLD_LANGUAGES[0]}/gold_anchored.csv"
    if GOLD and GOLD_LANGUAGES
    else []
)
FT = config["finetune"]  # the student already joined MODELS under FT["name"] (validate_config)
FT_LANGUAGES = finetune_languages(config) if FT else []
FT_DIR = f"results/finetune/{FT['name']}" if FT else None
FT_CONTROL = control_name(config) if FT else None  # the student's base served as the student is
CHECKS = enabled_checks(config)  # the known-truth checks turned on (rules/checks.smk), with their expectations
CHECK_SETTINGS = check_settings(config)


try:
    ROUND_COUNTS = {(judge, lang): judge_round_count(config, judge, lang) for judge in ROUND_JUDGES for lang in LANGUAGES}
except ConfigError as error:
    source = ", ".join(map(str, workflow.overwrite_configfiles or workflow.configfiles)) or "config"
    raise WorkflowError(f"invalid config: {source}: {error}") from None


def alternatives(names):
    """A wildcard constraint matching exactly these names ("(?!)" matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


wildcard_constraints:
    lang=alternatives(LANGUAGES),
    model=alternatives(MODELS),
    model_a=alternatives(MODELS),
    model_b=alternatives(MODELS),
    judge=alternatives(JUDGES),
    memerag_lang=alternatives(META_LANGUAGES),
    scorer="e5-similarity|nli|mars",
    pair=alternatives(MARS_GOLD_PAIRS),
    metric=alternatives(MARS_METRICS),


def all_targets():
    return (
        expand("results/data/{lang}.parquet", lang=LANGUAGES)
        + expand("results/answers/{model}/{lang}.parquet", model=MODELS, lang=LANGUAGES)
        + expand("results/features/{model}/{lang}.parquet", model=MODELS, lang=LANGUAGES)
        # The surrogate of the leaderboard's judge only (other judges' on demand): it costs seconds a fit.
        + expand("results/arena/{judge}/{lang}/surrogate.csv", judge=ARENA_JUDGE or [], lang=LANGUAGES)
        + expand("results/arena/{judge}/{lang}/judge_diagnostics.csv", judge=JUDGES, lang=LANGUAGES)
        + expand("results/arena/{judge}/{lang}/style_controlled.csv", judge=JUDGES, lang=LANGUAGES)
        + (["results/leaderboard.csv", "results/leaderboard.html", "results/plots/rank_heatmap.png",
            "results/judges.html"] if ARENA_JUDGE else [])
        + expand("results/arena/{judge}/{lang}/gold_anchored.csv", judge=GOLD["judge"] if GOLD else [],
                 lang=GOLD_LANGUAGES + (["all"] if len(GOLD_LANGUAGES) > 1 else []))
        + expand("results/gold/{lang}/tasks.csv", lang=LANGUAGES if GOLD else [])
        + (["results/meta_eval/summary.csv"] if META_EVAL else [])
        + (expand("results/mars/scores/{model}.csv", model=MODELS) if MARS else [])
        + (["results/mars/meta_eval.csv"] if MARS and MARS["meta_eval"] else [])
        + ([f"{FT_DIR}/loss.csv", f"{FT_DIR}/curation_counts.json"] if FT else [])
        + ([f"{FT_DIR}/gain_over_control.csv"] if FT_CONTROL and ARENA_JUDGE else [])
        + (["results/checks.csv"] if CHECKS else [])
    )


def judge_roles(wildcards):
    return configured_judge_roles(config)


def games_path(judge, lang, model_a, model_b):
    """Where a judge's games of one pair live: a file per pair, or one file of every pair for a
    judge on local weights (one job writes them all; one file keeps the DAG small) and for a
    panel (one vote over its members' files)."""
    name = "games" if judge in LOCAL_MODEL_JUDGES + PANEL_JUDGES else f"{model_a}__{model_b}"
    return f"results/judgments/{judge}/{lang}/{name}.parquet"


def judgment_paths(judge, lang, pairs=None):
    """The games files of one judge and language holding ``pairs`` (default: every pair it
    judges), each once; a budgeted judge's rounds hold any pair."""
    if judge in ROUND_JUDGES:
        return round_paths("results/judgments/{judge}/{lang}/rounds/round_{k}.parquet", judge, lang)
    pairs = judge_pairs(config, judge) if pairs is None else pairs
    return list(dict.fromkeys(games_path(judge, lang, a, b) for a, b in pairs))


def round_paths(pattern, judge, lang, rounds=None):
    """One path per round of a budgeted judge and language (the first ``rounds``, else all)."""
    count = ROUND_COUNTS[judge, lang] if rounds is None else rounds
    return [pattern.format(judge=judge, lang=lang, k=k) for k in range(count)]


def round_models(wildcards):
    """The models of one round: a model joining later (arena.adaptive.joined) is not in the
    earlier rounds' params or inputs, so adding it reruns none of them."""
    return models_at(config, wildcards.judge, int(wildcards.k))


def judgment_files(wildcards):
    return judgment_paths(wildcards.judge, wildcards.lang)


def contestants(wildcards):
    """The models this judge judges (its contestants, else every judged model)."""
    return judge_contestants(config, wildcards.judge)


def contestant_answers(wildcards):
    """The answers of this judge's contestants in every language (a judging job's input)."""
    return expand("results/answers/{model}/{lang}.parquet", model=contestants(wildcards), lang=LANGUAGES)


def contestant_answers_in_language(wildcards):
    return expand("results/answers/{model}/{lang}.parquet", model=contestants(wildcards), lang=wildcards.lang)


def member_games(wildcards):
    """A panel's members and their games files in this language holding the panel's pairs (those
    every member judges), so a model only some members judge does not rerun the panel."""
    pairs = judge_pairs(config, wildcards.judge)
    members = config["judges"][wildcards.judge]["members"]
    return {member: judgment_paths(member, wildcards.lang, pairs) for member in members}


def member_judgment_files(wildcards):
    return [path for paths in member_games(wildcards).values() for path in paths]


def judge_settings(wildcards):
    return judging_settings(config, wildcards.judge)


def feature_groups():
    """The configured feature groups; model-based groups only when configured."""
    groups = ["deterministic"]
    if config["features"]["embedding_similarity"]:
        groups.append("embedding")
    return groups + [group for group in ("nli", "reranker", "llm") if config["features"][group]]


def feature_group_files(wildcards):
    """The feature groups of one model, language by language (in the order of LANGUAGES)."""
    return [f"results/features/{wildcards.model}/{lang}/{group}.parquet" for lang in LANGUAGES for group in feature_groups()]


def feature_model_resource(group, name):
    return lambda wildcards, attempt: model_resources(config["features"][group] or {}, attempt)[name]


def llm_feature_judge(wildcards):
    name = config["features"]["llm"]["judge"]
    return {"name": name, "entry": config["judges"][name]}


def llm_feature_resource(name):
    return lambda wildcards, attempt: model_resources(config["judges"][config["features"]["llm"]["judge"]], attempt)[name]


def reads_answer_languages(judge):
    return judge_kind(config["judges"][judge], judge).reads_answer_languages


def answer_language_path(model):
    """Where a judge that scores languages reads each answer's: written by the deterministic features."""
    return f"results/features/{model}/answer_languages.parquet"


def answer_language_files(wildcards):
    """The answer-language files of a judging job's models (none for a judge that reads none)."""
    if not reads_answer_languages(wildcards.judge):
        return []
    models = round_models(wildcards) if "k" in wildcards.keys() else [wildcards.model_a, wildcards.model_b]
    return [answer_language_path(model) for model in models]


def pair_files(judge, lang, model_a, model_b):
    """Where the judge_pairs script reads one pair's answers (and, for a judge that scores
    languages, the answers' detected languages) and writes its games."""
    files = {
        "lang": lang,
        "model_a": model_a,
        "model_b": model_b,
        "questions": f"results/data/{lang}.parquet",
        "answers_a": f"results/answers/{model_a}/{lang}.parquet",
        "answers_b": f"results/answers/{model_b}/{lang}.parquet",
        "output": games_path(judge, lang, model_a, model_b),
    }
    if reads_answer_languages(judge):
        files |= {"languages_a": answer_language_path(model_a), "languages_b": answer_language_path(model_b)}
    return files


def judge_entry(wildcards):
    return config["judges"][wildcards.judge]


def judge_resource(name):
    return lambda wildcards, attempt: model_resources(config["judges"][wildcards.judge], attempt)[name]


def model_entry(wildcards):
    """Only this model's own entry: editing another model never reruns this one's jobs."""
    return config["models"][wildcards.model]


def model_settings(wildcards):
    return generation_settings(config, wildcards.model)


def model_resource(name):
    return lambda wildcards, attempt: model_resources(config["models"][wildcards.model], attempt)[name]


def wrong_language_sources(wildcards):
    """Mock systems answer some questions in another language: that language, per language."""
    entry = config["models"][wildcards.model]
    if entry["backend"] != "mock" or "wrong_language" not in entry["corruptions"]:
        return {}
    return {lang: wrong_language_source(entry, lang, LANGUAGES) for lang in LANGUAGES}


def question_data_files(wildcards):
    """The local files select_questions reads (data.dir): an edited one reruns its language."""
    return question_files(config, wildcards.lang)


def memerag_data_files(wildcards):
    return memerag_files(config, wildcards.memerag_lang)


def mars_gold_data_files(wildcards):
    return mars_gold_files(config, wildcards.pair)


def recorded_verdict_files(wildcards):
    """A recorded judge's local verdict files (judges.{judge}.dir) in the languages of the job."""
    languages = [wildcards.lang] if "lang" in wildcards.keys() else LANGUAGES
    return recorded_files(config, wildcards.judge, languages)


def time_filter_entry(wildcards):
    name = config["data"]["miracl"]["time_filter_model"]
    if config["data"]["source"] != "miracl" or name is None:
        return None
    return {"name": name, "entry": config["models"][name]}


def time_filter_threads(wildcards):
    """The time-filter model's threads (its llama.cpp or torch threads follow them); 1 without one."""
    time_filter = time_filter_entry(wildcards)
    return 1 if time_filter is None else model_resources(time_filter["entry"])["threads"]


def evaluated_question_files(wildcards):
    """Data files whose questions MARS's XQuAD gold data must not reuse (only XQuAD can collide)."""
    if config["data"]["source"] != "xquad":
        return []
    return expand("results/data/{lang}.parquet", lang=LANGUAGES)


def mars_corpus_files(wildcards):
    """The data files with passages in the pair's passage language (mars.corpus.source: data)."""
    if MARS["corpus"]["source"] != "data":
        return []
    passage_lang = wildcards.pair.split("-")[0]
    return [f"results/data/{lang}.parquet" for lang in LANGUAGES if lang.split("-")[-1] == passage_lang]


def mars_generator(wildcards):
    return {"name": MARS["generator"], "entry": config["models"][MARS["generator"]]}


def mars_generator_resource(name):
    return lambda wildcards, attempt: model_resources(config["models"][MARS["generator"]], attempt)[name]


MARS_JUDGE_RESOURCES = {
    "transformers": {"gpu": 1, "mem_mb": 16000, "runtime": 240, "threads": 4},  # fine-tuning wants a GPU
    "embedding_logreg": {"gpu": 0, "mem_mb": 4000, "runtime": 30, "threads": 1},
}


def mars_judge_resource(name):
    return lambda wildcards: {
        **MARS_JUDGE_RESOURCES[MARS["judge"]["backend"]], **(MARS["judge"].get("resources") or {})
    }[name]


def mars_calibration_inputs(wildcards):
    if MARS["calibration"]["source"] == "gold":
        return expand("results/mars/gold/{pair}.parquet", pair=mars_calibration_pairs(config))
    if MARS["calibration"]["source"] == "tsv":
        return [MARS["calibration"]["path"]]
    return expand("results/meta_eval/data/{memerag_lang}.parquet", memerag_lang=META_LANGUAGES)


def mars_answer_files(wildcards):
    return {
        "questions": expand("results/data/{lang}.parquet", lang=MARS_LANGUAGES),
        "answers": expand("results/answers/{model}/{lang}.parquet", model=wildcards.model, lang=MARS_LANGUAGES),
    }


def student_and_control_games(wildcards):
    """The arena judge's games files holding the student's games against its control, per language."""
    pair = tuple(sorted([FT["name"], FT_CONTROL]))
    return {lang: judgment_paths(ARENA_JUDGE, lang, [pair]) for lang in LANGUAGES}


def student_and_control_game_files(wildcards):
    return [path for paths in student_and_control_games(wildcards).values() for path in paths]


def student_adapter_files(wildcards):
    """The fine-tuned student's adapter (its generation job waits for training); nothing for any
    other model, so adding fine-tuning leaves the other models' jobs as they were."""
    if not FT or wildcards.model != FT["name"]:
        return []
    return [f"{finetune_adapter_dir(config)}/{name}" for name in ("adapter_model.safetensors", "adapter_config.json")]


def teacher_resource(name):
    return lambda wildcards, attempt: model_resources(config["models"][FT["teacher"]], attempt)[name]


def student_training_resource(name):
    return lambda wildcards, attempt: finetune_resources(config, attempt)[name]


def gold_labels_source(wildcards):
    """The filled annotation file of a language: the user's, else the stand-in labeller's."""
    if wildcards.lang in GOLD["labels"]:
        return GOLD["labels"][wildcards.lang]
    return f"results/gold/{wildcards.lang}/filled_by_{GOLD['stand_in']}.csv"


def gold_scope_languages(wildcards):
    """The languages a gold-anchored table pools: one, or every labelled one for ``all``."""
    return GOLD_LANGUAGES if wildcards.scope == "all" else [wildcards.scope]


def check_ingredients(expected):
    """Where each ingredient a check reads (polyrag.checks.CHECKS[name].reads) lives: a path, or
    for judge_games and stand_in_arena a mapping per judge and language. Looked up lazily: the
    rules behind an ingredient exist only when the config has their stage (validation saw to it)."""
    return {
        "leaderboard": lambda: rules.leaderboard.output.leaderboard,
        "by_language": lambda: rules.leaderboard.output.by_language,
        "detailed": lambda: rules.leaderboard.output.detailed,
        "mars_systems": lambda: rules.mars_meta_eval.output.systems,
        "finetune_gain": lambda: rules.finetune_gain.output[0],
        "judge_games": lambda: {judge: {lang: judgment_paths(judge, lang) for lang in LANGUAGES} for judge in expected},
        "stand_in_arena": lambda: {
            lang: f"results/arena/{GOLD['stand_in']}/{lang}/bradley_terry.csv" for lang in GOLD_LANGUAGES
        },
    }


def as_text(node):
    """Paths as plain str: a rule's output path carries its rule, which a script's params cannot pickle."""
    if isinstance(node, dict):
        return {key: as_text(value) for key, value in node.items()}
    return str(node) if isinstance(node, str) else [str(path) for path in node]


def check_files(wildcards):
    """Per enabled check, its ingredients' files by name."""
    return {
        name: {ingredient: as_text(check_ingredients(expected)[ingredient]()) for ingredient in KNOWN_TRUTHS[name].reads}
        for name, expected in CHECKS.items()
    }


def flat_paths(node):
    if isinstance(node, dict):
        return [path for value in node.values() for path in flat_paths(value)]
    return [node] if isinstance(node, str) else list(node)


def check_input_files(wildcards):
    return list(dict.fromkeys(flat_paths(check_files(wildcards))))
