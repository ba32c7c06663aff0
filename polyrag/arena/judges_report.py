"""The judges beside the leaderboard: one report page from the per-judge, per-language tables
(``judge_diagnostics.csv``, ``judge_agreement.csv``, ``self_preference.csv``,
``style_coefficients.csv``, ``bradley_terry.csv``) and MEMERAG's ``judge_credibility.csv``.

Intervals are printed as ``value [low, high]`` so that a reader sees each number with its
uncertainty; the CSVs keep them as separate columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.stats.bootstrap import rank_by


def with_interval(value: pd.Series, low: pd.Series, high: pd.Series) -> pd.Series:
    """``"0.52 [0.41, 0.63]"`` per row; "n/a" where the value is missing."""
    def two_decimals(x: float) -> str:
        return f"{round(x, 2) + 0.0:.2f}"  # + 0.0: no "-0.00" for a rounding of -0.001

    return pd.Series([f"{two_decimals(v)} [{two_decimals(lo)}, {two_decimals(hi)}]" if pd.notna(v) else "n/a"
                      for v, lo, hi in zip(value, low, high)], index=value.index)


def diagnostics_with_human_agreement(diagnostics: pd.DataFrame, credibility: pd.DataFrame | None) -> pd.DataFrame:
    """The diagnostics of every judge and language, with ``memerag_balanced_accuracy_{prompt}``: the
    judge's MEMERAG faithfulness balanced accuracy against human labels in that language, where it
    was meta-evaluated (a column per prompt; empty elsewhere)."""
    if credibility is None or credibility.empty:
        return diagnostics
    human = credibility.pivot_table(index=["judge", "lang"], columns="prompt", values="balanced_accuracy", aggfunc="first")
    human.columns = [f"memerag_balanced_accuracy_{prompt}" for prompt in human.columns]
    return diagnostics.merge(human.reset_index(), on=["judge", "lang"], how="left")


def diagnostics_view(diagnostics: pd.DataFrame) -> pd.DataFrame:
    view = pd.DataFrame({
        "judge": diagnostics["judge"], "lang": diagnostics["lang"], "games": diagnostics["games"],
        "questions": diagnostics["questions"],
        "invalid_rate": diagnostics["invalid_rate"], "tie_rate": diagnostics["tie_rate"],
        "first_position_win_rate": with_interval(diagnostics["first_position_win_rate"],
                                                 diagnostics["first_position_ci_low"], diagnostics["first_position_ci_high"]),
        "position_consistency": with_interval(diagnostics["position_consistency"],
                                              diagnostics["position_consistency_ci_low"],
                                              diagnostics["position_consistency_ci_high"]),
        "position_consistency_chance": diagnostics["position_consistency_chance"],
    })
    extra = [c for c in diagnostics.columns if c.startswith(("panel_", "memerag_"))]
    return pd.concat([view, diagnostics[extra]], axis=1)


def agreement_view(agreement: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "judge": agreement["judge"], "other_judge": agreement["other_judge"], "lang": agreement["lang"],
        "games_both_valid": agreement["games_both_valid"],
        "kappa": with_interval(agreement["kappa"], agreement["kappa_ci_low"], agreement["kappa_ci_high"]),
        "observed_agreement": agreement["observed_agreement"], "chance_agreement": agreement["chance_agreement"],
        "member_of_panel": agreement["member_of_panel"].map({True: "yes", False: ""}),
    })


def self_preference_view(preference: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "judge": preference["judge"], "model": preference["model"], "lang": preference["lang"],
        "family": preference["family"],
        "self_preference": with_interval(preference["self_preference"], preference["ci_low"], preference["ci_high"]),
        "logit": preference["logit"], "logit_other_judges": preference["logit_other_judges"],
        "other_judges": preference["other_judges"], "models_compared": preference["models_compared"],
        "questions_compared": preference["questions_compared"],
    })


def style_view(coefficients: pd.DataFrame) -> pd.DataFrame:
    """One row per judge and language, one column per covariate: coefficient [interval]."""
    cells = coefficients.assign(cell=with_interval(coefficients["coefficient"], coefficients["ci_low"],
                                                   coefficients["ci_high"]))
    wide = cells.pivot(index=["judge", "lang"], columns="covariate", values="cell")
    order = list(dict.fromkeys(zip(coefficients["judge"], coefficients["lang"])))  # as given, not sorted
    wide = wide.loc[order, list(dict.fromkeys(coefficients["covariate"]))]
    wide.columns.name = None
    return wide.reset_index()


def rankings_by_judge(bradley_terry: pd.DataFrame, arena_judge: str) -> pd.DataFrame:
    """Each judge's overall ranking: ``score_{judge}`` is the mean Bradley-Terry logit over
    languages (as the leaderboard's score), ``rank_{judge}`` orders it; models in the order of the
    arena judge. A judge with contestants ranks only those."""
    judges = list(dict.fromkeys(bradley_terry["judge"]))
    scores = bradley_terry.groupby(["judge", "model"])["logit"].mean().unstack("judge")[judges]
    table = pd.DataFrame(index=scores.index)
    for judge in judges:
        table[f"rank_{judge}"] = rank_by(scores[judge]).astype("Int64").array
        table[f"score_{judge}"] = scores[judge]
    order = scores[arena_judge].fillna(-np.inf).sort_values(ascending=False).index
    return table.loc[order].reset_index()
