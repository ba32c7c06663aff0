# The input functions and constants of rules/judge.smk (snakemake --lint keeps functions apart from rules).
from polyrag.arena.rounds import judge_round_count
from polyrag.config.data_files import recorded_files
from polyrag.config.queries import (answering_models, judge_contestants, judge_pairs, judging_settings,
                                    language_contestants, models_at, round_judges)
from polyrag.judge.kinds import judge_kind, judges_scheduled

# How each judge judges (polyrag/judge/kinds.py): on local weights, one job for every pair (one
# model load); a panel votes with its members' verdicts, one games file per language; the others
# one job per pair, or under arena.budget in rounds of adaptively chosen pairs (rules/arena.smk).
LOCAL_MODEL_JUDGES = judges_scheduled(config, "local_weights")
PANEL_JUDGES = judges_scheduled(config, "panel")
ROUND_JUDGES = round_judges(config)
PER_PAIR_JUDGES = [judge for judge in judges_scheduled(config, "per_pair") if judge not in ROUND_JUDGES]
try:
    ROUND_COUNTS = {(judge, lang): judge_round_count(config, judge, lang) for judge in ROUND_JUDGES for lang in LANGUAGES}
except ConfigError as error:
    raise WorkflowError(f"invalid config: {CONFIG_SOURCE}: {error}") from None

# Where games live: a file per judge, language and sorted pair for a judge called per pair, which
# rule gather_games copies into one file per judge and language; that one file (games.parquet) is
# what a judge on local weights writes (one job writes them all) and a panel too (one vote over its
# members' files); one per round of a budgeted judge, whose units arena_round chose.
PAIR_GAMES = results_path("judgments/{judge}/{lang}/{model_a}__{model_b}.parquet")
JUDGE_GAMES = results_path("judgments/{judge}/{lang}/games.parquet")
ROUND_GAMES = results_path("judgments/{judge}/{lang}/rounds/round_{k}.parquet")
ROUND_UNITS = results_path("arena/{judge}/{lang}/rounds/round_{k}.csv")


def judge_entry(wildcards):
    return config["judges"][wildcards.judge]


def judge_settings(wildcards):
    return judging_settings(config, wildcards.judge)


def games_path(judge, lang, model_a, model_b):
    """Where a judge's games of one pair live (PAIR_GAMES, or JUDGE_GAMES holding every pair)."""
    pattern = JUDGE_GAMES if judge in LOCAL_MODEL_JUDGES + PANEL_JUDGES else PAIR_GAMES
    return pattern.format(judge=judge, lang=lang, model_a=model_a, model_b=model_b)


def judgment_paths(judge, lang, pairs=None):
    """The games files of one judge and language holding ``pairs``, each once; by default (every
    pair it judges) the one file of all its games (JUDGE_GAMES), or a budgeted judge's rounds."""
    if judge in ROUND_JUDGES:
        return round_paths(ROUND_GAMES, judge, lang)
    if pairs is None:
        return [JUDGE_GAMES.format(judge=judge, lang=lang)]
    return list(dict.fromkeys(games_path(judge, lang, a, b) for a, b in pairs))


def pair_games_files(wildcards):
    """The files of every pair a judge called per pair judges, in one language (rule gather_games)."""
    return [PAIR_GAMES.format(judge=wildcards.judge, lang=wildcards.lang, model_a=a, model_b=b)
            for a, b in judge_pairs(config, wildcards.judge, wildcards.lang)]


def round_paths(pattern, judge, lang, rounds=None):
    """One path per round of a budgeted judge and language (the first ``rounds``, else all)."""
    count = ROUND_COUNTS[judge, lang] if rounds is None else rounds
    return [pattern.format(judge=judge, lang=lang, k=k) for k in range(count)]


def round_models(wildcards):
    """The models of one round: a model joining later (arena.adaptive.joined) is not in the
    earlier rounds' params or inputs, so adding it reruns none of them."""
    return answering_models(config, wildcards.lang, models_at(config, wildcards.judge, int(wildcards.k)))


def judgment_files(wildcards):
    return judgment_paths(wildcards.judge, wildcards.lang)


def contestants(wildcards):
    """The models this judge judges (its contestants, else every judged model); in a job's
    language, those that answer it."""
    if "lang" in wildcards.keys():
        return language_contestants(config, wildcards.judge, wildcards.lang)
    return judge_contestants(config, wildcards.judge)


def contestant_manifests(wildcards):
    """The answers (and questions) of this judge's contestants in every language, one manifest per
    model (a judging job's input)."""
    return expand(ANSWERS_MANIFEST, model=contestants(wildcards))


def contestant_answers_in_language(wildcards):
    return expand(ANSWERS, model=contestants(wildcards), lang=wildcards.lang)


def member_games(wildcards):
    """A panel's members and their games files in this language holding the panel's pairs (those
    every member judges), so a model only some members judge does not rerun the panel."""
    pairs = judge_pairs(config, wildcards.judge, wildcards.lang)
    members = config["judges"][wildcards.judge]["members"]
    return {member: judgment_paths(member, wildcards.lang, pairs) for member in members}


def member_judgment_files(wildcards):
    return [path for paths in member_games(wildcards).values() for path in paths]


def reads_answer_languages(judge):
    return judge_kind(config["judges"][judge], judge).reads_answer_languages


def answer_language_path(model):
    """Where a judge that scores languages reads each answer's: written by the deterministic features."""
    return expand(rules.deterministic_features.output.languages, model=model)[0]


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
        "questions": QUESTIONS.format(lang=lang),
        "answers_a": ANSWERS.format(model=model_a, lang=lang),
        "answers_b": ANSWERS.format(model=model_b, lang=lang),
        "output": games_path(judge, lang, model_a, model_b),
    }
    if reads_answer_languages(judge):
        files |= {"languages_a": answer_language_path(model_a), "languages_b": answer_language_path(model_b)}
    return files


def recorded_verdict_files(wildcards):
    """A recorded judge's local verdict files (judges.{judge}.dir) in the languages of the job."""
    languages = [wildcards.lang] if "lang" in wildcards.keys() else LANGUAGES
    return recorded_files(config, wildcards.judge, languages)
