"""Results tables as self-contained HTML pages for the Snakemake report.

The report shows HTML and image results in the page but offers CSV results only as downloads, so
the leaderboard is registered twice: the CSV for download and this page to be read.
"""

from __future__ import annotations

import html
import re

import pandas as pd

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; font-size: 14px; margin: 12px; color: #1f2937; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 4px 10px; border-bottom: 1px solid #e5e7eb; text-align: right; white-space: nowrap; }}
th {{ background: #f3f4f6; position: sticky; top: 0; }}
td:first-child, th:first-child {{ text-align: left; font-weight: 600; }}
p.note {{ max-width: 60em; color: #4b5563; }}
</style></head>
<body><h2>{title}</h2>
{body}
</body></html>
"""
RANK = re.compile(r"^rank($|_)")  # rank columns are integers (a CSV turns them to floats when one is empty)


def html_table(table: pd.DataFrame) -> str:
    """Floats to two decimals, ranks as integers, missing values shown as "n/a", not blank."""
    table = table.copy()
    for column in table.columns:
        values = table[column]
        whole_floats = pd.api.types.is_float_dtype(values) and (values.dropna() % 1 == 0).all()
        if isinstance(values.dtype, pd.Int64Dtype) or (RANK.match(str(column)) and whole_floats):
            table[column] = [str(int(v)) if pd.notna(v) else "n/a" for v in values]  # to_html ignores na_rep for <NA>
    return table.to_html(index=False, float_format=lambda x: f"{x:.2f}", na_rep="n/a", border=0)


def table_html(table: pd.DataFrame, title: str) -> str:
    """``table`` as one HTML page."""
    return PAGE.format(title=html.escape(title), body=html_table(table))


def sections_html(title: str, sections: list[tuple[str, str, pd.DataFrame]]) -> str:
    """One page of ``(heading, note, table)`` sections; a section with an empty table shows its note only."""
    parts = []
    for heading, note, table in sections:
        parts.append(f"<h3>{html.escape(heading)}</h3>\n<p class=\"note\">{html.escape(note)}</p>")
        if not table.empty:
            parts.append(html_table(table))
    return PAGE.format(title=html.escape(title), body="\n".join(parts))
