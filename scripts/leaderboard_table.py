"""Snakemake entry point of rule leaderboard_table: results/leaderboard.html for the report."""

from pathlib import Path

import pandas as pd

from polyrag.logs import run_logged
from polyrag.report_table import table_html


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    page = table_html(pd.read_csv(sm.input[0]), "Leaderboard")
    Path(sm.output[0]).write_text(page, encoding="utf-8")


run_logged(main, snakemake.log[0])  # noqa: F821
