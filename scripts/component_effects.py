"""Snakemake entry point of rule component_effects, per judge: components.csv and
components.json, the additive Bradley-Terry fit of the systems that cross passage sources and
generators (a passages effect plus a generator effect), over the games of every language."""

import json
import logging

import pandas as pd

from polyrag.arena.components import component_effects
from polyrag.arena.games import read_games
from polyrag.logs import run_logged
from polyrag.seeds import rng_for

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    judge = sm.wildcards.judge
    # Question ids are per language: a question is "{lang}:{query_id}", its language its stratum.
    games = pd.concat([read_games(paths).assign(query_id=lambda frame, lang=lang: lang + ":" + frame["query_id"])
                       for lang, paths in sm.params.games.items()], ignore_index=True)
    strata = {question: question.split(":", 1)[0] for question in games["query_id"].unique()}
    cells = {system: tuple(cell) for system, cell in sm.params.cells.items()}
    if sm.params.left_out:
        log.info("left out of the fit (not connected to the crossed systems): %s", ", ".join(sm.params.left_out))
    table, summary = component_effects(games, cells, sm.params.regularization, sm.params.bootstrap,
                                       rng_for(sm.params.seed, "components", judge), strata=strata)
    summary = {"judge": judge, "languages": list(sm.params.games), **summary}
    log.info("%s", summary["verdict"])
    log.info("interaction: %s", summary["interaction_note"])
    for note in summary["notes"]:
        log.warning("judge %s: %s", judge, note)
    table.to_csv(sm.output.table, index=False)
    with open(sm.output.summary, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2)


run_logged(main, snakemake.log[0])  # noqa: F821
