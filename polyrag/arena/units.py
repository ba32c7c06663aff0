"""Units of a label-anchored arena: one question and one unordered model pair.

A unit's models are in sorted order (``model_a < model_b``), whatever order the judgments file
wrote them in. The judge's value of a unit is model_a's mean score over the judge's valid orders
(1 win, 0.5 tie, 0 loss), so a judge's position bias cancels where both orders are valid. A unit
whose every order is invalid keeps the value 0.5 and is counted (``valid_orders == 0``): dropping
it would change the population that a uniform sample of human labels stands for.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

UNIT_COLUMNS = ["unit_id", "lang", "query_id", "model_a", "model_b", "judge_value", "valid_orders", "orders"]


def unit_id(lang: str, query_id: str, model_a: str, model_b: str) -> str:
    """A short opaque id: it names no model, so a task file can show it to annotators."""
    return "u" + hashlib.sha256(f"{lang}\x1f{query_id}\x1f{model_a}\x1f{model_b}".encode()).hexdigest()[:12]


def judge_units(games: pd.DataFrame, lang: str) -> pd.DataFrame:
    """One row per (question, unordered pair) of ``games`` (``polyrag.arena.games.read_games``)."""
    first = games[["model_a", "model_b"]].min(axis=1)
    second = games[["model_a", "model_b"]].max(axis=1)
    won_by = games["model_a"].where(games["verdict"] == "model_a", games["model_b"])
    score = np.where(games["verdict"] == "tie", 0.5, (won_by == first).astype(float))
    frame = pd.DataFrame({"query_id": games["query_id"].astype(str), "model_a": first, "model_b": second,
                          "valid": games["verdict"] != "invalid"})
    frame["score"] = np.where(frame["valid"], score, np.nan)
    units = frame.groupby(["query_id", "model_a", "model_b"], sort=True).agg(
        judge_value=("score", "mean"), valid_orders=("valid", "sum"), orders=("valid", "size")).reset_index()
    units["judge_value"] = units["judge_value"].fillna(0.5)
    units["valid_orders"] = units["valid_orders"].astype(int)
    units.insert(0, "lang", lang)
    units.insert(0, "unit_id", [unit_id(lang, *row) for row in
                                units[["query_id", "model_a", "model_b"]].itertuples(index=False)])
    return units[UNIT_COLUMNS]
