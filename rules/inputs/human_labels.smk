# The input functions and constants of rules/human_labels.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.queries import labelled_languages

LABELLED_LANGUAGES = labelled_languages(config)


def label_anchored_file():
    """The label-anchored table the leaderboard shows: pooled over the labelled languages (all), or the one's."""
    if not (HUMAN_LABELS and LABELLED_LANGUAGES):
        return []
    scope = "all" if len(LABELLED_LANGUAGES) > 1 else LABELLED_LANGUAGES[0]
    return expand(rules.label_anchored.output.table, judge=HUMAN_LABELS["judge"], scope=scope)[0]  # one path: the scripts read it


def filled_labels_file(wildcards):
    """The filled annotation file of a language: the user's, else the stand-in labeller's."""
    if wildcards.lang in HUMAN_LABELS["labels"]:
        return HUMAN_LABELS["labels"][wildcards.lang]
    return expand(rules.stand_in_labels.output[0], lang=wildcards.lang, judge=HUMAN_LABELS["stand_in"])[0]


def labelled_contestants(wildcards):
    """The labelled judge's contestants that answer the language of the job."""
    return language_contestants(config, HUMAN_LABELS["judge"], wildcards.lang)


def label_anchored_languages(wildcards):
    """The languages a label-anchored table pools: one, or every labelled one for ``all``."""
    return LABELLED_LANGUAGES if wildcards.scope == "all" else [wildcards.scope]


def label_anchored_contestants(wildcards):
    """The judge's contestants that answer one of the table's languages (a model with languages:
    that leave them all out has no unit there)."""
    languages = label_anchored_languages(wildcards)
    return [model for model in judge_contestants(config, wildcards.judge)
            if any(answers_language(config, model, lang) for lang in languages)]
