"""A panel of judges (a jury, as in PoLL, "Replacing Judges with Juries"): one verdict per game
from the verdicts of its member judges, by plurality vote.

The panel judges the games (question, pair, order) that every member judged: a member run on a
subset of models or questions (``contestants``, ``max_questions``) narrows the panel to that
subset. Were the panel to vote on every game any member judged, a split between two members
would turn into a tie only among the models the narrower member judged, moving those models
against all the others (in the demo, +0.5 logits for one model). ``panel_coverage`` says how
many of each member's games the panel kept. Each game gets the verdict most members gave it among
their valid verdicts (``model_a``, ``model_b`` or ``tie``); when two verdicts are equally common,
the panel calls a tie (a split panel has no preference); when no member gave a valid verdict, the
game is ``invalid``. An ``invalid`` member verdict is an abstention.

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
    """The panel's games table over the games every member judged: ``COLUMNS`` (accepted by
    ``bradley_terry`` and ``judge_diagnostics``), then ``votes``, ``agreement`` and
    ``verdict_{judge}`` per member."""
    if not games_by_judge:
        raise DataError("a panel needs at least one member judge")
    member_columns = {judge: f"verdict_{judge}" for judge in games_by_judge}
    wide = None
    for judge, games in games_by_judge.items():
        games = unique_games(games, f"judge {judge}")[GAME_KEY + ["verdict"]]
        games = games.rename(columns={"verdict": member_columns[judge]})
        wide = games if wide is None else wide.merge(games, on=GAME_KEY, how="inner")
    if wide.empty:
        raise DataError(f"the panel's members {list(games_by_judge)} have no game in common: a panel judges "
                        "the games every member judged (give its members overlapping contestants and questions)")
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


def panel_coverage(games_by_judge: dict[str, pd.DataFrame], panel: pd.DataFrame) -> pd.DataFrame:
    """Per member: the games it judged (of those given: the workflow reads the member's games in
    the panel's pairs), how many of them the panel judged (``share_in_panel``: below 1 when
    another member judged fewer questions) and its valid votes among the panel's games."""
    rows = []
    for judge, games in games_by_judge.items():
        column = panel[f"verdict_{judge}"]
        rows.append({"member": judge, "games_judged": len(games), "games_in_panel": len(panel),
                     "share_in_panel": len(panel) / len(games) if len(games) else np.nan,
                     "valid_votes_in_panel": int((column.notna() & (column != "invalid")).sum())})
    return pd.DataFrame(rows)


def panel_agreement(panel: pd.DataFrame) -> dict:
    """How often the members agree, over the games with at least two valid votes (a single vote
    agrees with itself and would read as agreement): ``panel_multi_vote_games``,
    ``panel_agreement`` (mean share of votes given to the panel's verdict) and
    ``panel_unanimous_rate``; nan without such games."""
    voted = panel.loc[panel["votes"] >= 2, "agreement"]
    return {"panel_multi_vote_games": len(voted),
            "panel_agreement": voted.mean() if len(voted) else np.nan,
            "panel_unanimous_rate": (voted == 1).mean() if len(voted) else np.nan}
