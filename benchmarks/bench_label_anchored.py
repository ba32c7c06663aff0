"""Coverage of the label-anchored arena (polyrag/arena/label_anchored.py) on simulated arenas.

Each arena: 8 models, 200 questions, every pair on every question (5,600 units). Model i's
strength on question q is ``theta_i + e_qi`` (``e`` ~ N(0, 0.5^2): questions favour models
differently, so the units of a question are correlated). The human labeller ties 10% of units and
otherwise picks model a with probability ``sigmoid(strength_a - strength_b)``. The LLM judge
sees each unit in both orders; in each order it copies the human verdict 75% of the time and
otherwise prefers the favoured model (model 1) when it is in the pair, else the answer shown
first; 5% of its verdicts are invalid. A useless judge always prefers the first answer.

The estimand is the Bradley-Terry fit to the human labels of the whole population of questions
(soft labels, ties as 0.5): the logits minimising the expected logistic loss over pairs, whose
expected label is ``0.05 + 0.9 E[sigmoid(theta_a - theta_b + e_a - e_b)]`` (Gauss-Hermite).

Per budget of n human labels and seed, each method's 95% intervals of the centred logits and its
joint rank-sets are checked against the truth. The labels are a uniform sample of n units, except
for active PPI++: each unit is labelled independently with a probability that grows with the
judge's uncertainty (half the budget spread uniformly; n labels expected). Columns: marginal
coverage (over models and seeds), joint rank-set coverage (every model's true rank inside its
rank-set, per arena), mean interval width, mean n_eff / n and mean lambda.

    python benchmarks/bench_label_anchored.py --seeds 500
    python benchmarks/bench_label_anchored.py --seeds 300 --table 12,30   # label_anchored.csv at a small size
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import chi2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from polyrag.arena.active import active_fit, active_inclusion_probabilities  # noqa: E402
from polyrag.arena.label_anchored import effective_labels, normal_interval, rank_sets  # noqa: E402
from polyrag.arena.ppi_fit import Fit, anchored_fit, centred, centring, design, labels_only_covariance  # noqa: E402

MODELS, QUESTIONS, QUESTION_SD, TIE_RATE = 8, 200, 0.5, 0.10
COPY_RATE, INVALID_RATE, FAVOURED = 0.75, 0.05, 1
# The "one-bad" judge: right on every model's pairs (copies the human 90% of the time) but one's,
# where it contradicts the human 60% of the time (one model it cannot judge).
ONE_BAD_COPY, BAD_MODEL, BAD_CONTRADICT = 0.90, 3, 0.60
SCENARIOS = {"spread": np.linspace(-1.0, 1.0, MODELS), "close": np.linspace(-0.35, 0.35, MODELS)}
BUDGETS = (50, 100, 200, 400)
PAIRS = np.array(list(combinations(range(MODELS), 2)))


def true_logits(theta: np.ndarray) -> np.ndarray:
    """The population BT fit to the human labels (module docstring)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    difference_sd = QUESTION_SD * np.sqrt(2)
    d = theta[PAIRS[:, 0]] - theta[PAIRS[:, 1]]
    expected = (expit(d[:, None] + difference_sd * nodes[None, :]) * weights).sum(axis=1) / weights.sum()
    label = TIE_RATE / 2 + (1 - TIE_RATE) * expected
    x = design(PAIRS, MODELS)
    estimate, _, _, _ = anchored_fit(x, label, label, np.zeros((0, x.shape[1])), np.zeros(0), 0.0)
    return centred(estimate, np.zeros((x.shape[1],) * 2), MODELS, 0, 0.0, True).logit


