"""Coverage of every interval, rank range and significance flag polyrag prints, on simulations
with a known truth, beside the estimator of the method polyrag took it from (the anchor).

Each cell simulates one setting ``--seeds`` times (seeded), runs the function the workflow calls
on it, and records how often the 95% interval holds the truth (``coverage``), its mean width, and
for tests how often they reject under the null (``null_rejection``, family-wise) and under a stated
effect (``power``). Settings stress each estimator's assumptions:

- MARS scores (``scores.model_scores``): a 50/50 gold set while the system is 50-95% good, a
  judge with asymmetric errors (FPR/FNR 0.1/0.3 and 0.3/0.1), 50 or 300 gold items per class,
  the pooled ``all`` row over two language pairs, 40% of questions unanswered, and a small
  language key (10 or 20 answers, pi 0.9 and 0.98). Anchor: PPI on the same gold set (ARES/MARS),
  pulled toward 0.5.
- MEMERAG balanced accuracy (``summary.summarise``): sentences clustered in questions, balanced
  classes, a tiny class (9 negatives among 400 sentences) and one in a few questions (10 in 8).
  Anchor: MEMERAG's per-sentence bootstrap, estimate +- 1.96 SE.
- MEMERAG significance (``summary.significance``): 4 and 6 evaluators of equal skill (null:
  any pair flagged), and one better by 0.08 balanced accuracy (power: its pairs flagged). Anchor:
  each evaluator against the observed best, per-sentence permutations, no correction.
- Bradley-Terry (``bradley_terry.bradley_terry``): 6 models, 12, 30 and 100 questions; each
  model's interval of its centred strength, and the joint rank ranges (every model's true rank
  inside its range at once). Anchor: MIRAGE-BENCH's 200-tournament percentile intervals, ranks
  from overlapping intervals. Also a model that played on only 4 of 12 or 4 of 30 questions
  (its own interval), the leaderboard's mean over 3 languages and the budgeted arena's adaptive
  pair selection (half of the exhaustive design).
- Joint rank ranges (``stats.rank_ranges``, every rank range polyrag prints): the max-|t|
  stepdown beside its single step, today's Bonferroni and percentile overlap, on the same
  bootstrap tournaments: 16 models (the demo's scores), 12 in clusters of near-equal ones, 8 equal
  ones and one far below, 6 spread ones, at 6 / 12 / 30 questions; family-wise coverage (no false
  order claimed) and mean rank-range width; the leaderboard's 4 languages x 6 questions with the
  Welch-Satterthwaite degrees of freedom beside the fewest questions of one language.
- Retrieval metrics (``retrieval.metrics``): a measure's mean over 6, 12 (demo languages), 30 and
  200 questions, for 0/1 values (Recall@5 at 0.5 and 0.9) and skewed ones (nDCG@10 with 30%, 60%
  and 90% zeros); the macro average over 3 languages; the paired difference of two runs (one
  better, near-identical, equal); the leaderboard's rank ranges among 4 equal systems. Anchors:
  the percentile and the t-corrected (the arena's) intervals of the same question bootstrap.
- Component effects (``components.component_effects``): crossed systems' passages and generator
  effects, each factor's spread and the difference of spreads, and the interaction test's
  rejection under additivity and power against one departing cell; 12 and 30 questions, games
  clustered by their answers, a 3 x 2 crossing full and with a cell missing, a factor without
  effect; 6 generators without effect (or one 0.5 above five equal ones) x 2 passage sources at
  30 and 60 questions. Anchors: the
  likelihood ratio with games as independent; percentile intervals of the plug-in spreads; the t
  interval of the bootstrap ranges' difference alone (the difference's interval polyrag widens).
- Judge diagnostics (from ``bench_judge_statistics``): position consistency, first-position win
  rate, Cohen's kappa, self-preference, style-controlled logits and length coefficient.

    .venv/bin/python benchmarks/bench_coverage.py [--quick] [--seeds 1000] [--jobs 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.stats import binomtest, chi2

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from polyrag.arena.bradley_terry import bradley_terry, fit_logits  # noqa: E402
from polyrag.arena.games import question_win_matrices  # noqa: E402
from polyrag.arena.leaderboard import language_table, leaderboard  # noqa: E402
from polyrag.mars.scores import model_scores  # noqa: E402
from polyrag.meta_eval.summary import significance, summarise  # noqa: E402
from polyrag.retrieval import metrics as retrieval_metrics  # noqa: E402
from polyrag.seeds import rng_for  # noqa: E402
from polyrag.stats.bootstrap import critical_value, tournament_counts  # noqa: E402
from tests.helpers.arena import simulate_clustered_games  # noqa: E402
from tests.mars.test_mars import ColumnJudge, balanced_calibration, simulated_answers  # noqa: E402

NOMINAL = 0.95
# The intervals users see come from arena.bootstrap's default number of tournaments.
TOURNAMENTS = yaml.safe_load((REPO / "schemas/config.schema.yaml").read_text())[
    "properties"]["arena"]["properties"]["bootstrap"]["default"]
# Retrieval intervals are measured at the default number of question resamples users get.
RETRIEVAL_BOOTSTRAP = inspect.signature(retrieval_metrics.summarise).parameters["n_bootstrap"].default
COLUMNS = ["estimator", "source", "setting", "nominal", "coverage", "mean_width", "null_rejection", "power", "seeds"]


# --- MARS ------------------------------------------------------------------------------------

def mars_cell(seed: int, estimator: str, strata: list[dict], answers: int = 500) -> dict:
    """``strata``: per language, the system's share of good answers ``pi``, the judge's ``fpr``
    and ``fnr``, gold items ``per_class`` and ``answered`` share. Truth: the answered-weighted
    mean of pi (unanswered questions count 0), pooled over strata when there are several."""
    rng = rng_for(seed, "bench_coverage", "mars")
    reference = pd.concat([balanced_calibration(rng, s["lang"], s["per_class"], s["fpr"], s["fnr"]) for s in strata],
                          ignore_index=True)
    items = {s["lang"]: simulated_answers(rng, answers, s["pi"], s["fpr"], s["fnr"],
                                          np.arange(answers) < round(s.get("answered", 1.0) * answers))
             for s in strata}
    scores = model_scores(items, reference, {"ar": ColumnJudge()}, ["ar"],
                          {"estimator": estimator, "alpha": 0.05, "power_tuning": False})
    row = scores[scores["lang"] == "all"].iloc[0]
    truth = np.mean([s["pi"] * round(s.get("answered", 1.0) * answers) / answers for s in strata])
    return {"covered": row["ci_low"] <= truth <= row["ci_high"], "width": row["ci_high"] - row["ci_low"]}


def mars_cells() -> list[tuple]:
    cells = []
    for fpr, fnr in ((0.1, 0.3), (0.3, 0.1)):
        for per_class in (50, 300):
            for pi in (0.5, 0.7, 0.9, 0.95):
                strata = [{"lang": "en", "pi": pi, "fpr": fpr, "fnr": fnr, "per_class": per_class}]
                cells.append((f"pi {pi}, FPR/FNR {fpr}/{fnr}, gold {per_class}/class, 500 answers", strata))
    pooled = [{"lang": "en", "pi": 0.9, "fpr": 0.1, "fnr": 0.3, "per_class": 100},
              {"lang": "de", "pi": 0.7, "fpr": 0.3, "fnr": 0.1, "per_class": 100}]
    cells.append(("pooled 'all' row: en pi 0.9 (0.1/0.3), de pi 0.7 (0.3/0.1), gold 100/class", pooled))
    missing = [{"lang": "en", "pi": 0.8, "fpr": 0.1, "fnr": 0.3, "per_class": 100, "answered": 0.6}]
    cells.append(("40% unanswered, pi 0.8 of the answered, FPR/FNR 0.1/0.3, gold 100/class", missing))
    cells = [(setting, strata, 500) for setting, strata in cells]
    # A small language key: the judge's positive rate q on 10 or 20 answers (its plain variance
    # q(1-q)/N covered 0.68-0.93 here; ten yeses of ten have none).
    for fpr, fnr in ((0.1, 0.3), (0.3, 0.1)):
        for answers in (10, 20):
            for pi in (0.9, 0.98):
                strata = [{"lang": "en", "pi": pi, "fpr": fpr, "fnr": fnr, "per_class": 100}]
                cells.append((f"small key: {answers} answers, pi {pi}, FPR/FNR {fpr}/{fnr}, gold 100/class", strata,
                              answers))
    return [("mars_score", source, setting, mars_cell, {"estimator": estimator, "strata": strata, "answers": answers})
            for setting, strata, answers in cells
            for source, estimator in (("polyrag", "rogan_gladen"), ("ARES-style PPI", "ppi"))]


# --- MEMERAG ---------------------------------------------------------------------------------

def memerag_predictions(rng, evaluators: dict[str, tuple[float, float]], questions: int, negatives: int | None,
                        negative_share: float, icc: float | tuple[float, float],
                        negative_questions: int | None = None) -> pd.DataFrame:
    """Sentences in ``questions`` questions (1-7 each, one language), each positive or negative;
    ``negatives`` fixes their count (else each is negative with ``negative_share``), placed in
    ``negative_questions`` questions when given (at least one in each). Evaluator e is right on a
    sentence of class c with a probability drawn per question from a Beta of mean
    ``evaluators[e][c]`` and intra-question correlation ``icc`` (or (positives', negatives')): its
    population recall is that mean."""
    sizes = rng.integers(1, 8, questions)
    query = np.repeat(np.arange(questions), sizes)
    n = len(query)
    if negatives is None:
        label = (rng.random(n) >= negative_share).astype(int)
    elif negative_questions is None:
        label = np.ones(n, dtype=int)
        label[rng.choice(n, negatives, replace=False)] = 0
    else:
        hosts = rng.choice(np.flatnonzero(sizes >= 4), negative_questions, replace=False)
        spread = rng.multinomial(negatives - negative_questions, np.ones(negative_questions) / negative_questions)
        counts = 1 + spread
        label = np.ones(n, dtype=int)
        for host, count in zip(hosts, np.minimum(counts, sizes[hosts] - 1)):  # a positive stays in each
            label[np.flatnonzero(query == host)[:count]] = 0
    iccs = (icc, icc) if np.isscalar(icc) else icc
    rows = []
    for name, recalls in evaluators.items():
        correct = np.zeros(n, dtype=bool)
        for c, recall, icc_c in ((1, recalls[0], iccs[0]), (0, recalls[1], iccs[1])):
            a, b = recall * (1 - icc_c) / icc_c, (1 - recall) * (1 - icc_c) / icc_c
            p = rng.beta(a, b, questions)[query]
            members = label == c
            correct[members] = rng.random(members.sum()) < p[members]
        rows.append(pd.DataFrame({"lang": "en", "query_id": query.astype(str), "sentence_id": np.arange(n),
                                  "task": "faithfulness", "prompt": "-", "label": label,
                                  "prediction": np.where(correct, label, 1 - label).astype(float),
                                  "evaluator": name}))
    return pd.concat(rows, ignore_index=True)


def per_sentence_bootstrap_se(correct: np.ndarray, labels: np.ndarray, rng, n: int = 1000) -> float:
    """MEMERAG's standard error: sentences resampled one by one within each class."""
    sizes = np.array([(labels == c).sum() for c in (0, 1)])
    recalls = np.array([correct[labels == c].mean() for c in (0, 1)])
    return float(np.std((rng.binomial(sizes, recalls, size=(n, 2)) / sizes).mean(axis=1), ddof=1))


