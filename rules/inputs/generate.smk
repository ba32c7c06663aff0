# The input functions and constants of rules/generate.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.queries import generation_settings, job_entry, wrong_language_source


def model_entry(wildcards):
    """Only this model's own entry (without its baselines: switching them on adds their jobs and
    reruns none of its own): editing another model never reruns this one's jobs."""
    return job_entry(config, wildcards.model)


def model_settings(wildcards):
    return generation_settings(config, wildcards.model)


def wrong_language_sources(wildcards):
    """Mock systems answer some questions in another language: that language, per language."""
    entry = config["models"][wildcards.model]
    if entry["backend"] != "mock" or entry.get("grounded") or "wrong_language" not in entry["corruptions"]:
        return {}
    return {lang: wrong_language_source(entry, lang, LANGUAGES) for lang in LANGUAGES}


def student_adapter_files(wildcards):
    """The fine-tuned student's adapter (its generation job waits for training, rules/finetune.smk);
    nothing for any other model, so adding fine-tuning leaves the other models' jobs as they were."""
    if not FT or wildcards.model != FT["name"]:
        return []
    return [rules.train_student.output.adapter, rules.train_student.output.adapter_config]
