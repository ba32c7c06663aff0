"""The planner against a simulation with a known truth: arenas of known Bradley-Terry strengths,
fitted by polyrag's own Bradley-Terry with its question bootstrap. The questions the planner
recommends from a pilot, run, give the target half-width within 10% (averaged over pilots)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from polyrag.arena.bradley_terry import bradley_terry
from polyrag.planner import half_widths, labels_plan, needed, questions_needed, questions_plan
from polyrag.config.queries import model_pairs

MODELS = ["m0", "m1", "m2", "m3", "m4"]
STRENGTHS = np.array([0.0, 0.4, 0.8, 1.2, 1.6])  # the known truth
QUESTION_SD = 0.5  # each question shifts each model's strength: games of one question are correlated
REGULARIZATION = 0.01


def arena(n_questions: int, rng: np.random.Generator) -> pd.DataFrame:
    """Every pair on every question in both orders, verdicts drawn from the known strengths."""
    rows = []
    for q in range(n_questions):
        strength = STRENGTHS + rng.normal(0, QUESTION_SD, len(MODELS))
        for a, b in model_pairs(MODELS):
            p = 1 / (1 + math.exp(-(strength[MODELS.index(a)] - strength[MODELS.index(b)])))
            for first in (a, b):
                rows.append({"query_id": f"q{q:04d}", "model_a": a, "model_b": b, "shown_first": first,
                             "verdict": "model_a" if rng.random() < p else "model_b"})
    return pd.DataFrame(rows)


def widest(n_questions: int, rng: np.random.Generator) -> float:
    table, _, _ = bradley_terry(arena(n_questions, rng), MODELS, REGULARIZATION, 200, rng)
    return float(half_widths(table).max())


def test_needed_is_the_inverse_square_root_extrapolation():
    assert needed(100, 0.4, 0.2) == 400
    assert needed(50, 0.3, 0.3) == 50
    assert needed(10, 0.31, 0.1) == math.ceil(10 * 3.1 ** 2)
    with pytest.raises(ValueError):
        needed(10, 0.3, 0)


@pytest.mark.parametrize("pilot_questions, shrink", [(20, 2.0), (40, 1.5)])
def test_recommended_questions_reach_the_target_width(pilot_questions, shrink):
    rng = np.random.default_rng(55)
    recommended, targets, achieved = [], [], []
    for _ in range(12):  # pilots
        pilot = widest(pilot_questions, rng)
        target = pilot / shrink
        n = questions_needed(pilot_questions, pilot, target)
        recommended.append(n)
        targets.append(target)
        achieved.append(widest(n, rng))
    # each run's achieved half-width against its target: within 10% on average over pilots
    ratio = np.mean(np.array(achieved) / np.array(targets))
    print(f"pilot {pilot_questions}, target 1/{shrink}: achieved/target {ratio:.3f}, questions {recommended}")
    assert abs(ratio - 1) <= 0.10, (ratio, recommended)


def test_questions_plan_reads_the_arena_tables(tmp_path):
    for lang, width in (("en", 0.4), ("de", 0.2)):
        folder = tmp_path / "arena" / "j" / lang
        folder.mkdir(parents=True)
        pd.DataFrame({"model": ["NA", "b"], "logit": [0.0, 1.0], "ci_low": [-width, 1 - width / 2],
                      "ci_high": [width, 1 + width / 2], "n_questions": [50, 50]}).to_csv(folder / "bradley_terry.csv", index=False)
    plan = questions_plan(tmp_path / "arena", "j", ["en", "de"], 0.2).set_index("lang")
    # independently: the smallest Q whose t(Q-1) sqrt(Q/(Q-1)) x the pilot's sd x sqrt(50/Q) meets 0.2
    def c(q):
        return stats.t.ppf(0.975, q - 1) * math.sqrt(q / (q - 1))

    def smallest(width):
        return next(q for q in range(2, 10000) if c(q) * width / c(50) * math.sqrt(50 / q) <= 0.2)

    assert plan.loc["en", "questions_needed"] == smallest(0.4)  # 190: not 200, the critical value falls with Q
    assert plan.loc["de", "questions_needed"] == smallest(0.2) == 50
    assert plan.loc["en", "pilot_half_width"] == pytest.approx(0.4)


def test_labels_plan_scales_labels_and_their_worth():
    table = pd.DataFrame({"ci_low": [-0.3, 0.5], "ci_high": [0.3, 0.7], "n_eff": [90.0, 120.0]})
    plan = labels_plan(table, 30, 0.15)
    assert plan["labels_needed"] == 120 and plan["labels_only_equivalent"] == 360
