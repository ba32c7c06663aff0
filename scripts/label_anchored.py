"""Snakemake entry point of rule label_anchored: label_anchored.csv and label_agreement.csv of one
judge, per language or pooled over the labelled languages (``all``)."""

import json
import logging
from pathlib import Path

import pandas as pd

from polyrag.arena.games import read_games
from polyrag.arena.label_anchored import label_anchored_table
from polyrag.arena.label_agreement import agreement_over_languages
from polyrag.logs import run_logged

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    settings = sm.params.human_labels  # config arena.human_labels
    units = pd.concat([pd.read_parquet(p) for p in sm.input.units], ignore_index=True)
    labels = pd.concat([pd.read_parquet(p) for p in sm.input.labels], ignore_index=True)
    counts = {}
    for path in sm.input.counts:
        with open(path) as handle:
            for name, value in json.load(handle).items():
                if name != "source":
                    counts[name] = counts.get(name, 0) + value
    table = label_anchored_table(units, labels, sm.params.models, counts, alpha=settings["alpha"], lam=settings["lambda"],
                                 cluster_by_question=settings["cluster_by_question"],
                                 active=settings["sample"]["design"] == "active")
    table.insert(1, "scope", sm.wildcards.scope)
    log.info("%d units, %d human labels; lambda per model %s; n_eff per model %s", len(units), len(labels),
             dict(zip(table["model"], table["lambda"].round(3))), dict(zip(table["model"], table["n_eff"].round(1))))
    for row in table[~table["estimable"]].itertuples():
        log.warning("label-anchored %s: %s", row.model, row.note)
    games = {lang: read_games([p for p in sm.input.games if f"/{lang}/" in p]) for lang in sm.params.languages}
    answers = {}
    for path in map(Path, sm.input.answers):  # results/answers/{model}/{lang}.parquet
        answers[path.stem, path.parent.name] = pd.read_parquet(path, columns=["query_id", "answer"])
    agreement = agreement_over_languages(units, labels, games, answers)
    table.to_csv(sm.output.table, index=False)
    agreement.to_csv(sm.output.agreement, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
