"""Reading a verdict: the last [[A]], [[B]] or [[C]] in the output, nothing else.

Taking the first substring found (as the reference implementation does) misreads outputs that
quote the format ("answer [[A]] if ..., [[B]] if ...") before deciding.
"""

from __future__ import annotations

import re

VERDICT = re.compile(r"\[\[\s*([ABC])\s*\]\]")


def parse_verdict(text: str | None) -> str | None:
    """'A', 'B', 'C' (tie), or None when the output holds no verdict."""
    found = VERDICT.findall(text or "")
    return found[-1] if found else None


def game_verdict(letter: str | None, a_shown_first: bool) -> str:
    """The verdict in terms of the file's sorted pair: ``model_a``, ``model_b``, ``tie`` or ``invalid``.

    ``letter`` refers to the positions in the prompt (A = shown first)."""
    if letter is None:
        return "invalid"
    if letter == "C":
        return "tie"
    first_won = letter == "A"
    return "model_a" if first_won == a_shown_first else "model_b"
