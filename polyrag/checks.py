"""Known-truth checks: what a run must recover because the config built it in (``checks:``).

The demo's mock systems have known error rates, its Gemma judge is known to pick the answer it
reads first, its fine-tuned student is known to beat its control, and its human labels come from a
stand-in judge whose own ranking is known. Each check reads the workflow's result files and says, per
subject, what was expected, what came out and whether that passed (``results/checks.csv``,
printed by ``make demo`` after the leaderboard). A failed check is a row, never an error: the run
still writes its outputs.

``CHECKS`` is the table of checks: a config key under ``checks:`` (schemas/config.schema.yaml)
names an entry and its expectation. An entry says

- ``reads``: the files it needs, by ingredient name; rules/checks.smk resolves each ingredient to
  the rule outputs that hold it (``leaderboard``, ``by_language``, ``detailed``, ``mars_systems``,
  ``finetune_gain``, ``judge_games``, ``stand_in_arena``, ``answers`` of the checked models and
  ``questions``, by language);
- ``run``: (files, expected, settings) -> rows of ``subject, expected, observed, passed``.

What each check needs from the config (what it lacks, the settings it reads) lives in
``polyrag.config.checks``, so that validating a config imports no check's reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from polyrag.arena.games import position_bias, read_games
from polyrag.arena.leaderboard import LABEL_ANCHORED_COLUMNS
from polyrag.config.checks import turned_on
from polyrag.csv_tables import read_full_table, read_table
from polyrag.data.records import read_questions
from polyrag.systems.passages import relevance

COLUMNS = ["check", "subject", "expected", "observed", "passed"]


@dataclass(frozen=True)
class Check:
    reads: tuple[str, ...]
    run: Callable[[dict, Any, dict], list[dict]]


def row(subject: str, expected: str, observed: str, passed: bool) -> dict:
    return {"subject": subject, "expected": expected, "observed": observed, "passed": bool(passed)}


# --- mock_order: mock systems rank as their error rates say ---------------------------------------


def mock_tau(ranks: pd.Series, rates: dict[str, float]) -> float:
    """Kendall's tau between the systems' true values (``rates``: error rates, lower is better) and
    their ranks (1 best), over the pairs whose true values differ: (concordant - discordant) / those
    pairs. 1.0 only when every such pair is ranked strictly in its true order (a tie in rank counts
    as neither); two systems of equal truth (grounded systems given a relevant passage equally
    often) may be ranked either way."""
    mocks = [model for model in ranks.index if model in rates]
    pairs = [(a, b) for i, a in enumerate(mocks) for b in mocks[i + 1:] if rates[a] != rates[b]]
    if not pairs:
        return float("nan")
    signs = [np.sign(rates[b] - rates[a]) * np.sign(ranks[b] - ranks[a]) for a, b in pairs]
    return float(np.sum(signs) / len(pairs))


def true_order(rates: dict[str, float]) -> str:
    return " < ".join(name for name, rate in sorted(rates.items(), key=lambda item: item[1]))


def order_rows(files: dict, truth: dict[str, float], truth_by_language: Callable[[str], dict[str, float]],
               expected: str) -> list[dict]:
    """The rows of an order check: Kendall tau 1.0 of leaderboard rank against ``truth`` (lower is
    better, as an error rate), and likewise in every language against ``truth_by_language(lang)``."""
    board = read_full_table(files["leaderboard"]).set_index("model")["rank"]
    board = board[board.index.isin(list(truth))].sort_values()
    tau = mock_tau(board, truth)
    in_order = bool(np.isclose(tau, 1.0))
    observed = f"tau {tau:.2f}" + ("" if in_order else f" ({' < '.join(board.index)})")
    rows = [row("leaderboard", expected, observed, in_order)]
    by_language = read_full_table(files["by_language"])
    taus = {lang: mock_tau(table.set_index("model")["rank"], truth_by_language(lang))
            for lang, table in by_language[by_language["model"].isin(list(truth))].groupby("lang", sort=False)}
    off = {lang: tau for lang, tau in taus.items() if not np.isclose(tau, 1.0)}
    observed = f"1.00 in {len(taus) - len(off)} of {len(taus)} languages" + "".join(
        f"; {lang}: {tau:.2f}" for lang, tau in off.items())
    rows.append(row("every language", "Kendall tau 1.00 in every language", observed, taus and not off))
    return rows


def mock_order(files: dict, expected: Any, settings: dict) -> list[dict]:
    rates = settings["error_rates"]
    return order_rows(files, rates, lambda lang: rates,
                      f"Kendall tau 1.00 of rank vs error rate ({true_order(rates)})")


# --- passage_order: grounded mocks rank as the share of questions they were given a relevant passage for


def relevant_given_shares(answers: dict[str, str], questions: dict[str, str]) -> dict[str, float]:
    """Per language, and pooled (``all``), the share of arena questions for which one system's
    answers record a relevant passage among the passages it was given (``answers``, ``questions``:
    paths by language)."""
    found = {}
    for lang, path in answers.items():
        records = {r["query_id"]: r for r in read_questions(questions[lang]) if r["arena"]}
        given = pd.read_parquet(path)
        found[lang] = [any(relevance(records[q], p) for p in passages)
                       for q, passages in zip(given["query_id"], given["passages"]) if q in records]
    shares = {lang: float(np.mean(hits)) for lang, hits in found.items()}
    return {**shares, "all": float(np.mean([hit for hits in found.values() for hit in hits]))}


def passage_order(files: dict, expected: Any, settings: dict) -> list[dict]:
    """The grounded mocks' true quality is the share of questions they were given a relevant passage
    for (their recall), read from their own answers; tau 1.0 of rank against it is expected."""
    shares = {model: relevant_given_shares(files["answers"][model], files["questions"]) for model in settings["grounded"]}
    misses = {model: 1.0 - share["all"] for model, share in shares.items()}  # lower is better, as an error rate
    order = " > ".join(f"{model} ({share['all']:.2f})" for model, share in
                       sorted(shares.items(), key=lambda item: -item[1]["all"]))
    return order_rows(files, misses, lambda lang: {model: 1.0 - shares[model][lang] for model in misses},
                      f"Kendall tau 1.00 of rank vs share given a relevant passage: {order}")


# --- mars_coverage: MARS's intervals cover the mock systems' known accuracies ----------------------


def mars_coverage(files: dict, expected: float, settings: dict) -> list[dict]:
    """The share of (pair, metric, mock system) cells whose 95% interval holds the system's known
    accuracy (``true_score``: exactly round(r n) of its n items are right), over the cells whose
    judge could measure the metric. A cell that is not estimable gets the interval [0, 1], which
    covers anything: counting it (as meta_eval_coverage.csv's ``all`` row does) would let a judge
    that measures nothing pass, so it is left out and counted."""
    cells = read_table(files["mars_systems"])
    estimable = cells[cells["estimable"].astype(bool)]
    covered = (estimable["ci_low"] <= estimable["true_score"]) & (estimable["true_score"] <= estimable["ci_high"])
    share = float(covered.mean()) if len(estimable) else np.nan
    observed = (f"{share:.2f} ({int(covered.sum())} of {len(estimable)} estimable cells; "
                f"{len(cells) - len(estimable)} not estimable left out)" if len(estimable)
                else f"no estimable cell among {len(cells)}")
    return [row("pair x metric x mock", f">= {expected:.2f} of 95% CIs cover the known accuracy", observed,
                len(estimable) > 0 and share >= expected)]


# --- position_bias: a judge known to pick the answer it reads first is caught ----------------------


def pooled_position_bias(games_by_language: dict[str, list[str]]) -> dict:
    """``position_bias`` over all the judge's games: one interval, clustered by question (a
    question of one language is not a question of another), rather than one per language of a
    judge run on a few questions each."""
    frames = []
    for lang, paths in games_by_language.items():
        games = read_games(paths)
        frames.append(games.assign(query_id=lang + ":" + games["query_id"]))
    return position_bias(pd.concat(frames, ignore_index=True))


def position_bias_check(files: dict, expected: list[str], settings: dict) -> list[dict]:
    rows = []
    for judge in expected:
        games = files["judge_games"][judge]
        bias = pooled_position_bias(games)
        low, high = bias["first_position_ci_low"], bias["first_position_ci_high"]
        detected = bias["decisive_games"] > 0 and not low <= 0.5 <= high
        observed = (f"{bias['first_position_win_rate']:.2f} (95% CI {low:.2f}-{high:.2f}; "
                    f"{bias['decisive_games']} decisive games, {len(games)} languages)"
                    if bias["decisive_games"] else "no decisive game")
        rows.append(row(judge, "first-position win rate's 95% CI excludes 0.5",
                        observed, detected))
    return rows


# --- finetune_gain: the fine-tuned student beats its control ---------------------------------------


def finetune_gain(files: dict, expected: Any, settings: dict) -> list[dict]:
    """The student's score against its control over all languages (a win 1, a tie 0.5): its gain
    is score - 0.5, and the student is ahead when the interval of the score lies above 0.5."""
    gain = read_table(files["finetune_gain"]).set_index("lang").loc["all"]
    low, high = gain["score_ci_low"], gain["score_ci_high"]
    observed = (f"{gain['score']:.2f} (95% CI {low:.2f}-{high:.2f}; {int(gain['student_wins'])} wins, "
                f"{int(gain['control_wins'])} losses, {int(gain['ties'])} ties)")
    return [row(f"{settings['student']} vs {settings['control']}",
                "score (win 1, tie 0.5) above 0.5, 95% CI too", observed,
                bool(low > 0.5))]


# --- label_anchored_agreement: human labels from a stand-in judge give back that judge's ranking ---


def stand_in_ranks(arenas: dict[str, str], models: list[str]) -> pd.Series:
    """The stand-in's own ranking of ``models``: its mean Bradley-Terry logit over the labelled
    languages (as the leaderboard ranks), rank 1 the best, ties sharing the better rank."""
    logits = pd.concat([read_table(path).set_index("model")["logit"] for path in arenas.values()], axis=1)
    mean = logits.reindex(models).mean(axis=1)
    return (-mean.round(9)).rank(method="min")


def label_anchored_agreement(files: dict, expected: Any, settings: dict) -> list[dict]:
    """Agreement, defined so that it can fail: every estimable model's label-anchored rank range
    (rank_best..rank_worst, a joint 95% rank set for the labellers' preferences) holds its rank in
    the stand-in labeller's own arena, ranked among the same models. The labels are the stand-in's
    verdicts on a sample of units, so its preferences are the truth those rank sets claim to
    cover; a Kendall tau of 1 would instead fail on any two models the stand-in itself barely
    separates (the tau is shown beside it). At least two estimable models are needed."""
    detailed = read_full_table(files["detailed"]).set_index("model")
    anchored = detailed[list(LABEL_ANCHORED_COLUMNS.values())].set_axis(list(LABEL_ANCHORED_COLUMNS), axis=1)
    anchored = anchored[anchored["rank"].notna()]
    stand_in = settings["stand_in"]
    wanted = f"every rank range holds the model's rank under {stand_in}"
    if len(anchored) < 2:
        return [row(f"label-anchored vs {stand_in}", wanted,
                    f"{len(anchored)} estimable model(s): nothing to compare", False)]
    ranks = stand_in_ranks(files["stand_in_arena"], list(anchored.index))
    outside = [model for model in anchored.index
               if not anchored.loc[model, "rank_best"] <= ranks[model] <= anchored.loc[model, "rank_worst"]]
    tau = float(kendalltau(anchored["rank"].to_numpy(float), ranks[anchored.index].to_numpy(float)).statistic)
    observed = f"{len(anchored) - len(outside)} of {len(anchored)} models (Kendall tau {tau:.2f})" + "".join(
        f"; {model}: range {int(anchored.loc[model, 'rank_best'])}-{int(anchored.loc[model, 'rank_worst'])}, "
        f"{stand_in} rank {int(ranks[model])}" for model in outside)
    return [row(f"label-anchored vs {stand_in}", wanted, observed, not outside)]


CHECKS: dict[str, Check] = {  # the same names, in the same order, as polyrag.config.checks.NEEDS
    "mock_order": Check(reads=("leaderboard", "by_language"), run=mock_order),
    "passage_order": Check(reads=("leaderboard", "by_language", "answers", "questions"), run=passage_order),
    "mars_coverage": Check(reads=("mars_systems",), run=mars_coverage),
    "position_bias": Check(reads=("judge_games",), run=position_bias_check),
    "finetune_gain": Check(reads=("finetune_gain",), run=finetune_gain),
    "label_anchored_agreement": Check(reads=("detailed", "stand_in_arena"), run=label_anchored_agreement),
}


def run_checks(expectations: dict[str, Any], files: dict[str, dict], settings: dict[str, dict]) -> pd.DataFrame:
    """Every enabled check's rows, in the order of ``CHECKS`` (not of the config's keys, which a YAML
    dump sorts): ``check, subject, expected, observed, passed``."""
    on = turned_on(expectations)
    rows = [{"check": name, **result} for name in CHECKS if name in on
            for result in CHECKS[name].run(files[name], on[name], settings.get(name, {}))]
    return pd.DataFrame(rows, columns=COLUMNS)
