# Config validation, the names every stage uses (languages, models, judges, which stages are on),
# the output contract's paths, wildcard constraints and the resource helper. Each stage's input
# functions and constants live in its own .smk.
import functools
import inspect
import os
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError

from polyrag.config import outputs
from polyrag.config.params import FileDigests, canonical, output_roots, source_digests
from polyrag.config.queries import (answers_language, model_languages, model_pairs, model_resources, pair_languages,
                                    partial_models)
from polyrag.config.validate import check_unique_keys, validate_config
from polyrag.errors import ConfigError
from polyrag.report_menu import REPORT  # the report's categories ("1. Results", ...)

CONFIG_SOURCE = ", ".join(map(str, workflow.overwrite_configfiles or workflow.configfiles)) or "config"

try:
    # Snakemake has already loaded these files, keeping the last of a repeated key: refuse that first.
    for configfile_path in workflow.overwrite_configfiles or workflow.configfiles:
        check_unique_keys(configfile_path)
    validate_config(
        config,
        Path(workflow.basedir) / "schemas" / "config.schema.yaml",
        source=CONFIG_SOURCE,
        workflow_dir=workflow.basedir,
        check_models=workflow.is_main_process,  # where the run starts (a dry run too), not again in each job
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
# The optional stages' sections (None: the stage is off); later stages' rules read earlier ones'.
META_EVAL = config["meta_eval"] and {**config["meta_eval"], "seed": config["seed"]}
MARS = config["mars"]
HUMAN_LABELS = config["arena"]["human_labels"]
FT = config["finetune"]  # the student already joined MODELS under FT["name"] (validate_config)

# Every file a rule writes (outputs, logs, benchmark TSVs, the report's files) lies under the config's
# results_dir, so that two configs never write each other's files (docs/outputs.md); every rule's
# path is built with these three, relative to that folder.
RESULTS_DIR = outputs.results_dir(config)


def results_path(path):
    return outputs.results_path(config, path)


def log_path(path):
    return outputs.log_path(config, path)


def benchmark_path(path):
    return outputs.benchmark_path(config, path)


# The output contract (docs: DESIGN.md), written once: every stage reads these.
QUESTIONS = results_path("data/{lang}.parquet")
ANSWERS = results_path("answers/{model}/{lang}.parquet")
FEATURES = results_path("features/{model}/{lang}.parquet")
# One model's files in every language, in one small file that jobs reading them for many models
# declare as their input (polyrag/manifest.py): a readable dry run at 18 languages.
ANSWERS_MANIFEST = results_path("answers/{model}/manifest.json")
FEATURES_MANIFEST = results_path("features/{model}/manifest.json")

def alternatives(names):
    """A wildcard constraint matching exactly these names ("(?!)" matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


wildcard_constraints:
    lang=alternatives(LANGUAGES),
    model=alternatives(MODELS),
    model_a=alternatives(MODELS),
    model_b=alternatives(MODELS),
    judge=alternatives(JUDGES),


def answered_cells(models, languages):
    """The (model, language) cells that exist among ``models`` x ``languages``, model by model: a
    model that answers only some languages (``languages:``) has files in those only."""
    return [(model, lang) for model in models for lang in languages if answers_language(config, model, lang)]


def answered_paths(pattern, models, languages):
    """``pattern`` (ANSWERS, FEATURES) of every cell ``answered_cells`` gives, in its order."""
    return [pattern.format(model=model, lang=lang) for model, lang in answered_cells(models, languages)]


def language_of_path(path):
    """The language key a planned path is of (a folder of it, or a file's name before its first
    dot), else None (a path of every language, a log)."""
    for part in Path(path).parts:
        for key in (part, part.split(".")[0]):
            if key in LANGUAGES:
                return key
    return None


def in_languages(item, languages):
    """An output item (a path, or a list of them) without the paths of other languages; None if none is left."""
    if isinstance(item, str):
        return item if language_of_path(item) in (None, *languages) else None
    kept = [path for path in item if language_of_path(path) in (None, *languages)]
    return kept or None


def answered_languages_only(name, groups):
    """Copies of rule ``name``, whose outputs are in every language, for the models that answer
    only some (``languages:``): per group ``(languages, constraints)`` one rule whose outputs are in
    those languages only, for the wildcards ``constraints`` match, preferred to ``name`` where both
    could write a file. Snakemake fixes a rule's outputs when the rule is defined, so a job that
    writes fewer languages is another rule; its inputs and params are ``name``'s, which are
    functions of the job's model (``model_languages``)."""
    import copy

    from snakemake.ruleinfo import InOutput

    original = workflow.get_rule(name)
    for k, (languages, constraints) in enumerate(groups):
        info = copy.copy(original.ruleinfo)
        paths, named, modifier = info.output
        kept = [in_languages(item, languages) for item in paths]
        kept_named = {key: in_languages(item, languages) for key, item in named.items()}
        info.output = InOutput([item for item in kept if item is not None],
                               {key: item for key, item in kept_named.items() if item is not None}, modifier)
        positional, keyword = info.wildcard_constraints or ((), {})
        info.wildcard_constraints = (positional, {**keyword, **constraints})
        info.name = f"{name}_in_{k}"
        workflow.rule(name=info.name, lineno=original.lineno, snakefile=original.snakefile)(info)
        workflow.ruleorder(info.name, name)


def plan_answered_languages(model_rules, pair_rules):
    """Every rule that writes one model's files (``model_rules``) or one pair's (``pair_rules``)
    in every language gets its copies for models, and pairs, that meet in fewer
    (``answered_languages_only``). Called once, after the last rule is defined."""
    by_languages = {}
    for model, languages in partial_models(config).items():
        by_languages.setdefault(tuple(languages), []).append(model)
    for name in model_rules:
        answered_languages_only(name, [(languages, {"model": alternatives(models)})
                                       for languages, models in by_languages.items()])
    # A pair's file names are sorted (model_a < model_b). Each pair with a partial model and some
    # language in common joins one group: by its model_b where that is partial, else by its model_a,
    # and by the languages where they meet (constraints are per wildcard, so one side is fixed).
    partial = set(partial_models(config))
    by_side = {}
    for model_a, model_b in model_pairs(MODELS):
        languages = tuple(pair_languages(config, model_a, model_b))
        if not languages or not {model_a, model_b} & partial:
            continue
        fixed, other = ("model_b", "model_a") if model_b in partial else ("model_a", "model_b")
        pair = {"model_a": model_a, "model_b": model_b}
        by_side.setdefault((fixed, pair[fixed], languages), []).append(pair[other])
    groups = [(languages, {fixed: re.escape(model), ("model_a" if fixed == "model_b" else "model_b"): alternatives(others)})
              for (fixed, model, languages), others in by_side.items()]
    for name in pair_rules:
        answered_languages_only(name, groups)


def resource(name, entry, resources=model_resources):
    """One cluster resource of a rule's jobs (Snakemake asks for each with its own function):
    ``name`` of ``resources(entry, attempt)``. ``entry`` is a config entry, or a function of the
    job's wildcards giving one (read when a job is scheduled: the entry may exist only then)."""
    return lambda wildcards, attempt: resources(entry(wildcards) if callable(entry) else entry, attempt)[name]


def all_targets():
    """Rule all's inputs; called at the end of the Snakefile, once every stage's rules exist."""
    return (
        # every model's answers and features in every language, through their manifests (one path each)
        expand(ANSWERS_MANIFEST, model=MODELS)
        + expand(FEATURES_MANIFEST, model=MODELS)
        # The surrogate of the leaderboard's judge only (other judges' on demand): it costs seconds a fit.
        + expand(SURROGATE_TABLE, judge=ARENA_JUDGE or [], lang=LANGUAGES)
        + expand(rules.judge_diagnostics.output.diagnostics, judge=JUDGES, lang=LANGUAGES)
        + expand(rules.style_control.output.style_table, judge=JUDGES, lang=LANGUAGES)
        + expand(rules.component_effects.output.table, judge=CROSSED_JUDGES)
        + ([rules.leaderboard.output.leaderboard, rules.leaderboard_table.output[0],
            rules.arena_plots.output.rank_heatmap, rules.judges_table.output.page,
            rules.answers_browser.output[0]] if ARENA_JUDGE else [])
        + expand(rules.label_anchored.output.table, judge=HUMAN_LABELS["judge"] if HUMAN_LABELS else [],
                 scope=LABELLED_LANGUAGES + (["all"] if len(LABELLED_LANGUAGES) > 1 else []))
        + expand(rules.human_label_sample.output.tasks, lang=LANGUAGES if HUMAN_LABELS else [])
        + ([rules.meta_eval_summary.output.summary] if META_EVAL else [])
        + (expand(rules.mars_scores.output[0], model=MARS_MODELS) if MARS else [])
        + ([rules.mars_meta_eval.output.summary] if MARS and MARS["meta_eval"] else [])
        + ([rules.train_student.output.loss, rules.curate_training_set.output.counts] if FT else [])
        + (list(rules.finetune_gain.output) if FT_CONTROL and ARENA_JUDGE else [])
        + (list(rules.checks.output) if CHECKS else [])
        + ([rules.retrieval_leaderboard.output[0], rules.retrieval_leaderboard_table.output[0]] if RETRIEVAL else [])
    )


# Arguments that make a param function "derived" to Snakemake: it never compares such params.
DERIVED_ARGUMENTS = {"input", "output", "threads", "resources"}


def canonical_param(item, working_dir):
    """A rule's param in canonical form (polyrag.config.params.canonical): a value, or a function of
    the wildcards whose result is; a function of the job's files is left as it is (not compared)."""
    if not callable(item):
        return canonical(item, working_dir)
    if DERIVED_ARGUMENTS & set(inspect.signature(item).parameters):
        return item

    @functools.wraps(item)  # keeps the signature Snakemake reads to pass the arguments
    def canonical_result(*args, **kwargs):
        return canonical(item(*args, **kwargs), working_dir)

    return canonical_result


def source_digests_param(step, roots, digests, working_dir):
    """A param of each job of ``step``: the SHA-256 of every input file no rule writes (the
    user's files), so that changed content reruns the job whatever the file's modification time."""

    def files_read(wildcards):
        files = step.expand_input(dict(wildcards.items()))[0]
        return source_digests(map(str, files), roots, digests, working_dir)

    return files_read


# Params that say where a cache lives, never what a job writes (every cache is keyed by content):
# Snakemake does not compare them, so a run copied beside its old cache, or a cache moved, reruns nothing.
LOCATIONS = {"cache_dir"}


def uncompared(value):
    """``value`` as a param Snakemake does not compare: a function of the job's input (Snakemake
    leaves such params out of its rerun decision, as they follow from the files)."""
    return lambda wildcards, input: value


def canonical_params(all_rules):
    """Every rule's params as Snakemake compares them (docs/configuration.md, "What reruns a job"):
    dicts with sorted keys and paths relative to the working directory, plus the content digests of
    the user files among its inputs. Called once, after the last rule is defined."""
    working_dir = os.getcwd()
    all_rules = list(all_rules)
    # The results folder as well: where it is absolute, its outputs have no relative first folder.
    roots = output_roots(path for step in all_rules for path in step.output) | {RESULTS_DIR}
    digests = FileDigests()
    for step in all_rules:
        for index, item in enumerate(step.params):
            step.params[index] = canonical_param(item, working_dir)
        for name, (index, _) in step.params._get_names():
            if name in LOCATIONS and not callable(step.params[index]):
                step.params[index] = uncompared(step.params[index])
        step.params._take_names(list(step.params._get_names()))  # a named param is read by its name
        if step.input:
            step.set_params(source_digests=source_digests_param(step, roots, digests, working_dir))
