"""Snakemake entry point of rule surrogate, per judge: in every language,
results/arena/{judge}/{lang}/surrogate.csv, surrogate_bootstrap.parquet, surrogate_metrics.json
and model_features.csv. Each model's features are read from the paths its manifest lists."""

import json
import logging

import pandas as pd

from polyrag.arena.surrogate import surrogate, surrogate_store
from polyrag.csv_tables import read_table
from polyrag.logs import run_logged
from polyrag.manifest import manifest_paths
from polyrag.seeds import stable_seed


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings, judge, languages = sm.params.surrogate, sm.wildcards.judge, sm.params.languages
    store = surrogate_store(sm.params.cache_dir)
    # input.features follows params.models: one manifest per model, one path per language
    # a model that answers some languages (model_languages) has features in those only
    answered = sm.params.model_languages
    paths = {model: dict(zip(answered[model], manifest_paths(manifest, "features", answered[model])))
             for model, manifest in zip(sm.params.models, sm.input.features)}
    for k, lang in enumerate(languages):
        logging.getLogger("polyrag").info("surrogate of %s in %s", judge, lang)
        questions = pd.read_parquet(sm.input.questions[k], columns=["query_id", "arena"])
        features = {model: pd.read_parquet(paths[model][lang]) for model in sm.params.models if lang in paths[model]}
        table, samples, metrics, model_features = surrogate(
            features, read_table(sm.input.bradley_terry[k]), pd.read_parquet(sm.input.bootstrap[k]),
            pd.read_parquet(sm.input.tournaments[k]), questions.loc[questions["arena"], "query_id"].astype(str).tolist(),
            settings["regressor"], settings["params"], settings["holdout_models"], settings["holdout_repeats"],
            stable_seed(sm.params.seed, "surrogate", judge, lang) % 2**32, sm.threads, store)
        table.to_csv(sm.output.table[k], index=False)
        samples.to_parquet(sm.output.bootstrap[k], index=False)
        model_features.to_csv(sm.output.features[k], index=False)
        with open(sm.output.metrics[k], "w") as handle:
            json.dump(metrics, handle, indent=2)


run_logged(main, snakemake.log[0])  # noqa: F821
