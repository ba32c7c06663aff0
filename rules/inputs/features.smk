# The input functions and constants of rules/features.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.queries import embedding_resources

# One feature group's table of one model and language; merge_features joins them into FEATURES.
FEATURE_GROUP = results_path("features/{model}/{lang}/{group}.parquet")


def feature_groups():
    """The configured feature groups; model-based groups only when configured."""
    groups = ["deterministic"]
    if config["features"]["embedding_similarity"]:
        groups.append("embedding")
    return groups + [group for group in ("nli", "reranker", "llm") if config["features"][group]]


def feature_group_files(wildcards):
    """The feature groups of one model, language by language (in the order of LANGUAGES)."""
    return [FEATURE_GROUP.format(model=wildcards.model, lang=lang, group=group)
            for lang in model_language_keys(wildcards) for group in feature_groups()]


def model_features(wildcards):
    return expand(FEATURES, model=wildcards.model, lang=model_language_keys(wildcards))


def llm_feature_judge(wildcards):
    name = config["features"]["llm"]["judge"]
    return {"name": name, "entry": config["judges"][name]}


def llm_feature_judge_entry(wildcards):
    return llm_feature_judge(wildcards)["entry"]
