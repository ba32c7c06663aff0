# The input functions and constants of rules/generate.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.data_files import system_answer_files
from polyrag.config.queries import generation_settings, job_entry, wrong_language_source
from polyrag.systems.answer_files import reads_answer_files


def model_language_keys(wildcards):
    """The languages this model answers (polyrag.config.queries.model_languages): its jobs' languages."""
    return model_languages(config, wildcards.model)


def model_questions(wildcards):
    return expand(QUESTIONS, lang=model_language_keys(wildcards))


def model_answers(wildcards):
    return expand(ANSWERS, model=wildcards.model, lang=model_language_keys(wildcards))


def model_entry(wildcards):
    """Only this model's own entry (without its baselines: switching them on adds their jobs and
    reruns none of its own): editing another model never reruns this one's jobs."""
    return job_entry(config, wildcards.model)


def model_settings(wildcards):
    """The sampling settings of a language model; none for a system read from files, so that a new
    generation.temperature or prompt never reruns it."""
    if reads_answer_files(config["models"][wildcards.model]):
        return {}
    return generation_settings(config, wildcards.model)


def wrong_language_sources(wildcards):
    """Mock systems answer some questions in another language: that language, per language."""
    entry = config["models"][wildcards.model]
    if entry["backend"] != "mock" or entry.get("grounded") or "wrong_language" not in entry["corruptions"]:
        return {}
    return {lang: wrong_language_source(entry, lang, LANGUAGES) for lang in model_language_keys(wildcards)}


def student_adapter_files(wildcards):
    """The fine-tuned student's adapter (its generation job waits for training, rules/finetune.smk);
    nothing for any other model, so adding fine-tuning leaves the other models' jobs as they were."""
    if not FT or wildcards.model != FT["name"]:
        return []
    return [rules.train_student.output.adapter, rules.train_student.output.adapter_config]


def answer_files(wildcards):
    """A system read from files (backend: file): its answer files and corpus, so that editing one
    reruns its generation job and what reads its answers; nothing for a language model."""
    return system_answer_files(config, wildcards.model)
