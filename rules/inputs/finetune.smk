# The input functions and constants of rules/finetune.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.data_files import training_files
from polyrag.config.queries import (control_name, finetune_adapter_dir, finetune_dir, finetune_languages,
                                    finetune_resources, job_entry)
from polyrag.judge.kinds import ReferencePairJudge

FT_LANGUAGES = finetune_languages(config) if FT else []
FT_DIR = finetune_dir(config) if FT else None
FT_CONTROL = control_name(config) if FT else None  # the student's base served as the student is


def student_and_control_games(wildcards):
    """The arena judge's games files holding the student's games against its control, per language."""
    pair = tuple(sorted([FT["name"], FT_CONTROL]))
    return {lang: judgment_paths(ARENA_JUDGE, lang, [pair]) for lang in LANGUAGES}


def student_and_control_game_files(wildcards):
    return [path for paths in student_and_control_games(wildcards).values() for path in paths]


def scores_reference_criteria(judge):
    """Whether the judge's games carry the reference judge's criteria (its kind judges with them)."""
    return judge_kind(config["judges"][judge], judge).pair_judge is ReferencePairJudge
