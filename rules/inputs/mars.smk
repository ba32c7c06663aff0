# The input functions and constants of rules/mars.smk (snakemake --lint keeps functions apart from rules).
from polyrag.config.data_files import mars_gold_files
from polyrag.config.queries import (
    job_entry,
    mars_calibration_pairs,
    mars_gold_pairs,
    mars_judge_resources,
    mars_languages,
    mars_pairs,
)

MARS_LANGUAGES = mars_languages(config) if MARS else []
MARS_PAIRS = mars_pairs(config) if MARS else []
MARS_GOLD_PAIRS = mars_gold_pairs(config) if MARS else []
MARS_METRICS = MARS["metrics"] if MARS else []
# The models MARS scores: those answering one of its languages (a partial model: in those only).
MARS_MODELS = [model for model in MODELS if any(answers_language(config, model, lang) for lang in MARS_LANGUAGES)]


wildcard_constraints:
    pair=alternatives(MARS_GOLD_PAIRS),
    metric=alternatives(MARS_METRICS),


def mars_gold_data_files(wildcards):
    return mars_gold_files(config, wildcards.pair)


def evaluated_question_files(wildcards):
    """Data files whose questions MARS's XQuAD gold data must not reuse (only XQuAD can collide)."""
    if config["data"]["source"] != "xquad":
        return []
    return expand(QUESTIONS, lang=LANGUAGES)


def mars_corpus_files(wildcards):
    """The data files with passages in the pair's passage language (mars.corpus.source: data)."""
    if MARS["corpus"]["source"] != "data":
        return []
    passage_lang = wildcards.pair.split("-")[0]
    return [QUESTIONS.format(lang=lang) for lang in LANGUAGES if lang.split("-")[-1] == passage_lang]


def mars_generator(wildcards):
    return {"name": MARS["generator"], "entry": job_entry(config, MARS["generator"])}


def mars_generator_entry(wildcards):
    return mars_generator(wildcards)["entry"]


def mars_calibration_inputs(wildcards):
    if MARS["calibration"]["source"] == "gold":
        return expand(rules.mars_gold.output[0], pair=mars_calibration_pairs(config))
    if MARS["calibration"]["source"] == "tsv":
        return [MARS["calibration"]["path"]]
    return expand(rules.memerag_sentences.output[0], memerag_lang=META_LANGUAGES)


def mars_model_languages(wildcards):
    """MARS's languages that this model answers."""
    return [lang for lang in MARS_LANGUAGES if answers_language(config, wildcards.model, lang)]


def mars_answer_files(wildcards):
    return {
        "questions": expand(QUESTIONS, lang=mars_model_languages(wildcards)),
        "answers": expand(ANSWERS, model=wildcards.model, lang=mars_model_languages(wildcards)),
    }
