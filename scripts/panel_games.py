"""Snakemake entry point of rule panel_games: results/judgments/{panel}/{lang}/games.parquet, one
vote per game over the members' verdicts on the games every member judged, every member's verdict
kept beside it; members.csv: how many of each member's games the panel kept."""

import logging

from polyrag.arena.games import read_games
from polyrag.arena.panel import panel_agreement, panel_coverage, panel_games
from polyrag.logs import run_logged

log = logging.getLogger("polyrag")


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    members = {member: read_games(paths) for member, paths in sm.params.members.items()}
    panel = panel_games(members)
    coverage = panel_coverage(members, panel)
    for row in coverage.itertuples():
        if row.share_in_panel < 1:
            log.warning("panel %s in %s: %d of %s's %d games are outside the panel, which judges only the games "
                        "every member judged", sm.wildcards.judge, sm.wildcards.lang,
                        row.games_judged - row.games_in_panel, row.member, row.games_judged)
    agreement = panel_agreement(panel)
    log.info("%s in %s: %d games, %d without any valid member verdict (invalid); over the %d games with two or "
             "more votes, mean agreement %.3f, unanimous %.3f", sm.wildcards.judge, sm.wildcards.lang, len(panel),
             (panel["votes"] == 0).sum(), agreement["panel_multi_vote_games"], agreement["panel_agreement"],
             agreement["panel_unanimous_rate"])
    panel.to_parquet(sm.output.games, index=False)
    coverage.to_csv(sm.output.members, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
