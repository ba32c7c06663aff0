"""Where every system landed, for a person: the leaderboard (every system that is not a mock; the
mocks folded where there are many), your systems with their rank range and ranks per language,
the retrievers' scores, how much of the ranking is the retriever and how much the generator, the
known-truth checks and where the report is. ``make demo`` ends with it; after any run:

    python -m polyrag.show [RESULTS] [--configfile CONFIG ...]

RESULTS is the results folder or its ``leaderboard.csv``; without it, the folder the config files
name (``results_dir``, polyrag.config.outputs), else ``results``. Your systems are
those whose answers come from files (``backend: file``, read from ``leaderboard_detailed.csv``'s
``backend`` column) and the models and systems that the config files after the first name, so
that the ``--configfile`` a run was given (``config.yaml my-system.yaml``) marks ``my-system``.
A mock is a system on ``backend: mock`` (the same column).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd
import yaml

from polyrag.arena.components import report_note
from polyrag.arena.leaderboard import LABEL_ANCHORED_COLUMNS
from polyrag.config.outputs import configured_results_dir
from polyrag.csv_tables import full_precision_path, read_full_table, read_table

#: where there are more mocks than this, runs of two or more mocks next to each other in rank order
#: are folded into one line (the demo has 12 beside 5 other systems)
MOCKS_SHOWN = 4
#: the retrieval block adds a column per language up to this many languages
LANGUAGE_COLUMNS = 6


def significant(value: float, digits: int = 2) -> str:
    """``value`` to ``digits`` significant digits, never in exponent notation (empty if missing)."""
    if pd.isna(value):
        return ""
    text = f"{float(value):#.{digits}g}".rstrip(".")  # "#": 0.50 keeps its second digit
    return str(round(value)) if "e" in text else text  # 120, not 1.2e+02


def with_interval(value: float, low: float, high: float) -> str:
    if pd.isna(low) or pd.isna(high):
        return significant(value)
    return f"{significant(value)} [{significant(low)}, {significant(high)}]"


def rank_range(best, worst) -> str:
    return "" if pd.isna(best) or pd.isna(worst) else f"{int(best)}-{int(worst)}"


def users_systems_in(configfiles: Sequence[Path]) -> set[str]:
    """The models and systems the config files after the first name: what a user's own file
    (``--configfile config.yaml my-system.yaml``) adds to the base config."""
    names: set[str] = set()
    for path in configfiles[1:]:
        try:
            config = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise SystemExit(f"{path}: cannot read this config file ({error})") from None
        if not isinstance(config, dict):
            raise SystemExit(f"{path}: a config file holds keys at its top level (models:, systems:, ...)")
        for key in ("models", "systems"):
            names.update(str(name) for name in (config.get(key) or {}))
    return names


def score_sources(board: pd.DataFrame, by_language: pd.DataFrame | None) -> list[str]:
    """What each model's score is: ``BT`` (a Bradley-Terry logit in every language), ``surrogate``
    (the surrogate judge's prediction in every language), or ``BT in k of n languages``."""
    if by_language is not None and "judged" in by_language:
        judged = by_language.assign(judged=by_language["judged"].astype(str).str.lower() == "true")
        counts = judged.groupby("model")["judged"].agg(["sum", "size"])
        sources = []
        for model in board["model"]:
            if model not in counts.index:
                sources.append("")
                continue
            k, n = counts.loc[model]
            sources.append("BT" if k == n else "surrogate" if k == 0 else f"BT in {k} of {n} languages")
        return sources
    if "judged" not in board:
        return [""] * len(board)
    return ["BT" if str(judged).lower() == "true" else "surrogate" for judged in board["judged"]]


def widths_of(rows: list[list[str]]) -> list[int]:
    return [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]


def fixed_width(row: list[str], widths: list[int], right: set[int]) -> str:
    """A row padded to the columns' widths, right-aligned where ``right`` says (numbers)."""
    return "  ".join(cell.rjust(w) if k in right else cell.ljust(w) for k, (cell, w) in enumerate(zip(row, widths))
                     ).rstrip()


def leaderboard_block(board: pd.DataFrame, path: Path, mine: set[str], mocks: set[str], sources: list[str]) -> str:
    """Every model in rank order; where there are more than ``MOCKS_SHOWN`` mocks, each run of
    two or more neighbouring mocks is one line naming them (your systems are never folded)."""
    fold = len(mocks) > MOCKS_SHOWN
    foldable = [fold and model in mocks and model not in mine for model in board["model"]]
    # "ranked on": only where some model answers fewer languages than others (languages:)
    ranked_on = board["languages"].fillna("") if "languages" in board and board["languages"].nunique() > 1 else None
    rows: list[list[str] | pd.DataFrame] = [["", "rank", "ranks", "model", "score [95% interval]", "score is"]
                                            + (["ranked on"] if ranked_on is not None else [])]
    k = 0
    while k < len(board):
        end = k
        while end < len(board) and foldable[end]:
            end += 1
        if end - k >= 2:  # a run of mocks: one line
            rows.append(board.iloc[k:end])
            k = end
            continue
        row = board.iloc[k]
        rows.append([">" if row["model"] in mine else "", str(int(row["rank"])),
                     rank_range(row.get("rank_best"), row.get("rank_worst")), str(row["model"]),
                     with_interval(row["score"], row.get("ci_low"), row.get("ci_high")), sources[k]]
                    + ([ranked_on.iloc[k]] if ranked_on is not None else []))
        k += 1
    folded_ranks = [["", f"{int(row['rank'].min())}-{int(row['rank'].max())}", "", "", "", ""]
                    for row in rows if not isinstance(row, list)]
    widths = widths_of([row for row in rows if isinstance(row, list)] + folded_ranks)
    lines, folded = [], 0
    for row in rows:
        if isinstance(row, list):
            lines.append(fixed_width(row, widths, right={1}))
            continue
        folded += len(row)
        ranks = f"{int(row['rank'].min())}-{int(row['rank'].max())}"
        lines.append(fixed_width(["", ranks, "", f"{len(row)} mocks: {', '.join(row['model'])}"], widths, right={1}))
    legend = ("score: the mean over the languages it answers of each model's arena logit: its Bradley-Terry "
              "logit where the judge judged it (BT), the surrogate judge's prediction on the same scale where it "
              "did not (surrogate); 95% bootstrap interval; ranks: the joint 95% rank range"
              + ("; ranked on: the languages a model answers and is ranked over (languages:)"
                 if ranked_on is not None else ""))
    marks = "; > marks your systems" if mine & set(board["model"]) else ""
    folding = f"; {folded} mocks (backend: mock) folded, every row in the file" if folded else ""
    legend = textwrap.fill(legend, 100, break_on_hyphens=False)
    return f"Leaderboard ({path}: {len(board)} systems{folding}{marks})\n{legend}\n" + "\n".join(lines) + "\n\n"


def users_block(board: pd.DataFrame, mine: set[str], sources: list[str]) -> str:
    """Each of your systems in a sentence: rank of how many, its rank range, its score and what the
    score is, its rank in each language, and its retriever's scores where it has one."""
    if not mine:
        return ("Your systems: none marked. A system whose answers come from files (backend: file) is yours; so are\n"
                "the models and systems of the config files after the first: python -m polyrag.show RESULTS "
                "--configfile config.yaml my-system.yaml\n\n")
    board = board.assign(source=sources).set_index("model", drop=False)
    languages = [column.removeprefix("rank_") for column in board.columns
                 if column.startswith("rank_") and column not in ("rank_best", "rank_worst", "rank_style_controlled")]
    lines = []
    for model in sorted(mine):
        if model not in board.index:
            lines.append(f"{model}: not on the leaderboard (has the run that adds it finished?)")
            continue
        row = board.loc[model]
        what = {"BT": "a Bradley-Terry logit", "surrogate": "the surrogate judge's prediction"}.get(row["source"],
                                                                                                   row["source"])
        parts = [f"rank {int(row['rank'])} of {len(board)}"]
        if rank_range(row.get("rank_best"), row.get("rank_worst")):
            parts[0] += f" (95% rank range {rank_range(row['rank_best'], row['rank_worst'])})"
        parts.append(f"score {with_interval(row['score'], row.get('ci_low'), row.get('ci_high'))}"
                     + (f" ({what})" if what else ""))
        ranks = [f"{lang} {int(row[f'rank_{lang}'])}" for lang in languages if pd.notna(row[f"rank_{lang}"])]
        if ranks:
            parts.append("by language: " + ", ".join(ranks))
        answered = str(row["languages"]).split(",") if "languages" in board and pd.notna(row["languages"]) else []
        if answered and len(answered) < len(languages):
            parts.append(f"ranked over {', '.join(answered)} only, the languages it answers (not asked "
                         f"{', '.join(lang for lang in languages if lang not in answered)})")
        for measure in ("nDCG@10", "Recall@5"):
            column = f"retrieval_{measure}"
            if column in board and pd.notna(row[column]):
                parts.append(f"its retriever's {measure} "
                             f"{with_interval(row[column], row[f'{column}_lower'], row[f'{column}_upper'])}")
        lines.append(f"{model}: " + "; ".join(parts))
    return "Your systems:\n" + "\n".join(lines) + "\n\n"


def label_anchored_block(wide: pd.DataFrame, rows: int = 10) -> str:
    names = {wide_name: name for name, wide_name in LABEL_ANCHORED_COLUMNS.items()}
    wide = wide.reindex(columns=["model", "label_anchored_by", *names]).rename(columns=names)
    anchored = wide[wide["logit"].notna()].sort_values("rank")
    anchored = anchored[["rank", "model", "logit", "ci_low", "ci_high", "rank_best", "rank_worst"]].astype(
        {"rank": int, "rank_best": int, "rank_worst": int})  # read back as floats beside the empty ones
    shown = (anchored.head(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}") if len(anchored)
             else "(no model's logit is estimable from these labels)")
    left_out = wide[wide["logit"].isna() & wide["note"].notna()]  # not estimable: the note says why
    shown += "".join(f"\n{row.model}: {row.note}" for row in left_out.itertuples())
    return (f"Label-anchored ranking ({wide['label_anchored_by'].iloc[0]}; intervals for the labellers' "
            f"preferences):\n{shown}\n\n")


def summary(leaderboard: Path, report: Path, mine: Iterable[str] = (), configfiles: Sequence[Path] = ()) -> str:
    """The whole summary: ``mine`` and the models the ``configfiles`` after the first add are
    yours, as are the systems read from files."""
    # the full-precision twins of the rounded CSVs: ranks, ranges and scores as computed
    board = read_full_table(leaderboard)
    detailed_path = leaderboard.with_name("leaderboard_detailed.csv")
    detailed = read_full_table(detailed_path) if full_precision_path(detailed_path).exists() else None
    if detailed is not None:  # the per-language ranks, what each system is, its retriever's scores
        extra = [column for column in detailed.columns if column not in board.columns]
        board = board.merge(detailed[["model", *extra]], on="model", how="left")
    by_language_path = leaderboard.with_name("leaderboard_by_language.csv")
    by_language = read_full_table(by_language_path) if full_precision_path(by_language_path).exists() else None
    backend = board["backend"] if "backend" in board else pd.Series("", index=board.index)
    mocks = set(board.loc[backend == "mock", "model"])
    mine = set(mine) | users_systems_in(configfiles) | set(board.loc[backend == "file", "model"])
    sources = score_sources(board, by_language)
    text = leaderboard_block(board, leaderboard, mine, mocks, sources) + users_block(board, mine, sources)
    if detailed is not None and "label_anchored_by" in detailed:
        text += label_anchored_block(detailed)
    retrieval = leaderboard.parent / "retrieval" / "leaderboard.csv"
    if full_precision_path(retrieval).exists():
        text += retrieval_block(read_full_table(retrieval), retrieval)
    for components in sorted(leaderboard.parent.glob("arena/*/components.json")):
        text += f"Retriever or generator? ({components}):\n{report_note(json.loads(components.read_text()))}\n\n"
    checks = leaderboard.with_name("checks.csv")
    if checks.exists():
        text += checks_block(read_table(checks), checks)
    return text + report_block(report, leaderboard, configfiles)


def report_block(report: Path, leaderboard: Path, configfiles: Sequence[Path]) -> str:
    """The report's path, and the command that rebuilds it where it is missing or older than the
    leaderboard (a run does not rebuild it: ``snakemake --report`` does)."""
    text = ""
    if not report.exists() or report.stat().st_mtime < leaderboard.stat().st_mtime:
        configs = " ".join(str(path) for path in configfiles) or "<the run's config files>"
        state = "is not built" if not report.exists() else f"is older than {leaderboard}"
        text = f"The report {state}; build it with:\n  snakemake --configfile {configs} --report {report}\n"
    return text + f"Report: open {report.resolve()} in a browser"


def retrieval_block(table: pd.DataFrame, path: Path, measures: tuple[str, ...] = ("nDCG@10", "Recall@5")) -> str:
    """The retrievers over all languages (the macro average; the one language where there is one):
    each measure with its interval and the joint rank range; the first measure in each language
    where there are at most ``LANGUAGE_COLUMNS``; and every row's note (few questions, questions
    without a relevant document), with the languages it holds for."""
    languages = [lang for lang in pd.unique(table["lang"]) if lang != "all"]
    overall = table[table["lang"] == "all"] if (table["lang"] == "all").any() else table
    shown = pd.DataFrame({"rank": overall["rank"].astype(int), "retriever": overall["model"],
                          "ranks": [rank_range(b, w) for b, w in zip(overall["rank_best"], overall["rank_worst"])]})
    for measure in measures:
        shown[measure] = [with_interval(m, lo, hi) for m, lo, hi in
                          zip(overall[measure], overall[f"{measure}_lower"], overall[f"{measure}_upper"])]
    if 1 < len(languages) <= LANGUAGE_COLUMNS:
        by_language = table.pivot(index="model", columns="lang", values=measures[0])
        for lang in languages:
            shown[lang] = [significant(v) for v in by_language.loc[overall["model"], lang]]
    level = overall["level"].iloc[0] if len(overall) else 0.95
    scope = (f"macro average over the {len(languages)} languages {', '.join(languages)}" if len(languages) > 1
             else f"one language, {languages[0]}" if languages else "no language")
    each = f", then {measures[0]} in each language" if 1 < len(languages) <= LANGUAGE_COLUMNS else ""
    # the path on the heading's own line: wrapped with the rest, a long one would part "Retrieval" from it
    text = f"Retrieval ({path}):\n" + textwrap.fill(
        f"{scope}{each}; {level:.0%} intervals over questions; ranks: the joint rank range from a max-|t| "
        "stepdown over every two runs' difference", 100, break_on_hyphens=False)
    text += f"\n{shown.to_string(index=False)}\n"
    notes = table[table["note"].notna() & (table["note"] != "")] if "note" in table else table.iloc[:0]
    notes = notes[~notes["note"].str.fullmatch(r"macro average over \d+ languages")]  # the scope above says it
    systems = set(table["model"])
    for note, rows in notes.groupby("note", sort=False):
        where = ", ".join(pd.unique(rows["lang"]))
        who = "" if set(rows["model"]) == systems else f" ({', '.join(pd.unique(rows['model']))})"
        text += f"note, {where}{who}: {note}\n"
    return text + "\n"


def checks_block(checks: pd.DataFrame, path: Path) -> str:
    """One line per known-truth check (polyrag.checks): PASS or FAIL, what was expected, what came out."""
    passed = checks["passed"].astype(str).str.lower() == "true"  # read back from CSV: True/False as text or bool
    lines = [f"{'PASS' if ok else 'FAIL'}  {row.check} ({row.subject}): expected {row.expected}; got {row.observed}"
             for ok, row in zip(passed, checks.itertuples())]
    return (f"Checks ({path}: what the config's known truths say the run must recover; "
            f"{int(passed.sum())} of {len(checks)} passed):\n" + "\n".join(lines) + "\n\n")


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m polyrag.show", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", type=Path,
                        help="the results folder, or its leaderboard.csv (default: the results_dir of the config "
                             "files, else results)")
    parser.add_argument("report", nargs="?", type=Path, help="the report (default: RESULTS/report.html)")
    parser.add_argument("--configfile", nargs="+", default=[], type=Path,
                        help="the run's config files: the models and systems of those after the first are yours")
    args = parser.parse_args(argv)
    if args.results is None:
        args.results = Path(configured_results_dir(args.configfile))
    leaderboard = args.results if args.results.suffix == ".csv" else args.results / "leaderboard.csv"
    if not leaderboard.is_file():
        sys.exit(f"{leaderboard}: no leaderboard here; run the workflow first (make demo, or snakemake "
                 f"--configfile ...), or name the results folder: python -m polyrag.show RESULTS")
    try:
        return summary(leaderboard, args.report or leaderboard.with_name("report.html"), configfiles=args.configfile)
    except FileNotFoundError as missing:  # a twin of an older run's CSV (read_full_table names it and the fix)
        sys.exit(str(missing))


if __name__ == "__main__":
    print(main())
