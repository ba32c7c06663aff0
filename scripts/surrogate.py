"""Snakemake entry point of rule surrogate: results/arena/{judge}/{lang}/surrogate.csv."""

import json

import pandas as pd

from polyrag.arena.surrogate import surrogate, surrogate_store
from polyrag.csv_tables import read_table
from polyrag.logs import run_logged
from polyrag.seeds import stable_seed


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings = sm.params.surrogate
    questions = pd.read_parquet(sm.input.questions, columns=["query_id", "arena"])
    features = {model: pd.read_parquet(path) for model, path in zip(sm.params.models, sm.input.features)}
    table, samples, metrics, model_features = surrogate(
        features, read_table(sm.input.bradley_terry), pd.read_parquet(sm.input.bootstrap),
        pd.read_parquet(sm.input.tournaments), questions.loc[questions["arena"], "query_id"].astype(str).tolist(),
        settings["regressor"], settings["params"], settings["holdout_models"], settings["holdout_repeats"],
        stable_seed(sm.params.seed, "surrogate", sm.wildcards.judge, sm.wildcards.lang) % 2**32, sm.threads,
        surrogate_store(sm.params.cache_dir))
    table.to_csv(sm.output.table, index=False)
    samples.to_parquet(sm.output.bootstrap, index=False)
    model_features.to_csv(sm.output.features, index=False)
    with open(sm.output.metrics, "w") as handle:
        json.dump(metrics, handle, indent=2)


run_logged(main, snakemake.log[0])  # noqa: F821