def balanced_accuracy_cell(seed: int, source: str, questions: int, negatives: int | None, negative_share: float,
                           recalls: tuple[float, float], icc: float | tuple[float, float],
                           negative_questions: int | None = None) -> dict:
    rng = rng_for(seed, "bench_coverage", "memerag")
    predictions = memerag_predictions(rng, {"e": recalls}, questions, negatives, negative_share, icc,
                                      negative_questions)
    truth = float(np.mean(recalls))
    if source == "polyrag":
        row = summarise(predictions).iloc[0]
        low, high = row["ci_low"], row["ci_high"]
    else:
        labels = predictions["label"].to_numpy()
        correct = predictions["prediction"].to_numpy() == labels
        score = np.mean([correct[labels == c].mean() for c in (0, 1)])
        se = per_sentence_bootstrap_se(correct, labels, rng)
        low, high = score - 1.96 * se, score + 1.96 * se
    return {"covered": low <= truth <= high, "width": high - low}


def against_observed_best(predictions: pd.DataFrame, rng, n: int = 1000) -> list[bool]:
    """MEMERAG's test: each evaluator against the observed best, sentences swapped one by one,
    p < 0.05 without correction. One flag per non-best evaluator."""
    wide = predictions.assign(correct=predictions["prediction"] == predictions["label"]).pivot(
        index="sentence_id", columns="evaluator", values="correct")
    labels = predictions.drop_duplicates("sentence_id").set_index("sentence_id")["label"].reindex(wide.index).to_numpy()
    weights = np.where(labels == 1, 1 / (labels == 1).sum(), 1 / (labels == 0).sum()) / 2
    scores = (wide.to_numpy(float) * weights[:, None]).sum(axis=0)
    best = wide.columns[np.argmax(scores)]
    flags = []
    for other in wide.columns.drop(best):
        d = weights * (wide[best].to_numpy(float) - wide[other].to_numpy(float))
        permuted = np.where(rng.random((n, len(d))) < 0.5, -1.0, 1.0) @ d
        flags.append((np.sum(np.abs(permuted) >= abs(d.sum()) - 1e-12) + 1) / (n + 1) < 0.05)
    return flags


def significance_cell(seed: int, source: str, evaluators: int, better_by: float, questions: int, icc: float) -> dict:
    """Evaluators with recalls (0.8, 0.7); the first one ``better_by`` higher in both classes.
    Null (better_by 0): whether any pair is flagged. Effect: the share of the better one's pairs
    flagged."""
    rng = rng_for(seed, "bench_coverage", "significance")
    skill = {f"e{k}": (0.8 + (better_by if k == 0 else 0), 0.7 + (better_by if k == 0 else 0))
             for k in range(evaluators)}
    predictions = memerag_predictions(rng, skill, questions, None, 0.3, icc)
    if source == "polyrag":
        tests = significance(predictions, summarise(predictions), 2000, rng)
        if better_by == 0:
            return {"rejected": bool(tests["significant"].any())}
        mine = tests[(tests["evaluator"] == "e0") | (tests["vs_evaluator"] == "e0")]
        return {"rejected": float((mine["significant"] & (mine["evaluator"] == "e0")).mean())}
    flags = against_observed_best(predictions, rng)
    return {"rejected": bool(any(flags)) if better_by == 0 else float(np.mean(flags))}


def memerag_cells() -> list[tuple]:
    cells = []
    intervals = [("balanced classes (30% negative), 100 questions, ICC 0.3", dict(
                     questions=100, negatives=None, negative_share=0.3, recalls=(0.85, 0.7), icc=0.3)),
                 ("tiny class: 9 negatives of ~400 sentences, recall 0.8/0.9, ICC 0.3", dict(
                     questions=100, negatives=9, negative_share=0.0, recalls=(0.9, 0.8), icc=0.3)),
                 ("tiny class: 9 negatives, negatives' recall 0.97, ICC 0.1", dict(
                     questions=100, negatives=9, negative_share=0.0, recalls=(0.9, 0.97), icc=0.1)),
                 ("few questions: 25 questions, ICC 0.5", dict(
                     questions=25, negatives=None, negative_share=0.3, recalls=(0.85, 0.7), icc=0.5)),
                 # issue 36's French relevance: the whole's design effect (from clustered positives)
                 # took 10 negatives in 8 questions to 3.3 effective sentences
                 ("tiny class in few questions: 10 negatives in 8 of 100 questions, recall 0.65/0.97, ICC 0.7/0.1",
                  dict(questions=100, negatives=10, negative_share=0.0, recalls=(0.65, 0.97), icc=(0.7, 0.1),
                       negative_questions=8))]
    for setting, params in intervals:
        for source in ("polyrag", "MEMERAG per-sentence bootstrap"):
            cells.append(("memerag_balanced_accuracy", source, setting, balanced_accuracy_cell,
                          {"source": source, **params}))
    for k in (4, 6):
        for source in ("polyrag", "MEMERAG vs observed best"):
            cells.append(("memerag_significance", source,
                          f"{k} evaluators equal (null); one +0.08 (power); 100 questions, ICC 0.3",
                          significance_pair_cell, {"source": source, "evaluators": k, "questions": 100, "icc": 0.3}))
    return cells


