"""Snakemake entry point of rule leaderboard_table: results/leaderboard.html for the report, the
short leaderboard first, then every column of leaderboard_detailed.csv."""

from pathlib import Path

import pandas as pd

from polyrag.logs import run_logged
from polyrag.report_table import sections_html


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    detailed = pd.read_csv(sm.input.detailed)
    mars_scope = (f" MARS columns (mars_*) pool only the languages in mars_languages "
                  f"({', '.join(sorted(set(detailed['mars_languages'].dropna())))})."
                  if "mars_languages" in detailed else "")
    page = sections_html("Leaderboard", [
        ("Leaderboard", "score: mean arena logit over languages with its 95% interval; rank_best..rank_worst: the "
         "ranks the intervals allow, jointly for all models (results/leaderboard.csv).",
         pd.read_csv(sm.input.leaderboard)),
        ("Every column", "Per-language ranks, mean rank, style-controlled score and rank, and the MARS scores "
         f"(results/leaderboard_detailed.csv).{mars_scope}", detailed),
    ])
    Path(sm.output[0]).write_text(page, encoding="utf-8")


run_logged(main, snakemake.log[0])  # noqa: F821
