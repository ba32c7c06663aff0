"""Snakemake entry point of rule bradley_terry: results/arena/{judge}/{lang}/bradley_terry.csv and
judge_diagnostics.csv (first-position win rate, position consistency beside chance, invalid and
tie rates; for a panel also how often its members agreed)."""

import logging

import pandas as pd

from polyrag.arena.bradley_terry import bradley_terry
from polyrag.arena.diagnostics import judge_diagnostics
from polyrag.arena.games import read_games
from polyrag.logs import run_logged
from polyrag.seeds import rng_for


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    games = read_games(sm.input)
    table, bootstrap, tournaments = bradley_terry(
        games, sm.params.models, sm.params.regularization, sm.params.bootstrap,
        rng_for(sm.params.seed, "bootstrap", sm.wildcards.judge, sm.wildcards.lang))
    log = logging.getLogger("polyrag")
    log.info(
        "%d games on %d questions: %d ties (half a win each), %d invalid verdicts excluded",
        (games["verdict"] != "invalid").sum(), games["query_id"].nunique(),
        (games["verdict"] == "tie").sum(), (games["verdict"] == "invalid").sum())
    bias = judge_diagnostics(games)
    log.info("answer shown first wins %d of %d decisive games (95%% CI %.3f-%.3f); %d games count without "
             "their other order", bias["first_position_wins"], bias["decisive_games"],
             bias["first_position_ci_low"], bias["first_position_ci_high"], bias["games_without_other_order"])
    if bias["decisive_games"] and not bias["first_position_ci_low"] <= 0.5 <= bias["first_position_ci_high"]:
        log.warning("judge %s prefers the answer shown %s in %s", sm.wildcards.judge,
                    "first" if bias["first_position_ci_low"] > 0.5 else "second", sm.wildcards.lang)
    log.info("the two orders of a question and pair agree in %d of %d (%.3f; a judge guessing with the same "
             "verdict shares: %.3f)", bias["consistent_pairs"], bias["pairs_both_orders"],
             bias["position_consistency"], bias["position_consistency_chance"])
    diagnostics = {"judge": sm.wildcards.judge, "lang": sm.wildcards.lang, **bias}
    if sm.params.panel:  # the share of members voting with the panel's verdict, over games with a vote
        agreement = pd.concat([pd.read_parquet(path, columns=["agreement"]) for path in sm.input])["agreement"].dropna()
        diagnostics.update(panel_agreement=agreement.mean(), panel_unanimous_rate=(agreement == 1).mean())
    pd.DataFrame([diagnostics]).to_csv(sm.output.diagnostics, index=False)
    table.to_csv(sm.output.table, index=False)
    bootstrap.to_parquet(sm.output.bootstrap, index=False)
    tournaments.to_parquet(sm.output.tournaments, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