def significance_pair_cell(seed: int, **params) -> dict:
    """The null and the effect of one setting from the same seed."""
    return {"null": significance_cell(seed, better_by=0.0, **params)["rejected"],
            "effect": significance_cell(seed, better_by=0.08, **params)["rejected"]}


# --- Bradley-Terry ---------------------------------------------------------------------------

STRENGTHS = np.array([1.2, 0.7, 0.3, 0.0, -0.6, -1.6])  # six models, every gap clear but not huge
MODELS = [f"m{k}" for k in range(len(STRENGTHS))]


def arena_games(rng, questions: int, strengths: np.ndarray = STRENGTHS, question_sd: float = 0.3) -> pd.DataFrame:
    """Every pair on every question in both orders; each question shifts each model's strength by
    a N(0, question_sd) draw, so games of one question are correlated (clustered)."""
    rows = []
    for q in range(questions):
        shifted = strengths + rng.normal(0, question_sd, len(strengths))
        for i in range(len(MODELS)):
            for j in range(i + 1, len(MODELS)):
                p = 1 / (1 + np.exp(shifted[j] - shifted[i]))
                for shown_first in (MODELS[i], MODELS[j]):
                    rows.append((f"q{q}", MODELS[i], MODELS[j], shown_first,
                                 "model_a" if rng.random() < p else "model_b"))
    return pd.DataFrame(rows, columns=["query_id", "model_a", "model_b", "shown_first", "verdict"])


def true_logits(question_sd: float = 0.3, draws: int = 200_000) -> np.ndarray:
    """The BT logits of the population of questions: the fit to the expected win matrix over the
    question effects (Monte Carlo, fixed seed), centred. Question effects shrink the strengths
    slightly; comparing with the raw strengths would blame the interval for that."""
    rng = np.random.default_rng(0)
    shifted = STRENGTHS + rng.normal(0, question_sd, (draws, len(STRENGTHS)))
    p = (1 / (1 + np.exp(shifted[:, None, :] - shifted[:, :, None]))).mean(axis=0)
    np.fill_diagonal(p, 0)
    return fit_logits(p * 1e6, 1e-9)


def true_ranks() -> np.ndarray:
    return pd.Series(-TRUE_LOGITS).rank(method="min").to_numpy()


def mirage_bench_intervals(games: pd.DataFrame, rng) -> tuple[np.ndarray, ...]:
    """The anchor: 200 bootstrap tournaments, 2.5/97.5 percentiles, a model surely ahead of
    another when their intervals do not overlap."""
    questions, wins = question_win_matrices(games, MODELS)
    logit = fit_logits(wins.sum(axis=0), 0.01)
    samples = np.array([fit_logits(np.tensordot(drawn, wins, axes=1), 0.01)
                        for drawn in tournament_counts(len(questions), 200, rng)])
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    surely_ahead = low[:, None] > high[None, :]
    return logit, low, high, 1 + surely_ahead.sum(axis=0), len(logit) - surely_ahead.sum(axis=1)


def bt_cell(seed: int, source: str, questions: int, tied: bool = False) -> dict:
    """``tied``: every model equally strong, so any ordering the rank ranges claim is false (the
    ranges must then span every rank: best 1, worst 6)."""
    rng = rng_for(seed, "bench_coverage", "bt")
    games = arena_games(rng, questions, np.zeros(len(MODELS)) if tied else STRENGTHS)
    truth, ranks = (np.zeros(len(MODELS)), None) if tied else (TRUE_LOGITS, true_ranks())
    if source == "polyrag":
        table = bradley_terry(games, MODELS, 0.01, TOURNAMENTS, rng)[0].set_index("model").loc[MODELS]
        low, high = table["ci_low"].to_numpy(), table["ci_high"].to_numpy()
        best, worst = table["rank_best"].to_numpy(), table["rank_worst"].to_numpy()
    else:
        _, low, high, best, worst = mirage_bench_intervals(games, rng)
    ranks_covered = np.all((best == 1) & (worst == len(MODELS))) if tied else np.all((best <= ranks) & (ranks <= worst))
    return {"covered": float(np.mean((low <= truth) & (truth <= high))), "width": float(np.mean(high - low)),
            "ranks_covered": bool(ranks_covered)}


def few_questions_cell(seed: int, questions: int, played: int, model: int = 2) -> dict:
    """One model plays on only ``played`` of the arena's ``questions`` questions (it joined a
    budgeted arena late, a judge has ``max_questions``, or most of its verdicts are invalid); the
    others play on all. ``covered``: that model's interval holds its true logit; the rank ranges
    are checked for every model at once."""
    rng = rng_for(seed, "bench_coverage", "few_questions")
    games = arena_games(rng, questions)
    mine = (games["model_a"] == MODELS[model]) | (games["model_b"] == MODELS[model])
    kept = [f"q{q}" for q in rng.choice(questions, played, replace=False)]
    games = games[~mine | games["query_id"].isin(kept)]
    table = bradley_terry(games, MODELS, 0.01, TOURNAMENTS, rng)[0].set_index("model").loc[MODELS]
    low, high = table["ci_low"].to_numpy()[model], table["ci_high"].to_numpy()[model]
    ranks = true_ranks()
    return {"covered": bool(low <= TRUE_LOGITS[model] <= high), "width": float(high - low),
            "ranks_covered": bool(np.all((table["rank_best"] <= ranks) & (ranks <= table["rank_worst"])))}


def leaderboard_cell(seed: int, languages: int, questions: int) -> dict:
    """The leaderboard's score (mean logit over languages) of judged models, languages drawn
    independently with the same strengths."""
    rng = rng_for(seed, "bench_coverage", "leaderboard")
    per_language = {}
    for k in range(languages):
        table, bootstrap, _ = bradley_terry(arena_games(rng, questions), MODELS, 0.01, TOURNAMENTS, rng)
        surrogate = table[["model", "logit"]].rename(columns={"logit": "predicted_logit"})
        surrogate_samples = bootstrap.rename(columns={"logit": "predicted_logit"})
        per_language[f"l{k}"] = language_table(f"l{k}", table, bootstrap, surrogate, surrogate_samples)
    table = leaderboard(per_language)[0].set_index("model").loc[MODELS]
    truth, ranks = TRUE_LOGITS, true_ranks()
    return {"covered": float(np.mean((table["ci_low"] <= truth) & (truth <= table["ci_high"]))),
            "width": float(np.mean(table["ci_high"] - table["ci_low"])),
            "ranks_covered": bool(np.all((table["rank_best"] <= ranks) & (ranks <= table["rank_worst"])))}


def adaptive_cell(seed: int, design: str, share: float, questions: int) -> dict:
    """The budgeted arena: a design chooses (question, pair) units from earlier verdicts up to
    ``share`` of the exhaustive design (``bench_adaptive.design_games``); the leaderboard's
    intervals are then fitted on what was judged."""
    from bench_adaptive import DESIGNS, design_games

    rng = rng_for(seed, "bench_coverage", "adaptive")
    exhaustive = arena_games(rng, questions)
    chosen = design_games(exhaustive, MODELS, sorted(exhaustive["query_id"].unique()), (share,), DESIGNS[design],
                          seed, "bench")[share]
    table = bradley_terry(chosen, MODELS, 0.01, TOURNAMENTS, rng)[0].set_index("model").loc[MODELS]
    truth, ranks = TRUE_LOGITS, true_ranks()
    return {"covered": float(np.mean((table["ci_low"] <= truth) & (truth <= table["ci_high"]))),
            "width": float(np.mean(table["ci_high"] - table["ci_low"])),
            "ranks_covered": bool(np.all((table["rank_best"] <= ranks) & (ranks <= table["rank_worst"])))}


def bt_cells() -> list[tuple]:
    cells = []
    for questions in (6, 12, 30, 100):  # 6: a demo language's arena (config.yaml's data.max_questions)
        for source in ("polyrag", "MIRAGE-BENCH percentile, 200 tournaments"):
            cells.append(("bradley_terry", source, f"6 models, {questions} questions, question effect sd 0.3", bt_cell,
                          {"source": source, "questions": questions}))
    for source in ("polyrag", "MIRAGE-BENCH percentile, 200 tournaments"):
        cells.append(("bradley_terry", source, "6 models of equal strength (no true order), 12 questions", bt_cell,
                      {"source": source, "questions": 12, "tied": True}))
    for questions in (12, 30):
        cells.append(("bradley_terry", "polyrag", f"a model on 4 of {questions} questions (the others on all): "
                      "its interval", few_questions_cell, {"questions": questions, "played": 4}))
    cells.append(("leaderboard", "polyrag", "mean over 3 languages, 12 questions each", leaderboard_cell,
                  {"languages": 3, "questions": 12}))
    for design in ("ranking", "random"):
        cells.append(("bradley_terry (budgeted arena)", "polyrag", f"{design} selection, 50% of 30 questions",
                      adaptive_cell, {"design": design, "share": 0.5, "questions": 30}))
    return cells


