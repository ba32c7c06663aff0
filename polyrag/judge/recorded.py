"""The ``recorded`` judge: verdicts someone already paid for, in the schema of
``nthakur/mirage-bench-pairwise-judgments`` (``query_id, model_A, model_B, verdict`` in
``A/B/Tie``, plus ``judge, output``). ``model_A`` is the answer the judge was shown first."""

from __future__ import annotations

import logging

from polyrag.data.hub import hub_rows
from polyrag.data.records import require
from polyrag.errors import DataError
from polyrag.judge.play import game_row
from polyrag.judge.verdicts import game_verdict

log = logging.getLogger(__name__)
LETTERS = {"A": "A", "B": "B", "Tie": "C"}


def recorded_games(records: list[dict], model_a: str, model_b: str, language: str, options: dict, cache_dir: str) -> list[dict]:
    source, rows = hub_rows(options["dataset"], language, options["split"], options["revision"], options["dir"], cache_dir)
    names = options["model_names"]
    ours = {names.get(model_a, model_a): model_a, names.get(model_b, model_b): model_b}
    arena = {r["query_id"]: r for r in records if r["arena"]}
    games = []
    for number, row in rows:
        require(row, ("query_id", "model_A", "model_B", "verdict"), source, number)
        if row["verdict"] not in LETTERS:
            raise DataError(f"{source}: row {number}: verdict {row['verdict']!r} is not one of A, B, Tie")
        if options["judge_name"] and row.get("judge") != options["judge_name"]:
            continue
        if {row["model_A"], row["model_B"]} != set(ours) or str(row["query_id"]) not in arena:
            continue
        a_first = ours[row["model_A"]] == model_a
        verdict = game_verdict(LETTERS[row["verdict"]], a_first)
        games.append(game_row(arena[str(row["query_id"])], model_a, model_b, a_first, verdict, row.get("output"), 0, None))
    if not games:
        log.warning("%s: no recorded verdicts for %s vs %s on the %d arena questions", source, model_a, model_b, len(arena))
    else:
        log.info("%s: %d recorded games for %s vs %s", source, len(games), model_a, model_b)
    return games
