"""Snakemake entry point of rule judge_diagnostics, per judge and language: judge_diagnostics.csv,
the first-position win rate, position consistency beside chance, invalid and tie rates (for a
panel also how often its members agreed)."""

import logging

import pandas as pd

from polyrag.arena.diagnostics import judge_diagnostics
from polyrag.arena.games import read_games
from polyrag.arena.panel import panel_agreement
from polyrag.logs import run_logged

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
    bias = judge_diagnostics(games)
    log_position_bias(bias, judge, lang)
    diagnostics = {"judge": judge, "lang": lang, **bias}
    if sm.params.panel:  # how often the members agree, over games with two or more votes
        votes = pd.concat([pd.read_parquet(path, columns=["votes", "agreement"]) for path in sm.input.games])
        diagnostics.update(panel_agreement(votes))
    pd.DataFrame([diagnostics]).to_csv(sm.output.diagnostics, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