TRUE_LOGITS = true_logits()


# --- joint rank ranges: max-|t| stepdown beside Bonferroni and percentile overlap ---------------

#: strengths of the rank-range settings: the demo's 16 systems (its leaderboard's scores: three
#: identical leaders, near-equal pairs, one far below), 12 models in three clusters of four
#: near-equal ones, 8 equal models and one 4 logits below them
RANK_SETTINGS = {
    "16 models (the demo's scores: 3 equal leaders, one 3.6 below the rest)": (
        2.2, 2.2, 2.2, 2.05, 1.74, 1.57, 1.03, 0.74, 0.04, -0.36, -0.61, -1.12, -1.76, -1.89, -2.19, -5.83),
    "12 models in 3 clusters of 4 near-equal ones (0.05 apart; clusters 1 apart)": tuple(
        cluster - 0.05 * k for cluster in (1.0, 0.0, -1.0) for k in range(4)),
    "8 equal models and one 4 below the rest": (0.0,) * 8 + (-4.0,),
    "6 models, gaps 0.3-1.0 (the arena cells' strengths)": tuple(STRENGTHS),
}
RANK_METHODS = ("max-t stepdown", "max-t", "bonferroni")


@lru_cache(maxsize=None)
def population_logits(strengths: tuple, question_sd: float = 0.3) -> np.ndarray:
    """:func:`true_logits` for any strengths."""
    rng = np.random.default_rng(0)
    shifted = np.array(strengths) + rng.normal(0, question_sd, (100_000, len(strengths)))
    p = (1 / (1 + np.exp(shifted[:, None, :] - shifted[:, :, None]))).mean(axis=0)
    np.fill_diagonal(p, 0)
    return fit_logits(p * 1e6, 1e-9)


def ranges_cover(best: np.ndarray, worst: np.ndarray, truth: np.ndarray) -> bool:
    """No false order claimed: each range holds every rank the model can take among ties (equal
    population logits, to 1e-6, may be ordered either way)."""
    better = (truth[None, :] > truth[:, None] + 1e-6).sum(axis=1)
    worse = (truth[None, :] < truth[:, None] - 1e-6).sum(axis=1)
    return bool(np.all((best <= 1 + better) & (worst >= len(truth) - worse)))


