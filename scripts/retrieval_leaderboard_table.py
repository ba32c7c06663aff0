"""Snakemake entry point of rule retrieval_leaderboard_table: results/retrieval/leaderboard.html,
the retrieval leaderboard as a table the report shows (it offers CSVs only as downloads)."""

from pathlib import Path

from polyrag.csv_tables import read_table
from polyrag.logs import run_logged
from polyrag.report_table import table_html


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    page = table_html(read_table(sm.input[0]), "Retrieval leaderboard")
    Path(sm.output[0]).write_text(page, encoding="utf-8")


run_logged(main, snakemake.log[0])  # noqa: F821
