"""Snakemake entry point of rule style_control: results/arena/{judge}/{lang}/style_controlled.csv,
style_coefficients.csv and style_bootstrap.parquet."""

import logging

import pandas as pd

from polyrag.arena.games import read_games
from polyrag.arena.style_control import answer_style, style_controlled_bt
from polyrag.logs import run_logged
from polyrag.seeds import rng_for
from polyrag.text import e5_token_counter


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    games = read_games(sm.input.games)
    questions = pd.read_parquet(sm.input.questions)
    # input.answers follows params.models (results/answers/{model}/{lang}.parquet, in that order).
    count_tokens = e5_token_counter()
    style = {model: answer_style(questions, pd.read_parquet(path), count_tokens)
             for model, path in zip(sm.params.models, sm.input.answers)}
    table, coefficients, bootstrap = style_controlled_bt(
        games, style, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "style_control", sm.wildcards.judge, sm.wildcards.lang))
    for row in coefficients.itertuples():
        logging.getLogger("polyrag").info("%s: %.3f (95%% CI %.3f to %.3f) per typical difference", row.covariate,
                                          row.coefficient, row.ci_low, row.ci_high)
    table.to_csv(sm.output.table, index=False)
    coefficients.to_csv(sm.output.coefficients, index=False)
    bootstrap.to_parquet(sm.output.bootstrap, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
