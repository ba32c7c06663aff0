"""A panel of judges (a jury, as in PoLL, "Replacing Judges with Juries"): one verdict per game
from the verdicts of its member judges, by plurality vote.

Every game (question, pair, order) judged by at least one member gets the verdict most members
gave it among their valid verdicts (``model_a``, ``model_b`` or ``tie``); when two verdicts are
equally common, the panel calls a tie (a split panel has no preference); when no member gave a
valid verdict, the game is ``invalid``. An ``invalid`` member verdict is an abstention and a
member that did not judge the game (a judge run on a subset of pairs) has no vote.

Why a vote per game rather than pooling every member's verdict as a game of its own: the panel
then has one game per (question, pair, order), like any judge, so its Bradley-Terry fit (with the
same L2 penalty against the same number of games), its position diagnostics and its agreement
with other judges read exactly as a single judge's; and a member that is outvoted (a judge
answering by position, say) does not move the verdict, which pooling would let it do in
proportion to its share of the members. With two members that give a valid verdict in every
game and never call a tie, the two choices coincide: a split is a tie, and pooling counts it as
half a win each, which is what a tie is in the fit (a tie beside a win is a tie for the panel,
three quarters of a win pooled).

Disagreements are kept, never dropped: ``votes`` (valid member verdicts), ``agreement`` (share of
those given to the most common verdict: 1 for a unanimous panel, 0.5 for two members split, nan
without votes) and one ``verdict_{judge}`` column per member (null where that member did not
judge the game).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.arena.diagnostics import GAME_KEY, LABELS, unique_games
from polyrag.arena.games import COLUMNS
from polyrag.errors import DataError


def panel_games(games_by_judge: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The panel's games table: ``COLUMNS`` (accepted by ``bradley_terry`` and
    ``judge_diagnostics``), then ``votes``, ``agreement`` and ``verdict_{judge}`` per member."""
    if not games_by_judge:
        raise DataError("a panel needs at least one member judge")
    member_columns = {judge: f"verdict_{judge}" for judge in games_by_judge}
    wide = None
    for judge, games in games_by_judge.items():
        games = unique_games(games, f"judge {judge}")[GAME_KEY + ["verdict"]]
        games = games.rename(columns={"verdict": member_columns[judge]})
        wide = games if wide is None else wide.merge(games, on=GAME_KEY, how="outer")
    verdicts = wide[list(member_columns.values())]
    counts = np.stack([(verdicts == label).sum(axis=1).to_numpy() for label in LABELS], axis=1)
    votes, most = counts.sum(axis=1), counts.max(axis=1)
    unique_top = (counts == most[:, None]).sum(axis=1) == 1
    winner = np.where(unique_top, counts.argmax(axis=1), LABELS.index("tie"))
    verdict = np.where(votes > 0, np.array(LABELS)[winner], "invalid")
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(votes > 0, most / votes, np.nan)
    panel = wide[GAME_KEY].assign(verdict=verdict, votes=votes, agreement=agreement)
    panel = pd.concat([panel, verdicts.astype(object).where(verdicts.notna(), None)], axis=1)
    return panel[COLUMNS + ["votes", "agreement", *member_columns.values()]].sort_values(
        GAME_KEY, ignore_index=True)
