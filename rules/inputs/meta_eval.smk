# The input functions and constants of rules/meta_eval.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.data_files import memerag_files
from polyrag.config.queries import judge_roles as configured_judge_roles, meta_evaluators

META_LANGUAGES = META_EVAL["languages"] if META_EVAL else []
META_EVALUATORS = meta_evaluators(config)


wildcard_constraints:
    memerag_lang=alternatives(META_LANGUAGES),
    scorer="e5-similarity|nli|mars",


def memerag_data_files(wildcards):
    return memerag_files(config, wildcards.memerag_lang)


def judge_roles(wildcards):
    return configured_judge_roles(config)