def percentile_ranges(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The naive anchor: 2.5/97.5 percentiles of each model's bootstrap logits, a model surely
    ahead of another when their intervals do not overlap (MIRAGE-BENCH)."""
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    ahead = low[:, None] > high[None, :]
    return 1 + ahead.sum(axis=0), len(low) - ahead.sum(axis=1)


def rank_range_cell(seed: int, setting: str, questions: int, languages: int = 1) -> dict:
    """One arena per language (every pair on every question, question effect sd 0.3) with the
    setting's strengths; the rank ranges of each method from the same bootstrap tournaments
    (``bradley_terry``; over languages, the leaderboard's mean logit). ``covered: METHOD``: no
    false order among all models at once; ``width: METHOD``: mean rank-range length, worst - best.
    Over languages, ``fewest questions`` is the previous leaderboard's degrees of freedom (one
    language's Q - 1) for intervals and ranges, beside the Welch-Satterthwaite ones."""
    from polyrag.arena.bradley_terry import bradley_terry as fit
    from polyrag.stats.rank_ranges import Clusters, rank_ranges
    from tests.helpers.arena import simulate_clustered_games

    strengths = RANK_SETTINGS[setting]
    models = [f"m{k:02d}" for k in range(len(strengths))]
    rng = rng_for(seed, "bench_coverage", "rank_ranges", setting)
    points, samples, played = [], [], []
    for _ in range(languages):
        games = simulate_clustered_games(dict(zip(models, strengths)), questions, rng, answer_sd=0.3)
        table, bootstrap, _ = fit(games, models, 0.01, TOURNAMENTS, rng)
        points.append(table.set_index("model").loc[models, "logit"].to_numpy())
        samples.append(bootstrap.pivot(index="tournament", columns="model", values="logit")[models].to_numpy())
        played.append(table.set_index("model").loc[models, "model_questions"].to_numpy())
    point, draws = np.mean(points, axis=0), np.mean(samples, axis=0)
    truth = population_logits(strengths)
    if languages == 1:
        clusters = {"": Clusters.of_counts(played[0], len(models))}
    else:
        clusters = {"": Clusters.pooled(np.array([s.var(axis=0, ddof=1) for s in samples]), np.array(played)),
                    " (fewest questions)": Clusters.of_counts(np.min(played, axis=0), len(models))}
    result = {"covered": np.nan, "width": np.nan}
    for label, cluster in clusters.items():
        for method in RANK_METHODS:
            best, worst = rank_ranges(point, draws, cluster, 0.95, method)
            result[f"covered: {method}{label}"] = ranges_cover(best, worst, truth)
            result[f"width: {method}{label}"] = float(np.mean(worst - best))
        if languages > 1:  # the score's interval at these degrees of freedom
            half = cluster.critical(0.05) * draws.std(axis=0, ddof=1)
            result[f"covered: score interval{label}"] = float(np.mean(np.abs(point - truth) <= half))
            result[f"width: score interval{label}"] = float(np.mean(2 * half))
    best, worst = percentile_ranges(draws)
    result["covered: percentile overlap"] = ranges_cover(best, worst, truth)
    result["width: percentile overlap"] = float(np.mean(worst - best))
    return result


DAVIDSON_NU = 0.8  # about a quarter of the games between equal models are ties


@lru_cache(maxsize=None)
def davidson_population(ties: str, question_sd: float = 0.3) -> tuple[np.ndarray, float]:
    """The estimand of each tie model on Davidson games: its fit to the expected outcome counts
    over the question effects (Monte Carlo, fixed seed): Davidson's logits and nu, or the
    Bradley-Terry logits with ties as half a win (a different, shrunk scale; nu nan)."""
    from polyrag.arena.bradley_terry import fit_davidson_batch

    rng = np.random.default_rng(0)
    shifted = STRENGTHS + rng.normal(0, question_sd, (100_000, len(STRENGTHS)))
    half = (shifted[:, :, None] - shifted[:, None, :]) / 2
    denominator = np.exp(half) + np.exp(-half) + DAVIDSON_NU
    wins, tied = (np.exp(half) / denominator).mean(axis=0), (DAVIDSON_NU / denominator).mean(axis=0)
    np.fill_diagonal(wins, 0)
    np.fill_diagonal(tied, 0)
    if ties == "half":
        return fit_logits((wins + tied / 2) * 1e6, 1e-9), np.nan
    (logit,), (log_nu,) = fit_davidson_batch(wins[None] * 1e6, tied[None] * 1e6, 1e-9)
    return logit, float(np.exp(log_nu))


def davidson_cell(seed: int, ties: str, questions: int) -> dict:
    """Games from Davidson's tie model (nu 0.8, the arena cells' six strengths, question effect sd
    0.3), fitted with ``arena.ties``: each logit's interval against its tie model's estimand, the
    joint rank ranges against the true order, and (davidson) the tie parameter's interval."""
    from tests.helpers.arena import simulate_davidson_games

    rng = rng_for(seed, "bench_coverage", "davidson")
    games = simulate_davidson_games(dict(zip(MODELS, STRENGTHS)), DAVIDSON_NU, questions, rng, answer_sd=0.3)
    table = bradley_terry(games, MODELS, 0.01, TOURNAMENTS, rng, ties=ties)[0].set_index("model").loc[MODELS]
    truth, nu = davidson_population(ties)
    low, high = table["ci_low"].to_numpy(), table["ci_high"].to_numpy()
    result = {"covered": float(np.mean((low <= truth) & (truth <= high))), "width": float(np.mean(high - low)),
              "ranks_covered": ranges_cover(table["rank_best"].to_numpy(), table["rank_worst"].to_numpy(),
                                            population_logits(tuple(STRENGTHS)))}
    if ties == "davidson":
        result["covered: tie parameter"] = bool(table["tie_parameter_ci_low"].iloc[0] <= nu
                                                <= table["tie_parameter_ci_high"].iloc[0])
        result["width: tie parameter"] = float(table["tie_parameter_ci_high"].iloc[0] - table["tie_parameter_ci_low"].iloc[0])
    return result


def rank_range_cells() -> list[tuple]:
    cells = []
    for setting in RANK_SETTINGS:
        for questions in (6, 12, 30):
            cells.append(("rank range (joint)", "polyrag", f"{setting}, {questions} questions", rank_range_cell,
                          {"setting": setting, "questions": questions}))
    setting = list(RANK_SETTINGS)[0]
    cells.append(("rank range (joint), leaderboard", "polyrag", f"{setting}, 4 languages x 6 questions",
                  rank_range_cell, {"setting": setting, "questions": 6, "languages": 4}))
    for ties in ("davidson", "half"):
        for questions in (12, 30):
            cells.append((f"bradley_terry, arena.ties: {ties}", "polyrag",
                          f"Davidson games (nu {DAVIDSON_NU}), 6 models, {questions} questions, question effect sd 0.3",
                          davidson_cell, {"ties": ties, "questions": questions}))
    return cells


def label_anchored_cell(seed: int, scenario: str, judge: str, budget: int, method: str) -> dict:
    """One arena of benchmarks/bench_label_anchored.py (8 models, 200 questions) and one method."""
    import bench_label_anchored  # beside this file; its simulation and truth

    rows = bench_label_anchored.one_seed((scenario, judge, seed, (budget,) if budget else (), (method,)))
    row = next(r for r in rows if r["method"] == method)
    # an unbounded interval (the labels separate a model) covers; its width is left out of the mean
    width = row["width"] if np.isfinite(row["width"]) else np.nan
    return {"covered": row["covered"], "width": width, "ranks_covered": row["ranks_covered"]}


def label_anchored_table_cell(seed: int, scenario: str, judge: str, questions: int, budget: int) -> dict:
    """What label_anchored.csv reports for a small arena (``bench_label_anchored.table_seed``): the
    estimable models' intervals of their logits centred over themselves; a table where no model is
    estimable counts in neither the coverage nor the width."""
    import bench_label_anchored

    row = bench_label_anchored.table_seed((scenario, judge, seed, questions, budget))
    return {"covered": row["covered"], "width": row.get("width", np.nan)}


def label_anchored_cells() -> list[tuple]:
    """The label-anchored arena's intervals and rank-sets of the labellers' logits: few labels, a
    biased judge, close models, a useless judge, labels chosen by the judge's uncertainty; and the
    judge alone, which these intervals replace. Also what label_anchored.csv reports at 30 labels
    of 12 questions (a demo language), where some models are not estimable."""
    settings = [("spread", "biased", 100, "PPI++"), ("spread", "biased", 50, "PPI++"), ("close", "biased", 100, "PPI++"),
                ("spread", "useless", 100, "PPI++"), ("spread", "biased", 100, "active PPI++"),
                ("spread", "biased", 100, "labels-only BT"), ("spread", "biased", 0, "judge-only BT")]
    return [(f"label_anchored ({method})", "polyrag",
             f"8 models {scenario}, 200 questions, {judge} judge, {budget} human labels" + (
                 " (flagged: under 100 labels)" if 0 < budget < 100 else ""),
             label_anchored_cell, {"scenario": scenario, "judge": judge, "budget": budget, "method": method})
            for scenario, judge, budget, method in settings] + [
        ("label_anchored (PPI++, label_anchored.csv)", "polyrag",
         f"8 models {scenario}, 12 questions, {judge} judge, 30 human labels: estimable models (flagged: under 100 labels)",
         label_anchored_table_cell, {"scenario": scenario, "judge": judge, "questions": 12, "budget": 30})
        for scenario, judge in (("spread", "biased"), ("spread", "useless"))]


def label_anchored_one_bad_cell(seed: int, method: str, questions: int, budget: int) -> dict:
    """An arena whose judge is right on every model but one (``bench_label_anchored``'s "one-bad"
    judge: it contradicts people on m3), ``budget`` uniform labels; the models the labels can
    anchor, centred over themselves, with one lambda for all (the total variance's) and each model
    falling back to labels alone where that is more precise (polyrag), or one lambda for all
    without the fallback (the anchor). Also m3's own interval. A fit with no finite maximum
    counts in neither coverage nor width."""
    import bench_label_anchored as simulation
    from polyrag.arena.label_anchored import (centred_over, label_anchored_fits, label_reasons, labels_per_model,
                                              normal_interval, subset)
    from polyrag.arena.ppi_fit import Fit, anchored_fit, centring, design

    models = simulation.MODELS
    saved, simulation.QUESTIONS = simulation.QUESTIONS, questions
    try:
        truth = simulation.true_logits(simulation.SCENARIOS["spread"])
        rng = np.random.default_rng([seed, questions, budget])
        pairs, question, label, value = simulation.arena(simulation.SCENARIOS["spread"], "one-bad", rng)
    finally:
        simulation.QUESTIONS = saved
    labelled = np.zeros(len(pairs), bool)
    labelled[rng.choice(len(pairs), budget, replace=False)] = True
    count, won = labels_per_model(pairs, labelled, label[labelled], models)
    reasons = label_reasons(count, won)
    keep = centred_over(reasons)
    empty = {"covered": np.nan, "width": np.nan, "covered: m3": np.nan, "width: m3": np.nan}
    if not all(reason == "" for reason, kept in zip(reasons, keep) if kept):
        return empty  # fewer than two estimable models: the table reports none
    if method == "fallback":
        fit = label_anchored_fits(pairs, value, labelled, label[labelled], models, clusters=question,
                                  over=keep)["label_anchored"]
    else:
        x, reported = design(pairs, models), centring(models, 0, keep)
        theta, cov, lam, ok = anchored_fit(x[labelled], label[labelled], value[labelled], x[~labelled],
                                           value[~labelled], None, question[labelled], question[~labelled],
                                           reported=reported[keep])
        fit = Fit(reported @ theta, reported @ cov @ reported.T, lam, ok)
    if not fit.converged:
        return empty
    fit = subset(fit, keep)
    low, high = normal_interval(fit)
    target = truth[keep] - truth[keep].mean()
    covered = (low <= target) & (target <= high)
    row = {"covered": float(covered.mean()), "width": float(np.mean(high - low))}
    if keep[simulation.BAD_MODEL]:
        bad = int(keep[:simulation.BAD_MODEL].sum())
        row |= {"covered: m3": float(covered[bad]), "width: m3": float(high[bad] - low[bad])}
    return empty | row


def label_anchored_one_bad_cells() -> list[tuple]:
    """One lambda for all with a per-model fallback to labels alone, against one lambda for all
    without it, where the judge is bad on one model: at the demo's pooled size (30 questions, 120
    labels) and the bench's (200 questions, 100 labels)."""
    return [(f"label_anchored ({name})", source,
             f"8 models spread, {questions} questions, judge right on 7 models and contradicting people on m3, "
             f"{budget} human labels: estimable models",
             label_anchored_one_bad_cell, {"method": method, "questions": questions, "budget": budget})
            for questions, budget in ((30, 120), (200, 100))
            for method, name, source in (("fallback", "PPI++, one lambda, labels alone where more precise", "polyrag"),
                                         ("one", "PPI++, one lambda for all models", "anchor"))]


# --- retrieval metrics -----------------------------------------------------------------------

# Populations of one retrieval measure's per-question values, each with its known mean: Recall@5
# of questions with one relevant passage is 0/1; nDCG@10 is 0 wherever nothing relevant is in the
# top 10 (many questions), else spread over (0, 1].
RETRIEVAL_POPULATIONS = {
    "Recall@5 ~ Bernoulli(0.5)": (lambda rng, n: (rng.random(n) < 0.5).astype(float), 0.5),
    "Recall@5 ~ Bernoulli(0.9)": (lambda rng, n: (rng.random(n) < 0.9).astype(float), 0.9),
    "nDCG@10: 60% zeros, else Beta(2, 1.2)": (
        lambda rng, n: np.where(rng.random(n) < 0.6, 0.0, rng.beta(2, 1.2, n)), 0.4 * 2 / 3.2),
    "nDCG@10 heavily skewed: 90% zeros, else Beta(5, 1)": (
        lambda rng, n: np.where(rng.random(n) < 0.9, 0.0, rng.beta(5, 1, n)), 0.1 * 5 / 6),
    "nDCG@10: 30% zeros, else Beta(3, 2)": (
        lambda rng, n: np.where(rng.random(n) < 0.3, 0.0, rng.beta(3, 2, n)), 0.7 * 3 / 5),
}


def paired_recall(p: tuple[float, float, float, float]):
    """Recall@5 of two runs on the same questions: (both, a only, b only, neither) found it."""
    def draw(rng, n):
        outcome = rng.choice(4, n, p=p)
        return np.isin(outcome, (0, 1)).astype(float), np.isin(outcome, (0, 2)).astype(float)
    return draw, p[1] - p[2]


def paired_ndcg(rng, n):
    """nDCG@10 of run a (70% zeros, else Beta(2, 1.2)); run b re-ranks 30% of the questions,
    where its value is drawn anew (60% zeros)."""
    a = np.where(rng.random(n) < 0.7, 0.0, rng.beta(2, 1.2, n))
    redrawn = np.where(rng.random(n) < 0.6, 0.0, rng.beta(2, 1.2, n))
    return a, np.where(rng.random(n) < 0.3, redrawn, a)


RETRIEVAL_PAIRS = {
    "Recall@5, a 0.75 / b 0.65, runs differ on 20% of questions": paired_recall((0.6, 0.15, 0.05, 0.2)),
    "Recall@5, near-identical runs: differ on 5% of questions, difference 0.03": paired_recall((0.75, 0.04, 0.01, 0.2)),
    "Recall@5, equal runs (0.75) differing on 10% of questions": paired_recall((0.7, 0.05, 0.05, 0.2)),
    "nDCG@10 skewed, run b re-ranks 30% of questions": (paired_ndcg, 0.3 * 2 / 3.2 - (0.7 * 0.3 + 0.3 * 0.4) * 2 / 3.2),
}


def per_query_frame(values: dict[str, np.ndarray], measure: str = "nDCG@10") -> pd.DataFrame:
    """A ``per_query_metrics`` table from each language's per-question values."""
    return pd.concat([pd.DataFrame({"lang": lang, "query_id": [f"q{k:03d}" for k in range(len(v))], "measure": measure,
                                    "value": v, "has_relevant": True, "in_run": True})
                      for lang, v in values.items()], ignore_index=True)


def bootstrap_anchor(draws: np.ndarray, point: float, questions: int, source: str) -> tuple[float, float]:
    """The anchors, from the same question bootstrap: its 2.5/97.5 percentiles, or the arena's
    t-corrected interval, point +- t(n-1) sqrt(n/(n-1)) sd."""
    if source.startswith("percentile"):
        low, high = np.percentile(draws, [2.5, 97.5])
        return float(low), float(high)
    half = critical_value(questions, 0.025) * draws.std(ddof=1)
    return point - half, point + half


def retrieval_mean_cell(seed: int, source: str, populations: list[str], questions: int) -> dict:
    """The mean of a measure over ``questions`` questions (one language), or the macro average over
    one language per population, as ``metrics.summarise`` reports it."""
    rng = rng_for(seed, "bench_coverage", "retrieval_mean")
    values = {f"l{k}": RETRIEVAL_POPULATIONS[name][0](rng, questions) for k, name in enumerate(populations)}
    truth = np.mean([RETRIEVAL_POPULATIONS[name][1] for name in populations])
    per_query = per_query_frame(values)
    if source == "polyrag":
        summary = retrieval_metrics.summarise(per_query, RETRIEVAL_BOOTSTRAP, seed=seed)
        row = summary.iloc[-1]  # the single language, or the all-languages row
        low, high = row["lower"], row["upper"]
    else:
        samples = retrieval_metrics.language_samples(per_query, ["nDCG@10"], RETRIEVAL_BOOTSTRAP, seed)
        draws = np.mean([s.draws[:, 0] for s in samples.values()], axis=0)  # languages resampled independently
        low, high = bootstrap_anchor(draws, np.mean([v.mean() for v in values.values()]), questions, source)
    return {"covered": low <= truth <= high, "width": high - low}


def retrieval_paired_cell(seed: int, source: str, pair: str, questions: int) -> dict:
    """Run a minus run b on the same questions, as ``metrics.paired_difference`` reports it."""
    rng = rng_for(seed, "bench_coverage", "retrieval_paired")
    draw, truth = RETRIEVAL_PAIRS[pair]
    a, b = draw(rng, questions)
    first, second = per_query_frame({"l0": a}), per_query_frame({"l0": b})
    if source == "polyrag":
        row = retrieval_metrics.paired_difference(first, second, RETRIEVAL_BOOTSTRAP, seed=seed).iloc[0]
        low, high = row["lower"], row["upper"]
    else:
        draws = [retrieval_metrics.language_samples(frame, ["nDCG@10"], RETRIEVAL_BOOTSTRAP, seed)["l0"].draws[:, 0]
                 for frame in (first, second)]
        low, high = bootstrap_anchor(draws[0] - draws[1], a.mean() - b.mean(), questions, source)
    return {"covered": low <= truth <= high, "width": high - low}


def retrieval_ranks_cell(seed: int, systems: int, languages: int, questions: int, gap: float = 0.0) -> dict:
    """Systems on the same questions (per question a shared chance of a relevant passage in the
    top 10, then each system's nDCG@10), system k finding it with that chance times 1 - k
    ``gap``: its true rank is k + 1 (all equal at gap 0, when any claimed order is false).
    ``covered``: every true rank inside its range (at gap 0: no order claimed), in the
    all-languages row when there are several languages, else in the language's; ``width``: the
    mean rank range, worst - best."""
    rng = rng_for(seed, "bench_coverage", "retrieval_ranks")
    by_system = {f"s{k}": {} for k in range(systems)}
    for lang in range(languages):
        found = rng.beta(1, 1.5, questions)
        for k, values in enumerate(by_system.values()):
            hit = rng.random(questions) < found * (1 - k * gap)
            values[f"l{lang}"] = np.where(hit, rng.beta(2, 1.2, questions), 0.0)
    table = retrieval_metrics.retrieval_leaderboard({s: per_query_frame(v) for s, v in by_system.items()},
                                                    RETRIEVAL_BOOTSTRAP, seed=seed)
    rows = table[table["lang"] == ("all" if languages > 1 else "l0")].set_index("model").loc[list(by_system)]
    truth = np.ones(systems) if gap == 0 else np.arange(1, systems + 1)
    upper = np.full(systems, systems) if gap == 0 else truth
    return {"covered": bool(((rows["rank_best"] <= truth) & (rows["rank_worst"] >= upper)).all()),
            "width": float((rows["rank_worst"] - rows["rank_best"]).mean())}


RETRIEVAL_ANCHORS = ("percentile question bootstrap", "t-corrected question bootstrap (the arena's)")


def retrieval_cells() -> list[tuple]:
    """Retrieval metrics' intervals (``polyrag.retrieval.metrics``): a language's mean at 6 and 12
    questions (demo languages), 30 and 200; skewed and 0/1 values; the macro average over three
    languages; paired differences of two runs, near-identical ones too; and the leaderboard's rank
    ranges among equal systems. Anchors: the percentile and the t-corrected intervals of the same
    question bootstrap."""
    cells = []
    for name in list(RETRIEVAL_POPULATIONS)[:4]:
        for questions in (6, 12, 30, 200):
            for source in ("polyrag",) + RETRIEVAL_ANCHORS:
                cells.append(("retrieval metric mean", source, f"{name}, {questions} questions", retrieval_mean_cell,
                              {"source": source, "populations": [name], "questions": questions}))
    macro = ["nDCG@10: 60% zeros, else Beta(2, 1.2)", "nDCG@10 heavily skewed: 90% zeros, else Beta(5, 1)",
             "nDCG@10: 30% zeros, else Beta(3, 2)"]
    for questions in (6, 12):
        for source in ("polyrag",) + RETRIEVAL_ANCHORS:
            cells.append(("retrieval metric mean (all languages)", source,
                          f"macro average of 3 languages (nDCG@10 60% / 90% / 30% zeros), {questions} questions each",
                          retrieval_mean_cell, {"source": source, "populations": macro, "questions": questions}))
    for pair in RETRIEVAL_PAIRS:
        for questions in (6, 12, 30, 200):
            for source in ("polyrag", RETRIEVAL_ANCHORS[0]):
                cells.append(("retrieval paired difference", source, f"{pair}, {questions} questions",
                              retrieval_paired_cell, {"source": source, "pair": pair, "questions": questions}))
    for count, languages, questions, gap in ((4, 1, 12, 0.0), (4, 1, 30, 0.0), (4, 3, 12, 0.0), (4, 1, 100, 0.25),
                                             (8, 1, 30, 0.1)):
        where = "all-languages row" if languages > 1 else "one language"
        systems = (f"{count} equal systems (no true order)" if gap == 0
                   else f"{count} systems, each finding a relevant passage {gap:.0%} less often than the one before")
        cells.append(("retrieval rank range (joint)", "polyrag",
                      f"{systems}, {languages} x {questions} questions, {where}", retrieval_ranks_cell,
                      {"systems": count, "languages": languages, "questions": questions, "gap": gap}))
    return cells


# --- component effects: retriever or generator? -------------------------------------------------

def crossed_cells(generators: int, passages: int, missing: tuple = ()) -> dict[str, tuple[str, str]]:
    """Every (passages, generator) cell but ``missing``, the system named ``g{i}_p{j}``."""
    return {f"g{i}_p{j}": (f"p{j}", f"g{i}") for i in range(generators) for j in range(passages)
            if (f"p{j}", f"g{i}") not in missing}


COMPONENT_DESIGNS = {
    "3 generators x 2 passages": crossed_cells(3, 2),
    "3 generators x 2 passages, one cell missing": crossed_cells(3, 2, missing=(("p1", "g2"),)),
    "6 generators x 2 passages": crossed_cells(6, 2),
}
COMPONENT_EFFECTS = {  # (passages effects, generator effects)
    "generator spread 1.6, passages 0.6": ({"p0": 0.3, "p1": -0.3}, {"g0": 0.8, "g1": 0.0, "g2": -0.8}),
    "passages without effect (spread 0), generator spread 1.6": ({"p0": 0.0, "p1": 0.0},
                                                                 {"g0": 0.8, "g1": 0.0, "g2": -0.8}),
    "no effect at all": ({"p0": 0.0, "p1": 0.0}, {"g0": 0.0, "g1": 0.0, "g2": 0.0}),
    # many equal levels: their range's upward bias is largest (the generator is the null factor)
    "generators without effect (spread 0), passages spread 0.8": ({"p0": 0.4, "p1": -0.4},
                                                                  {f"g{k}": 0.0 for k in range(6)}),
    # a small spread whose lowest level is five tied ones: the range stays biased without being 0
    "one generator 0.5 above five equal ones, passages spread 0.8": (
        {"p0": 0.4, "p1": -0.4}, {"g0": 0.5, **{f"g{k}": 0.0 for k in range(1, 6)}}),
}
# The power arena: one cell 1 logit better than its parts say, on the design's cycle (g2's lone cell
# in the design with a cell missing would be absorbed by g2's own effect: no test can see it).
COMPONENT_INTERACTION = {"g1_p1": 1.0}
COMPONENT_ANSWER_SD, COMPONENT_TIES = 0.5, 0.1  # each answer's own deviation per question; the tie rate


def component_strengths(design: str, effects: str, interaction: dict | None = None) -> dict[str, float]:
    passages, generators = COMPONENT_EFFECTS[effects]
    return {s: passages[p] + generators[g] + (interaction or {}).get(s, 0.0)
            for s, (p, g) in COMPONENT_DESIGNS[design].items()}


@lru_cache(maxsize=None)
def component_truth(design: str, effects: str) -> np.ndarray:
    """The additive effects of the population of questions: the fit to the expected share of wins
    (ties as half) over the answers' deviations (Monte Carlo, fixed seed), centred per factor.
    Question effects shrink the strengths slightly; the raw effects would blame the interval."""
    from polyrag.arena.components import Design, centre_by_factor, fit_additive

    cells = COMPONENT_DESIGNS[design]
    strengths = component_strengths(design, effects)
    layout = Design.of(cells)
    theta = np.array([strengths[s] for s in layout.systems])
    shifted = theta + COMPONENT_ANSWER_SD * np.random.default_rng(0).normal(size=(200_000, len(theta)))
    p = (1 / (1 + np.exp(shifted[:, None, :] - shifted[:, :, None]))).mean(axis=0)
    share = (1 - COMPONENT_TIES) * p + COMPONENT_TIES / 2
    np.fill_diagonal(share, 0)
    return centre_by_factor(fit_additive(share * 1e6, layout.matrix, 1e-9), len(layout.passages))


def components_cell(seed: int, design: str, effects: str, questions: int) -> dict:
    """One arena of the crossed systems (every pair on every question in both orders, clustered by
    the answers' deviations, 10% ties), fitted as the workflow fits it (``component_effects``):
    its effects' intervals (all at once: their mean coverage), each factor's spread, the
    difference of spreads (``claimed``: the verdict names a factor), and the interaction test on
    this additive arena (``null``) and on one where a cell departs by 1 logit (``effect``)."""
    from polyrag.arena.components import FACTORS, Design, component_effects, interaction_test, spread

    rng = rng_for(seed, "bench_coverage", "components")
    cells = COMPONENT_DESIGNS[design]
    games = simulate_clustered_games(component_strengths(design, effects), questions, rng, COMPONENT_ANSWER_SD,
                                     COMPONENT_TIES)
    table, summary = component_effects(games, cells, 0.01, TOURNAMENTS, rng)
    truth = component_truth(design, effects)
    result = {"covered": float(np.mean((table["ci_low"] <= truth) & (truth <= table["ci_high"]))),
              "width": float(np.mean(table["ci_high"] - table["ci_low"]))}
    true_spread = {factor: float(spread(truth[(table["factor"] == factor).to_numpy()])) for factor in FACTORS}
    for factor in FACTORS:
        low, high = summary[f"spread_{factor}_ci_low"], summary[f"spread_{factor}_ci_high"]
        result |= {f"covered: spread ({factor}), true {true_spread[factor]:.2f}": low <= true_spread[factor] <= high,
                   f"width: spread ({factor}), true {true_spread[factor]:.2f}": high - low}
    difference = true_spread["generator"] - true_spread["passages"]
    low, high = summary["spread_difference_ci_low"], summary["spread_difference_ci_high"]
    name = f"spread difference (generator - passages), true {difference:.2f}"
    result |= {f"covered: {name}": low <= difference <= high, f"width: {name}": high - low,
               f"claimed: {name}": low > 0 or high < 0}
    interacting = simulate_clustered_games(component_strengths(design, effects, COMPONENT_INTERACTION), questions, rng,
                                           COMPONENT_ANSWER_SD, COMPONENT_TIES)
    layout = Design.of(cells)
    tested = interaction_test(question_win_matrices(interacting, layout.systems)[1], layout, 0.01)
    return result | {"null: interaction test": summary["interaction_p_value"] < 0.05,
                     "effect: interaction test": tested["interaction_p_value"] < 0.05}


def components_anchor_cell(seed: int, design: str, effects: str, questions: int) -> dict:
    """The estimators polyrag's replace, on the same arenas (same seed, same draws): the
    likelihood ratio of the additive against the full model with games as independent
    (chi-square), each factor's plug-in spread with the percentile interval of the bootstrap, and the
    difference of the bias-corrected spreads with the t interval of the tournaments' ranges alone."""
    from polyrag.arena.components import FACTORS, Design, fit_additive, fit_with_bootstrap, spread, spread_with_interval

    rng = rng_for(seed, "bench_coverage", "components")
    cells = COMPONENT_DESIGNS[design]
    layout = Design.of(cells)
    games = simulate_clustered_games(component_strengths(design, effects), questions, rng, COMPONENT_ANSWER_SD,
                                     COMPONENT_TIES)
    fit = fit_with_bootstrap(games, cells, 0.01, TOURNAMENTS, rng)
    truth = component_truth(design, effects)
    result = {"covered": np.nan, "width": np.nan}
    true_spread, corrected = {}, {}
    for factor in FACTORS:
        part = fit.factor(factor)
        low, high = np.percentile(spread(fit.samples[:, part]), [2.5, 97.5])
        true_spread[factor] = float(spread(truth[part]))
        name = f"spread ({factor}), true {true_spread[factor]:.2f}"
        result |= {f"covered: {name}": low <= true_spread[factor] <= high, f"width: {name}": high - low}
        corrected[factor] = spread_with_interval(fit.effects[part], fit.samples[:, part], fit.level_questions[part],
                                                 NOMINAL)[1]
    # the difference's t interval of the tournaments' ranges, around the bias-corrected difference
    difference = corrected["generator"] - corrected["passages"]
    half = critical_value(int(fit.level_questions.min()), (1 - NOMINAL) / 2) * np.std(
        spread(fit.samples[:, fit.factor("generator")]) - spread(fit.samples[:, fit.factor("passages")]), ddof=1)
    truth_difference = true_spread["generator"] - true_spread["passages"]
    name = f"spread difference (generator - passages), true {truth_difference:.2f}"
    result |= {f"covered: {name}": abs(difference - truth_difference) <= half, f"width: {name}": 2 * half,
               f"claimed: {name}": abs(difference) > half}
    interacting = simulate_clustered_games(component_strengths(design, effects, COMPONENT_INTERACTION), questions, rng,
                                           COMPONENT_ANSWER_SD, COMPONENT_TIES)

    def likelihood_ratio_rejects(wins: np.ndarray) -> bool:
        def log_likelihood(theta):
            return -(wins * np.logaddexp(0, theta[None, :] - theta[:, None])).sum()

        full = fit_logits(wins, 1e-6)
        additive = layout.matrix @ fit_additive(wins, layout.matrix, 1e-6)
        statistic = 2 * (log_likelihood(full) - log_likelihood(additive))
        return bool(chi2.sf(statistic, layout.interaction_df) < 0.05)

    return result | {"null: interaction test": likelihood_ratio_rejects(fit.wins.sum(axis=0)),
                     "effect: interaction test": likelihood_ratio_rejects(
                         question_win_matrices(interacting, layout.systems)[1].sum(axis=0))}


COMPONENTS_ANCHOR = ("likelihood ratio (games independent); percentile interval of the plug-in spread; t interval of "
                     "the ranges' difference")


def components_cells() -> list[tuple]:
    """The component effects (``polyrag.arena.components``): 12 and 30 questions, games clustered
    by question, the 3 x 2 crossing full and with one cell missing (df 2 and 1), a factor without
    effect (its spread 0, where a plug-in range is biased upward), and no effect at all; 6
    generators without effect x 2 passage sources at 30 and 60 questions (six equal levels: the
    largest upward bias of a range, on the generator's side), and one generator 0.5 above five
    equal ones at 30 (a spread that is not 0 but still biased)."""
    cells = []
    settings = [(design, effects, questions) for design in list(COMPONENT_DESIGNS)[:2] for questions in (12, 30)
                for effects in list(COMPONENT_EFFECTS)[:2]]
    settings.append(("3 generators x 2 passages", "no effect at all", 12))
    settings += [("6 generators x 2 passages", "generators without effect (spread 0), passages spread 0.8", questions)
                 for questions in (30, 60)]
    settings.append(("6 generators x 2 passages", "one generator 0.5 above five equal ones, passages spread 0.8", 30))
    for design, effects, questions in settings:
        setting = f"{design}, {effects}, {questions} questions, answer sd {COMPONENT_ANSWER_SD}, 10% ties"
        cells.append(("component effects", "polyrag", setting, components_cell,
                      {"design": design, "effects": effects, "questions": questions}))
        cells.append(("component effects", COMPONENTS_ANCHOR, setting, components_anchor_cell,
                      {"design": design, "effects": effects, "questions": questions}))
    return cells


# --- running ---------------------------------------------------------------------------------

def run_cell(task: tuple) -> list[dict]:
    estimator, source, setting, function, params, seeds = task
    results = pd.DataFrame([function(seed, **params) for seed in range(seeds)])
    base = {"estimator": estimator, "source": source, "setting": setting, "nominal": NOMINAL, "seeds": seeds}
    if "null" in results:  # a test: family-wise rejection under the null, power under the effect
        return [base | {"nominal": 0.05, "null_rejection": results["null"].mean(), "power": results["effect"].mean()}]
    rows = [base | {"coverage": results["covered"].mean(), "mean_width": results["width"].mean()}]
    if results["covered"].isna().all():  # a cell whose rows are all named (an anchor measuring a part only)
        rows = []
    if "ranks_covered" in results:
        rows.append(base | {"estimator": f"{estimator} rank range (joint)", "coverage": results["ranks_covered"].mean()})
    return rows + named_rows(results, base)


def named_rows(results: pd.DataFrame, base: dict) -> list[dict]:
    """The further rows of a cell that measures several things on each simulation, estimator
    ``{estimator}: NAME``: an interval's from ``covered: NAME`` (with ``width: NAME``; ``claimed:
    NAME``, the share of intervals excluding 0, as ``power``), a test's from ``null: NAME`` and
    ``effect: NAME``."""
    rows = []
    for column in results:
        kind, _, name = column.partition(": ")
        if not name or kind not in ("covered", "null"):
            continue
        row = base | {"estimator": f"{base['estimator']}: {name}"}
        if kind == "covered":
            width, claimed = results.get(f"width: {name}"), results.get(f"claimed: {name}")
            rows.append(row | {"coverage": results[column].mean(),
                               "mean_width": np.nan if width is None else width.mean(),
                               "power": np.nan if claimed is None else claimed.mean()})
        else:
            rows.append(row | {"nominal": 0.05, "null_rejection": results[column].mean(),
                               "power": results[f"effect: {name}"].mean()})
    return [row for row in rows if not (pd.isna(row.get("coverage")) and pd.isna(row.get("null_rejection")))]


def judge_statistics_tasks(seeds: int) -> list[tuple]:
    """The judge diagnostics' cells, from ``bench_judge_statistics`` (its own simulators): one
    pool task per call."""
    from bench_judge_statistics import kappa, position, preference, style

    return [(position, (seeds, 100)), (position, (seeds, 30, 1.5)), (kappa, (seeds, 40, TOURNAMENTS)),
            (preference, (seeds, 100, TOURNAMENTS)), (style, (seeds, 100, TOURNAMENTS))]


def run_judge_statistics(task: tuple) -> list[dict]:
    function, args = task
    result = function(*args)
    return [{"estimator": row["statistic"], "source": row["source"], "nominal": row["nominal"],
             "coverage": row["coverage"], "seeds": row["intervals"],
             "setting": f"{row['questions']} questions" + (f", position bias varying by question (sd {row['question_bias_sd']})"
                                                           if row.get("question_bias_sd") else "")}
            for row in (result if isinstance(result, list) else [result])]


def within_band(coverage: float, seeds: int) -> bool:
    """Whether a measured coverage is consistent with 0.95 at the 99.9% level (binomial)."""
    return binomtest(int(round(coverage * seeds)), seeds, NOMINAL).pvalue > 0.001


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 1000; 200 with --quick)")
    parser.add_argument("--quick", action="store_true", help="polyrag's cells only (no anchors), 200 seeds per cell")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="",
                        help="run only cells whose estimator contains one of these (comma-separated)")
    parser.add_argument("--judge-statistics", action="store_true", help="add the judge diagnostics' cells")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    seeds = args.seeds or (200 if args.quick else 1000)
    cells = [cell for cell in mars_cells() + memerag_cells() + bt_cells() + rank_range_cells() + label_anchored_cells()
             + label_anchored_one_bad_cells() + retrieval_cells()
             + components_cells()
             if any(part in cell[0] for part in args.only.split(",")) and (cell[1] == "polyrag" or not args.quick)]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        # The judge diagnostics' calls are the longest tasks: first, so the cells fill in around them.
        judge_statistics = [pool.submit(run_judge_statistics, task)
                            for task in (judge_statistics_tasks(seeds) if args.judge_statistics else [])]
        futures = [pool.submit(run_cell, (*cell, seeds)) for cell in cells] + judge_statistics
        rows = [row for future in futures for row in future.result()]
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 80,
                           "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    print(f"\n{len(table)} rows x {seeds} seeds in {time.perf_counter() - start:.0f} s "
          f"({TOURNAMENTS} bootstrap tournaments)")


if __name__ == "__main__":
    main()
