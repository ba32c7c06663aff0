"""Snakemake entry point of rule style_control, per judge and language: style_controlled.csv,
style_coefficients.csv and style_bootstrap.parquet, Bradley-Terry with the answers' length,
citation count and markup as covariates (Chatbot Arena's style control)."""

import logging

import pandas as pd

from polyrag.arena.games import read_games
from polyrag.arena.style_control import answer_style, style_controlled_bt
from polyrag.logs import run_logged
from polyrag.seeds import rng_for
from polyrag.text import e5_token_counter

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    judge, lang = sm.wildcards.judge, sm.wildcards.lang
    games = read_games(sm.input.games)
    # input.answers follows params.models (results/answers/{model}/{lang}.parquet, in that order).
    questions = pd.read_parquet(sm.input.questions)
    count_tokens = e5_token_counter()
    style = {model: answer_style(questions, pd.read_parquet(path), count_tokens)
             for model, path in zip(sm.params.models, sm.input.answers)}
    style_table, coefficients, style_bootstrap = style_controlled_bt(
        games, style, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "style_control", judge, lang))
    for row in coefficients.itertuples():
        log.info("style control, %s: %.3f (95%% CI %.3f to %.3f) per typical difference", row.covariate,
                 row.coefficient, row.ci_low, row.ci_high)
    style_table.to_csv(sm.output.style_table, index=False)
    coefficients.to_csv(sm.output.style_coefficients, index=False)
    style_bootstrap.to_parquet(sm.output.style_bootstrap, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
