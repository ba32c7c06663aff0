"""The report's categories, named in one place: the rules file their results under these names
(``report(..., category=REPORT[key])``) and the report's front text (``report/workflow.rst``) links
to them by their label, through its ``category`` macro, so its links follow these names.

Snakemake's menu sorts categories by name, so each name carries its place in the order below
("1. Results"): the results first, then how far the judges can be trusted, then figures, then
downloads. Adding one here renumbers the rest, and the links with them.
"""

from __future__ import annotations

#: key -> label, in the order the report's menu lists them
CATEGORIES = {
    "results": "Results",
    "answers": "Answers",
    "judges": "Judges",
    "meta_eval": "Meta-evaluation",
    "mars": "MARS",
    "arena": "Arena",
    "features": "Features",
    "surrogate": "Surrogate",
    "downloads": "Downloads",
}
#: key -> the category's name in the report ("1. Results")
REPORT = {key: f"{place}. {label}" for place, (key, label) in enumerate(CATEGORIES.items(), 1)}


def label_of(name: str) -> str:
    """The label of a category's name: "1. Results" -> "Results" (what report/workflow.rst links by)."""
    return name.split(". ", 1)[-1]
