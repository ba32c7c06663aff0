# The input functions and constants of rules/data.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.data_files import question_files
from polyrag.config.queries import job_entry


def question_data_files(wildcards):
    """The local files select_questions reads (data.dir): an edited one reruns its language."""
    return question_files(config, wildcards.lang)


def time_filter_entry(wildcards):
    name = config["data"]["miracl"]["time_filter_model"]
    if config["data"]["source"] != "miracl" or name is None:
        return None
    return {"name": name, "entry": job_entry(config, name)}


def time_filter_threads(wildcards):
    """The time-filter model's threads (its llama.cpp or torch threads follow them); 1 without one."""
    time_filter = time_filter_entry(wildcards)
    return 1 if time_filter is None else model_resources(time_filter["entry"])["threads"]
