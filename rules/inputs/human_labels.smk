# The input functions and constants of rules/human_labels.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.queries import gold_languages

GOLD_LANGUAGES = gold_languages(config)


def gold_table():
    """The gold-anchored table the leaderboard shows: pooled over the labelled languages (all), or the one's."""
    if not (GOLD and GOLD_LANGUAGES):
        return []
    scope = "all" if len(GOLD_LANGUAGES) > 1 else GOLD_LANGUAGES[0]
    return expand(rules.gold_anchored.output.table, judge=GOLD["judge"], scope=scope)[0]  # one path: the scripts read it


def gold_labels_source(wildcards):
    """The filled annotation file of a language: the user's, else the stand-in labeller's."""
    if wildcards.lang in GOLD["labels"]:
        return GOLD["labels"][wildcards.lang]
    return expand(rules.gold_stand_in.output[0], lang=wildcards.lang, judge=GOLD["stand_in"])[0]


def gold_scope_languages(wildcards):
    """The languages a gold-anchored table pools: one, or every labelled one for ``all``."""
    return GOLD_LANGUAGES if wildcards.scope == "all" else [wildcards.scope]
