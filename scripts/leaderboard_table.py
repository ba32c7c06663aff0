"""Snakemake entry point of rule leaderboard_table: results/leaderboard.html for the report, the
short leaderboard first, the label-anchored ranking and the component effects ("Retriever or
generator?") where there are some, then every column of leaderboard_detailed.csv."""

import json
from pathlib import Path

from polyrag.arena.components import read_components, report_note
from polyrag.csv_tables import read_table
from polyrag.logs import run_logged
from polyrag.report_table import sections_html


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    detailed = read_table(sm.input.detailed)
    mars_scope = (f" MARS columns (mars_*) pool only the languages in mars_languages "
                  f"({', '.join(sorted(set(detailed['mars_languages'].dropna())))})."
                  if "mars_languages" in detailed else "")
    sections = [
        ("Leaderboard", "score: mean arena logit over languages with its 95% interval; rank_best..rank_worst: ranks "
         "that hold jointly for all models at 95%, from simultaneous intervals of every two models' score difference "
         "(a max-|t| critical value over the pairs, stepdown), not from the overlap of the intervals shown (results/leaderboard.csv). These "
         "intervals say how sure we are about the judge's preferences, not people's.",
         read_table(sm.input.leaderboard)),
    ]
    if sm.input.label_anchored:
        anchored = read_table(sm.input.label_anchored)
        shown = anchored.reindex(columns=["rank", "model", "logit", "ci_low", "ci_high", "rank_best", "rank_worst",
                                          "judge_only_logit", "judge_only_rank", "labels_only_logit", "n_labels",
                                          "n_eff", "lambda", "note"])
        sections.append((
            "Label-anchored ranking", f"{detailed['label_anchored_by'].iloc[0]}: Bradley-Terry logits whose 95% "
            "intervals and joint rank-sets hold for the labellers' preferences (PPI++, docs/human_labels.md; "
            f"{sm.input.label_anchored}). judge_only: the judge's own logits; n_eff: the human labels alone would need "
            "this many for intervals as narrow; an empty logit is not estimable from these labels (note says why).",
            shown))
    if sm.input.components:  # the arena judge's systems cross passage sources and generators
        (table,), (summary,) = sm.input.components, sm.input.components_summary
        with open(summary, encoding="utf-8") as handle:
            note = report_note(json.load(handle))
        sections.append(("Retriever or generator?", f"{note} ({table})", read_components(table)))
    sections.append(("Every column", "Per-language ranks, mean rank, style-controlled score and rank, the MARS "
                     f"scores and the label-anchored ranking (results/leaderboard_detailed.csv).{mars_scope}", detailed))
    page = sections_html("Leaderboard", sections)
    Path(sm.output[0]).write_text(page, encoding="utf-8")


run_logged(main, snakemake.log[0])  # noqa: F821
