"""The planner: from a pilot run's intervals, the arena questions (and human labels) a target
interval half-width needs, per language.

What it is: an extrapolation from measured variance. A Bradley-Terry interval comes from a
bootstrap over questions, so its half-width shrinks as ``1/sqrt(questions)`` when the design (the
pairs, both orders, the judge's behaviour, the models' strengths) stays as in the pilot; the
questions needed for a target half-width ``h`` are ``n_pilot * (h_pilot / h)**2``, rounded up,
where ``h_pilot`` is the widest half-width in the pilot (every model's interval then meets the
target). Assumptions: the new questions are drawn like the pilot's; the judge behaves as it did;
the pilot has enough questions for its bootstrap to measure the variance (docs/planning.md:
tests/test_planner.py checks the recommendation reaches its target within 10% from pilots of 20
questions and more). The label-anchored ranking's interval shrinks with its human labels the same
way (its ``n_eff`` says what a label is worth); the labels needed scale alike and are stated as
the same extrapolation, untested by simulation.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def needed(pilot_size: int, pilot_half_width: float, target_half_width: float) -> int:
    """Units (questions or labels) for ``target_half_width``: ``pilot_size * (pilot / target)**2``."""
    if target_half_width <= 0:
        raise ValueError("the target half-width must be positive")
    return max(1, math.ceil(pilot_size * (pilot_half_width / target_half_width) ** 2))


def questions_needed(pilot_questions: int, pilot_half_width: float, target_half_width: float,
                     confidence: float = 0.95) -> int:
    """Arena questions for ``target_half_width`` of a Bradley-Terry interval: its half-width is the
    small-sample critical value ``c(Q)`` (``polyrag.stats.bootstrap.critical_value``) times a bootstrap
    sd that shrinks as ``1/sqrt(Q)``; the smallest Q whose ``c(Q) * sd_pilot * sqrt(Q_pilot / Q)``
    meets the target (from ``needed``'s plain scaling, adjusted for c(Q))."""
    from polyrag.stats.bootstrap import critical_value

    tail = (1 - confidence) / 2
    sd = pilot_half_width / critical_value(pilot_questions, tail)
    n = needed(pilot_questions, sd * critical_value(pilot_questions, tail), target_half_width)
    for _ in range(20):  # c(Q) falls with Q: a few fixed-point steps settle it
        following = max(2, math.ceil(pilot_questions * (sd * critical_value(n, tail) / target_half_width) ** 2))
        if following == n:
            break
        n = following
    return n


def half_widths(table: pd.DataFrame) -> pd.Series:
    """Each model's half-width (``ci_high - ci_low``) / 2 of a bradley_terry.csv or label-anchored table."""
    return (table["ci_high"] - table["ci_low"]) / 2


def questions_plan(arena_dir: str | Path, judge: str, languages: list[str], target: float) -> pd.DataFrame:
    """Per language: the pilot's arena questions and widest half-width, and the questions needed for
    ``target`` (from results/arena/{judge}/{lang}/bradley_terry.csv)."""
    rows = []
    for lang in languages:
        table = pd.read_csv(Path(arena_dir) / judge / lang / "bradley_terry.csv", dtype={"model": str})
        pilot, widest = int(table["n_questions"].max()), float(half_widths(table).max())
        rows.append({"lang": lang, "pilot_questions": pilot, "pilot_half_width": widest, "target_half_width": target,
                     "questions_needed": questions_needed(pilot, widest, target)})
    return pd.DataFrame(rows)


def labels_plan(table: pd.DataFrame, n_labels: int, target: float) -> dict:
    """From a label-anchored table (``ci_low``, ``ci_high``, ``n_eff``) fitted on ``n_labels`` human
    labels: the labels needed for ``target`` (widest half-width) and what they are worth (``n_eff``
    scaled alike: a labels-only ranking would need that many)."""
    widest = float(half_widths(table).max())
    labels = needed(n_labels, widest, target)
    n_eff = float(table["n_eff"].min()) if "n_eff" in table else float("nan")
    return {"pilot_labels": n_labels, "pilot_half_width": widest, "target_half_width": target,
            "labels_needed": labels, "labels_only_equivalent": math.ceil(n_eff * labels / n_labels)
            if n_labels and not math.isnan(n_eff) else None}
