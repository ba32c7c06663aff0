"""Snakemake entry point of rule bradley_terry, per judge and language:
- bradley_terry.csv, bootstrap.parquet, tournaments.parquet: the Bradley-Terry fit and its question
  bootstrap;
- judge_diagnostics.csv: first-position win rate, position consistency beside chance, invalid and
  tie rates (for a panel also how often its members agreed);
- style_controlled.csv, style_coefficients.csv, style_bootstrap.parquet: the style-controlled fit."""

import logging

import pandas as pd

from polyrag.arena.bradley_terry import MIN_BOOTSTRAP_QUESTIONS, bradley_terry
from polyrag.arena.diagnostics import judge_diagnostics
from polyrag.arena.games import read_games
from polyrag.arena.panel import panel_agreement
from polyrag.arena.style_control import answer_style, style_controlled_bt
from polyrag.logs import run_logged
from polyrag.seeds import rng_for
from polyrag.text import e5_token_counter

log = logging.getLogger("polyrag")


def log_position_bias(bias: dict, judge: str, lang: str) -> None:
    log.info("answer shown first wins %d of %d decisive games (95%% CI %.3f-%.3f); %d games count without "
             "their other order", bias["first_position_wins"], bias["decisive_games"],
             bias["first_position_ci_low"], bias["first_position_ci_high"], bias["games_without_other_order"])
    if bias["decisive_games"] and not bias["first_position_ci_low"] <= 0.5 <= bias["first_position_ci_high"]:
        log.warning("judge %s prefers the answer shown %s in %s", judge,
                    "first" if bias["first_position_ci_low"] > 0.5 else "second", lang)
    log.info("the two orders of a question and pair agree in %d of %d (%.3f; a judge guessing with the same "
             "verdict shares: %.3f)", bias["consistent_pairs"], bias["pairs_both_orders"],
             bias["position_consistency"], bias["position_consistency_chance"])


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    judge, lang = sm.wildcards.judge, sm.wildcards.lang
    games = read_games(sm.input.games)
    table, bootstrap, tournaments = bradley_terry(
        games, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "bootstrap", judge, lang))
    log.info(
        "%d games on %d questions: %d ties (half a win each), %d invalid verdicts excluded",
        (games["verdict"] != "invalid").sum(), games["query_id"].nunique(),
        (games["verdict"] == "tie").sum(), (games["verdict"] == "invalid").sum())
    if games["query_id"].nunique() < MIN_BOOTSTRAP_QUESTIONS:
        log.warning("judge %s has games on only %d questions in %s: its intervals (question bootstrap) are not "
                    "reliable below %d", judge, games["query_id"].nunique(), lang, MIN_BOOTSTRAP_QUESTIONS)
    table.to_csv(sm.output.table, index=False)
    bootstrap.to_parquet(sm.output.bootstrap, index=False)
    tournaments.to_parquet(sm.output.tournaments, index=False)

    bias = judge_diagnostics(games)
    log_position_bias(bias, judge, lang)
    diagnostics = {"judge": judge, "lang": lang, **bias}
    if sm.params.panel:  # how often the members agree, over games with two or more votes
        votes = pd.concat([pd.read_parquet(path, columns=["votes", "agreement"]) for path in sm.input.games])
        diagnostics.update(panel_agreement(votes))
    pd.DataFrame([diagnostics]).to_csv(sm.output.diagnostics, index=False)

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
