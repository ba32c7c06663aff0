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

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from polyrag.config.outputs import results_dir
from polyrag.ledger import load_config


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


def labels_plan(table: pd.DataFrame, n_labels: int | None, target: float) -> dict:
    """From a label-anchored table (``ci_low``, ``ci_high``, ``n_eff``) fitted on ``n_labels`` human
    labels: the labels needed for ``target`` (widest half-width) and what they are worth (``n_eff``
    scaled alike: a labels-only ranking would need that many)."""
    n_labels = int(table["n_labels"].max()) if n_labels is None else n_labels
    widest = float(half_widths(table).max())
    labels = needed(n_labels, widest, target)
    n_eff = float(table["n_eff"].min()) if "n_eff" in table else float("nan")
    return {"labels_pilot": n_labels, "labels_pilot_half_width": widest, "labels_target_half_width": target,
            "labels_needed": labels, "labels_only_equivalent": math.ceil(n_eff * labels / n_labels)
            if n_labels and not math.isnan(n_eff) else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m polyrag.planner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", default="config.yaml")
    parser.add_argument("--judge", default=None, help="the arena's judge (default: the leaderboard's)")
    parser.add_argument("--target", type=float, required=True, help="target half-width of the Bradley-Terry intervals (logits)")
    parser.add_argument("--labels-target", type=float, default=None,
                        help="target half-width of the label-anchored intervals (needs arena.human_labels)")
    args = parser.parse_args(argv)
    from polyrag.config.queries import arena_judge

    config = load_config(args.configfile, Path(__file__).resolve().parent.parent)
    judge = args.judge or arena_judge(config)
    arena = Path(results_dir(config)) / "arena"
    plan = questions_plan(arena, judge, config["languages"], args.target)
    if args.labels_target is not None and config["arena"]["human_labels"]:
        labelled = config["arena"]["human_labels"]["judge"]
        labels = []
        for lang in config["languages"]:
            path = arena / labelled / lang / "label_anchored.csv"
            labels.append(labels_plan(pd.read_csv(path, dtype={"model": str}), None, args.labels_target)
                          if path.exists() else {})
        plan = pd.concat([plan, pd.DataFrame(labels)], axis=1)
    plan.to_csv(Path(results_dir(config)) / "plan.csv", index=False)
    print(plan.to_string(index=False))
    print("An extrapolation from the pilot's measured variance (half-width ~ c(Q)/sqrt(Q)); docs/planning.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
