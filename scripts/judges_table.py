"""Snakemake entry point of rule judges_table: results/judges.html (the judges beside the
leaderboard) and results/judge_diagnostics.csv (every judge and language in one table)."""

from pathlib import Path

import pandas as pd

from polyrag.arena.judges_report import (agreement_view, diagnostics_view, diagnostics_with_human_agreement,
                                         rankings_by_judge, self_preference_view, style_view)
from polyrag.csv_tables import read_table
from polyrag.logs import run_logged
from polyrag.report_table import sections_html

NOTES = {
    "diagnostics": (
        "first_position_win_rate: how often the judge picks whichever answer it read first (95% interval); a fair "
        "judge is near 0.50 because every pair is shown in both orders. position_consistency: the share of "
        "question-pairs whose verdict stays the same when the two answers swap places, beside the most a judge "
        "that does not read the answers reaches with the same tie rate (position_consistency_chance). invalid_rate: replies "
        "that could not be read as a verdict (left out of the ranking); tie_rate: ties among readable verdicts. "
        "panel_agreement: the mean share of a panel's judges that gave the panel's verdict (1: unanimous)."),
    "agreement": (
        "Cohen's kappa on the games both judges judged: agreement beyond what their verdict frequencies alone would "
        "produce (1: full agreement, 0: chance). A panel's kappa with one of its own members (member_of_panel) is "
        "inflated: that member's verdicts are among the panel's votes."),
    "self_preference": (
        "How much higher, in Bradley-Terry logits, a judge places a contestant of its own family than the judges of "
        "other families do; 0: no favouritism, an interval excluding 0: unlikely to be chance. A judge whose verdicts "
        "carry little information (e.g. position bias) pulls every logit towards 0, which also moves this number."),
    "style": (
        "Style-controlled Bradley-Terry: how much one typical difference between two answers in length (tokens), "
        "number of citations, or markdown elements shifts the judge's preference, in "
        "logits (positive: the judge rewards more of it), with 95% intervals."),
    "rankings": (
        "Each judge's own ranking: rank and score (mean Bradley-Terry logit over languages) per judge; a judge with "
        "contestants ranks only those. Set arena.judge to rank the leaderboard by another judge or a panel."),
}


def read_all(paths: list[str]) -> pd.DataFrame:
    frames = [read_table(path) for path in paths]
    frames = [frame for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    i, p = sm.input, sm.params
    diagnostics = diagnostics_with_human_agreement(
        read_all(i.diagnostics), read_table(i.credibility) if i.credibility else None)
    diagnostics.to_csv(sm.output.diagnostics, index=False)
    bradley_terry = pd.concat([read_table(path).assign(judge=judge, lang=lang) for path, (judge, lang) in zip(
        i.bradley_terry, [(judge, lang) for judge in p.judges for lang in p.languages])], ignore_index=True)
    coefficients = pd.concat([read_table(path).assign(judge=judge, lang=lang) for path, (judge, lang) in zip(
        i.style_coefficients, [(judge, lang) for judge in p.judges for lang in p.languages])], ignore_index=True)
    agreement, preference = read_all(i.agreement), read_all(i.self_preference)
    sections = [
        ("Judge diagnostics", NOTES["diagnostics"], diagnostics_view(diagnostics)),
        ("Rankings by judge", NOTES["rankings"], rankings_by_judge(bradley_terry, p.arena_judge)),
        ("Agreement between judges", NOTES["agreement"] if len(p.judges) > 1 else "One judge: nothing to compare.",
         agreement_view(agreement) if not agreement.empty else pd.DataFrame()),
        ("Self-preference", NOTES["self_preference"] if not preference.empty else
         "No judge shares a family with a contestant (family: under models and judges).",
         self_preference_view(preference) if not preference.empty else pd.DataFrame()),
        ("Style coefficients", NOTES["style"], style_view(coefficients)),
    ]
    Path(sm.output.page).write_text(sections_html("Judges", sections), encoding="utf-8")


run_logged(main, snakemake.log[0])  # noqa: F821
