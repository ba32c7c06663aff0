"""A results table as a self-contained HTML page for the Snakemake report.

The report shows HTML and image results in the page but offers CSV results only as downloads, so
the leaderboard is registered twice: the CSV for download and this page to be read.
"""

from __future__ import annotations

import html

import pandas as pd

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; font-size: 14px; margin: 12px; color: #1f2937; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 4px 10px; border-bottom: 1px solid #e5e7eb; text-align: right; white-space: nowrap; }}
th {{ background: #f3f4f6; position: sticky; top: 0; }}
td:first-child, th:first-child {{ text-align: left; font-weight: 600; }}
</style></head>
<body><h2>{title}</h2>
{table}
</body></html>
"""


def table_html(table: pd.DataFrame, title: str) -> str:
    """``table`` as one HTML page: floats to two decimals, missing values shown as "n/a", not blank."""
    body = table.to_html(index=False, float_format=lambda x: f"{x:.2f}", na_rep="n/a", border=0)
    return PAGE.format(title=html.escape(title), table=body)