def arena(theta: np.ndarray, judge: str, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Units (pairs, questions), their human labels and the judge's values."""
    strength = theta[None, :] + QUESTION_SD * rng.standard_normal((QUESTIONS, MODELS))
    pairs = np.tile(PAIRS, (QUESTIONS, 1))
    questions = np.repeat(np.arange(QUESTIONS), len(PAIRS))
    p_a = expit(strength[questions, pairs[:, 0]] - strength[questions, pairs[:, 1]])
    label = np.where(rng.random(len(pairs)) < TIE_RATE, 0.5, (rng.random(len(pairs)) < p_a).astype(float))
    scores = []
    for a_first in (True, False):  # the two orders
        if judge == "useless":
            score = np.full(len(pairs), 1.0 if a_first else 0.0)
        elif judge == "one-bad":
            first = 1.0 if a_first else 0.0
            bad = (pairs == BAD_MODEL).any(axis=1)
            draw = rng.random(len(pairs))
            score = np.where(bad, np.where(draw < BAD_CONTRADICT, 1 - label, first),
                             np.where(draw < ONE_BAD_COPY, label, first))
        else:
            favoured = np.where(pairs[:, 0] == FAVOURED, 1.0, np.where(pairs[:, 1] == FAVOURED, 0.0, np.nan))
            fallback = np.where(np.isnan(favoured), 1.0 if a_first else 0.0, favoured)
            score = np.where(rng.random(len(pairs)) < COPY_RATE, label, fallback)
        scores.append(np.where(rng.random(len(pairs)) < INVALID_RATE, np.nan, score))
    both = np.column_stack(scores)
    valid = (~np.isnan(both)).sum(axis=1)
    value = np.where(valid == 0, 0.5, np.nansum(both, axis=1) / np.maximum(valid, 1))
    return pairs, questions, label, value


def scheffe_rank_sets(fit: Fit, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """The anchor of the rank-sets: the chi-square(K-1) projection of the joint ellipsoid onto
    every difference (Scheffe), which polyrag's max-|z| stepdown replaced."""
    k = len(fit.logit)
    if not fit.converged:
        return np.ones(k, int), np.full(k, k)
    variance = np.diag(fit.covariance)
    difference_variance = np.clip(variance[:, None] + variance[None, :] - 2 * fit.covariance, 0, None)
    difference = fit.logit[:, None] - fit.logit[None, :]
    above = (difference**2 > chi2.ppf(1 - alpha, k - 1) * difference_variance) & (difference > 0)
    return 1 + above.sum(axis=0), k - above.sum(axis=1)


def check(fit: Fit, truth: np.ndarray, true_rank: np.ndarray) -> dict:
    low, high = normal_interval(fit)
    best, worst = rank_sets(fit)
    anchor_best, anchor_worst = scheffe_rank_sets(fit)
    return {"covered": float(((low <= truth) & (truth <= high)).mean()),
            "ranks_covered": float(((best <= true_rank) & (true_rank <= worst)).all()),
            "rank_width": float(np.mean(worst - best)),
            "scheffe_ranks_covered": float(((anchor_best <= true_rank) & (true_rank <= anchor_worst)).all()),
            "scheffe_rank_width": float(np.mean(anchor_worst - anchor_best)),
            "width": float(np.mean(high - low)) if fit.converged else np.inf,
            "diverged": float(not fit.converged)}


METHODS = ("judge-only BT", "labels-only BT", "PPI", "PPI++", "PPI++ unclustered", "active PPI++")
ACTIVE_FLOOR = 0.5  # the share of the budget spread uniformly under active labelling (the default)


def fit_method(method: str, x, questions, label, value, labelled, probability=None) -> tuple[Fit, np.ndarray | None]:
    """One method's fit of one arena (``labelled``: the units with a human label), and its n_eff
    per model for the PPI++ methods."""
    reported = centring(MODELS, 0)
    if method == "judge-only BT":
        empty = np.zeros((0, x.shape[1]))
        estimate, cov, lam, ok = anchored_fit(x, value, value, empty, np.zeros(0), 0.0, questions, np.zeros(0))
    elif method == "active PPI++":
        estimate, cov, lam, ok = active_fit(x, label, value, labelled, probability, None, questions, reported)
    else:
        lam = {"labels-only BT": 0.0, "PPI": 1.0}.get(method)
        clusters = (questions[labelled], questions[~labelled]) if method != "PPI++ unclustered" else (None, None)
        estimate, cov, lam, ok = anchored_fit(x[labelled], label[labelled], value[labelled], x[~labelled],
                                              value[~labelled], lam, *clusters, reported=reported)
    fit = centred(estimate, cov, MODELS, 0, lam, ok)
    n_eff = None
    if method in ("PPI++", "active PPI++"):  # n_eff: the labels-only variance at the same logits
        labels_cov = labels_only_covariance(estimate, x, x[labelled], label[labelled], questions[labelled],
                                            same_bread_as_lam=lam if method == "PPI++" else 1.0)
        n_eff = effective_labels(fit, centred(estimate, labels_cov, MODELS, 0, 0.0, ok), int(labelled.sum()))
    return fit, n_eff


def one_seed(args: tuple) -> list[dict]:
    """Every method and budget on one simulated arena (``methods``: a subset, for the coverage
    benchmark's cells)."""
    scenario, judge, seed, budgets, methods = (*args, BUDGETS, METHODS)[:5] if len(args) == 3 else args
    theta = SCENARIOS[scenario]
    truth = true_logits(theta)
    true_rank = pd.Series(-truth).rank(method="min").to_numpy()
    rng = np.random.default_rng([seed, len(scenario), judge == "useless"])
    pairs, questions, label, value = arena(theta, judge, rng)
    x = design(pairs, MODELS)
    rows = []
    if judge == "biased" and "judge-only BT" in methods:  # the judge alone needs no labels
        rows.append({"method": "judge-only BT", "budget": 0,
                     **check(fit_method("judge-only BT", x, questions, label, value, None)[0], truth, true_rank)})
    for budget in budgets:
        uniform = np.zeros(len(pairs), bool)
        uniform[rng.choice(len(pairs), budget, replace=False)] = True
        probability = active_inclusion_probabilities(value, budget, ACTIVE_FLOOR)
        active = rng.random(len(pairs)) < probability
        for method in methods:
            if method == "judge-only BT":
                continue
            labelled = active if method == "active PPI++" else uniform
            fit, n_eff = fit_method(method, x, questions, label, value, labelled, probability)
            row = {"method": method, "budget": budget, "lambda": fit.lam, "labels": int(labelled.sum()),
                   **check(fit, truth, true_rank)}
            if n_eff is not None:
                row["n_eff_over_n"] = float(np.nanmean(n_eff) / labelled.sum())
            rows.append(row)
    return [{"scenario": scenario, "judge": judge, "seed": seed, **row} for row in rows]


def table_seed(args: tuple) -> dict:
    """What ``label_anchored.csv`` reports for one small arena (``questions`` questions, ``budget``
    uniform labels, PPI++ tuned), as the workflow builds it (``label_anchored_table``): whether
    some or every model is not estimable, and the coverage of the estimable models' intervals of
    their logits centred over themselves, beside every model's interval of the unrestricted fit
    (an unbounded one counted as covering) and that of the models left out of a finite fit; and
    the root-mean-square error of PPI++ over that of labels-only where both fits are finite."""
    from polyrag.arena.label_anchored import label_anchored_fits, label_anchored_table

    global QUESTIONS
    scenario, judge, seed, questions, budget = args
    saved, QUESTIONS = QUESTIONS, questions
    try:
        theta = SCENARIOS[scenario]
        truth = true_logits(theta)
        rng = np.random.default_rng([seed, questions, budget, judge == "useless"])
        pairs, question, label, value = arena(theta, judge, rng)
    finally:
        QUESTIONS = saved
    models = [f"m{k}" for k in range(MODELS)]
    units = pd.DataFrame({"unit_id": [f"u{k}" for k in range(len(pairs))], "lang": "xx",
                          "query_id": question.astype(str), "model_a": np.array(models)[pairs[:, 0]],
                          "model_b": np.array(models)[pairs[:, 1]], "judge_value": value, "valid_orders": 2})
    chosen = rng.choice(len(pairs), budget, replace=False)
    labels = pd.DataFrame({"unit_id": units["unit_id"].to_numpy()[chosen], "label_value": label[chosen]})
    table = label_anchored_table(units, labels, models, {"cant_judge": 0, "missing": 0}).set_index("model").loc[models]
    labelled = np.zeros(len(pairs), bool)
    labelled[chosen] = True
    fits = label_anchored_fits(pairs, value, labelled, label[labelled], MODELS,
                               clusters=np.char.add("xx\x1f", question.astype(str)))
    fit, labels_only = fits["label_anchored"], fits["labels_only"]
    low, high = normal_interval(fit)
    keep = table["estimable"].to_numpy()
    row = {"scenario": scenario, "judge": judge, "seed": seed, "lambda": float(np.nanmean(fit.lam)), "some_not_estimable": (~keep).any(),
           "none_estimable": (~keep).all(), "unrestricted": float(np.mean((low <= truth) & (truth <= high))),
           "reported_models": int(keep.sum()), "covered": np.nan,
           # the models left out of a finite fit (preferred in all or none of their labels): how
           # often the interval of the unrestricted fit would have held them
           "left_out_covered": float(np.mean(((low <= truth) & (truth <= high))[~keep]))
           if fit.converged and not keep.all() and keep.any() else np.nan,
           # where both fits are finite: squared errors of PPI++ (tuned lambda) and of labels-only
           "error_ppi": np.mean((fit.logit - truth) ** 2) if fit.converged and labels_only.converged else np.nan,
           "error_labels_only": np.mean((labels_only.logit - truth) ** 2) if fit.converged and labels_only.converged
           else np.nan}
    if keep.any():
        centred_truth = truth[keep] - truth[keep].mean()
        row["covered"] = float(np.mean((table["ci_low"].to_numpy()[keep] <= centred_truth)
                                       & (centred_truth <= table["ci_high"].to_numpy()[keep])))
        row["width"] = float(np.mean(table["ci_high"].to_numpy()[keep] - table["ci_low"].to_numpy()[keep]))
    return row


SETTINGS = (("spread", "biased"), ("close", "biased"), ("spread", "useless"))


def run(seeds: int, workers: int, settings=SETTINGS) -> pd.DataFrame:
    jobs = [(scenario, judge, seed) for scenario, judge in settings for seed in range(seeds)]
    with ProcessPoolExecutor(workers) as pool:
        rows = [row for chunk in pool.map(one_seed, jobs, chunksize=8) for row in chunk]
    return pd.DataFrame(rows)


def summary(raw: pd.DataFrame) -> pd.DataFrame:
    table = raw.groupby(["scenario", "judge", "method", "budget"], sort=False).agg(
        coverage=("covered", "mean"), joint_rank_coverage=("ranks_covered", "mean"),
        rank_width=("rank_width", "mean"), scheffe_rank_coverage=("scheffe_ranks_covered", "mean"),
        scheffe_rank_width=("scheffe_rank_width", "mean"),
        width=("width", lambda w: w[np.isfinite(w)].mean()), diverged=("diverged", "mean"),
        n_eff_over_n=("n_eff_over_n", "mean") if "n_eff_over_n" in raw else ("covered", "size"),
        lam=("lambda", "mean"), labels=("labels", "mean"), seeds=("seed", "nunique")).reset_index()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help="CSV of the summary table")
    parser.add_argument("--table", default=None, metavar="QUESTIONS,LABELS",
                        help="instead: what label_anchored.csv reports at this small size (e.g. 12,30)")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.table:
        questions, budget = map(int, args.table.split(","))
        jobs = [(scenario, judge, seed, questions, budget)
                for scenario, judge in SETTINGS for seed in range(args.seeds)]
        with ProcessPoolExecutor(args.workers) as pool:
            raw = pd.DataFrame(pool.map(table_seed, jobs, chunksize=8))
        print(raw.groupby(["scenario", "judge"], sort=False).agg(
            some_not_estimable=("some_not_estimable", "mean"), none_estimable=("none_estimable", "mean"),
            reported_models=("reported_models", "mean"), coverage_reported=("covered", "mean"),
            coverage_unrestricted=("unrestricted", "mean"), coverage_left_out=("left_out_covered", "mean"),
            lam=("lambda", "mean"),
            rmse_ppi_over_labels_only=("error_ppi",
                                       lambda e: np.sqrt(e.mean() / raw.loc[e.index, "error_labels_only"].mean())),
        ).to_string(float_format=lambda v: f"{v:.3f}"))
        print(f"\n{args.seeds} seeds per setting, {questions} questions, {budget} labels, "
              f"{time.perf_counter() - start:.0f} s on {args.workers} workers")
        return
    table = summary(run(args.seeds, args.workers))
    pd.set_option("display.width", 200)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\n{args.seeds} seeds per setting, {time.perf_counter() - start:.0f} s on {args.workers} workers")
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
