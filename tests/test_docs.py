"""The README stays a page read in a minute (at most 120 lines) that links every page under docs/,
and no relative link in the README or docs/ points to a file or heading that does not exist."""

from __future__ import annotations

import re

LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)")


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", markdown, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_the_readme_links_every_doc_and_every_link_resolves(repo):
    readme = (repo / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    pages = sorted(path.relative_to(repo).as_posix() for path in (repo / "docs").glob("*.md"))
    assert [page for page in pages if f"]({page})" not in readme] == []
    broken = []
    for path in [repo / "README.md", *(repo / "docs").glob("*.md")]:
        text = path.read_text()
        for target, anchor in LINK.findall(text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            resolved = (path.parent / target) if target else path
            if not resolved.exists():
                broken.append(f"{path.name}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
                broken.append(f"{path.name}: {target}#{anchor}")
    assert broken == []
