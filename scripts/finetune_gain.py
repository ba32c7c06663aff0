"""Snakemake entry point of rule finetune_gain: results/finetune/{name}/gain_over_control.csv, the
fine-tuned student against its control under the arena judge (polyrag.finetune.gain)."""

import logging

from polyrag.arena.games import read_games
from polyrag.logs import run_logged
from polyrag.finetune.gain import gain_over_control


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    p = sm.params
    games = {lang: read_games(paths, ("raw_output",)) for lang, paths in p.games.items()}
    table = gain_over_control(games, p.student, p.control, p.reference_judge)
    for row in table.to_dict("records"):
        logging.getLogger("polyrag").info(
            "%s: %s wins %d, loses %d, ties %d against %s (score %.3f, 95%% CI %.3f-%.3f)%s", row["lang"], p.student,
            row["student_wins"], row["control_wins"], row["ties"], p.control, row["score"], row["score_ci_low"],
            row["score_ci_high"], "".join(f"; {c} {row[f'{c}_gain']:+.3f}" for c in ("similarity", "citation", "language")
                                          if f"{c}_gain" in row))
    table.to_csv(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
