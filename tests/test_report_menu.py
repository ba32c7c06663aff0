"""The report's front text (report/workflow.rst) links to its categories by the names in
polyrag/report_menu.py, rendered as Snakemake renders it (Jinja, then docutils)."""

from __future__ import annotations

import re
import textwrap
import warnings

from docutils.core import publish_parts
from jinja2 import Environment
from snakemake.report import Category

from polyrag.report_menu import CATEGORIES, REPORT, label_of

#: Snakemake 9.27's links of the workflow description (snakemake/report/__init__.py, auto_report)
RST_LINKS = textwrap.dedent("""

.. _Workflow: javascript:show_panel('workflow')
.. _Statistics: javascript:show_panel('statistics')
{% for cat, catresults in categories|dictsort %}
.. _{{ cat.name }}: javascript:app.showCategory('{{ cat.name|urlencode }}')
{% endfor %}
""")


def front_text(repo, names) -> str:
    """report/workflow.rst as HTML, in a report whose categories have these names."""
    class Snakemake:
        config = {"languages": ["en", "de"]}

    text = (repo / "report" / "workflow.rst").read_text() + RST_LINKS
    rst = Environment(trim_blocks=True, lstrip_blocks=True).from_string(text).render(
        snakemake=Snakemake, categories={Category(name): {} for name in names}, files=[])
    with warnings.catch_warnings():  # docutils' notice of a renamed argument, which Snakemake passes too
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return publish_parts(rst, writer_name="html")["html_body"]


def links(html) -> dict[str, str]:
    """Each category link's text and the category it opens."""
    return {text: target for target, text in
            re.findall(r"""href="javascript:app.showCategory\('([^']+)'\)">([^<]+)</a>""", html)}


def test_the_front_text_links_each_category_by_its_name_in_the_menu(repo):
    html = front_text(repo, REPORT.values())
    assert links(html) == {REPORT[key]: REPORT[key].replace(" ", "%20") for key in ("results", "answers", "judges", "downloads")}
    assert "system-message" not in html and "problematic" not in html


def test_the_links_follow_a_renumbered_menu_and_skip_a_category_without_results(repo):
    """A category inserted before Results renumbers every name; a run without answers has no
    Answers category: the text names it without a link (a link would point nowhere)."""
    renumbered = [f"{place}. {label}" for place, label in enumerate(["Overview", *CATEGORIES.values()], 1)
                  if label != "Answers"]
    html = front_text(repo, renumbered)
    assert set(links(html)) == {"2. Results", "4. Judges", "10. Downloads"}
    assert "system-message" not in html and "problematic" not in html
    assert re.search(r"</a> the\s+answers browser", html) is None and re.search(r"tables; Answers the\s+answers", html)


def test_the_front_text_asks_only_for_labels_the_menu_has(repo):
    asked = re.findall(r'category\("([^"]+)"\)', (repo / "report" / "workflow.rst").read_text())
    assert asked and set(asked) <= set(CATEGORIES.values())
    assert all(label_of(REPORT[key]) == label for key, label in CATEGORIES.items())
    assert list(REPORT.values()) == sorted(REPORT.values(), key=lambda name: int(name.split(".")[0]))
