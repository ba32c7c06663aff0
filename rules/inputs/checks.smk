# The input functions and constants of rules/checks.smk (snakemake --lint keeps functions apart from rules).
from polyrag.checks import CHECKS as KNOWN_TRUTHS
from polyrag.config.checks import check_settings, enabled_checks

CHECKS = enabled_checks(config)  # the known-truth checks turned on, with their expectations
CHECK_SETTINGS = check_settings(config)


def check_ingredients(expected):
    """Where each ingredient a check reads (polyrag.checks.CHECKS[name].reads) lives: a path, or
    for judge_games and stand_in_arena a mapping per judge and language. Looked up lazily: the
    rules behind an ingredient exist only when the config has their stage (validation saw to it)."""
    return {
        # the leaderboard's full-precision twins: a check compares numbers the CSVs round
        "leaderboard": lambda: rules.leaderboard.output.leaderboard_full,
        "by_language": lambda: rules.leaderboard.output.by_language_full,
        "detailed": lambda: rules.leaderboard.output.detailed_full,
        "mars_systems": lambda: rules.mars_meta_eval.output.systems,
        "finetune_gain": lambda: rules.finetune_gain.output[0],
        "answers": lambda: {model: {lang: ANSWERS.format(model=model, lang=lang) for lang in model_languages(config, model)}
                            for model in CHECK_SETTINGS["passage_order"]["grounded"]},
        "questions": lambda: {lang: QUESTIONS.format(lang=lang) for lang in LANGUAGES},
        "judge_games": lambda: {judge: {lang: judgment_paths(judge, lang) for lang in LANGUAGES} for judge in expected},
        "stand_in_arena": lambda: {
            lang: expand(rules.bradley_terry.output.table, judge=HUMAN_LABELS["stand_in"], lang=lang)[0] for lang in LABELLED_LANGUAGES
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
