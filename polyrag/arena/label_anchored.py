"""Bradley-Terry logits anchored on human labels: prediction-powered inference (PPI++) for the arena.

The fit itself (units, the rectified loss, power tuning, the clustered sandwich) is
``polyrag.arena.ppi_fit``; under an active design, ``polyrag.arena.active``. Here: the fits of one arena and
the table built on them.

Estimability (``label_anchored_table``, :func:`estimability`): a model that no human label compares,
or that is preferred in all or none of its labels, has no logit the labels can anchor (its
labels-only fit diverges; a finite label-anchored one rests on the judge alone, and such intervals
covered 0.10-0.54 at 30 labels). Its logit, interval and rank are left empty with the reason in
``note``, and the other models are reported centred over themselves (``centred_over``). When the
fit has no finite maximum every model is left empty.

Ranks: ``rank_best``..``rank_worst`` hold for all models at once: model i is surely above j when
the simultaneous interval of ``logit_i - logit_j`` lies above 0, its critical value the max-|z|
quantile over all pairs under the logits' normal law with the clustered sandwich covariance, stepdown
(``polyrag.stats.rank_ranges.normal_rank_ranges``, the method of every rank range polyrag prints).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from polyrag.arena.active import active_pieces
from polyrag.arena.ppi_fit import Fit, Pieces, anchored_fit, anchored_pieces, centred, centring, design, joint_covariance
from polyrag.errors import DataError
from polyrag.stats.bootstrap import rank_by
from polyrag.stats.rank_ranges import normal_rank_ranges

#: Below this many human labels the intervals undercover: 0.91-0.93 at 50 labels in
#: benchmarks/bench_label_anchored.py (0.94-0.95 from 100), 0.90-0.91 for the estimable models at
#: 30 labels of 12 questions, so the table says so.
MIN_HUMAN_LABELS = 100


def label_anchored_fits(pairs: np.ndarray, yhat: np.ndarray, labelled: np.ndarray, y: np.ndarray, n_models: int,
                        lam: float | None = None, clusters: np.ndarray | None = None, anchor: int = 0,
                        probability: np.ndarray | None = None, over: np.ndarray | None = None) -> dict[str, Fit]:
    """The label-anchored fit and the two it sits between, on one set of units.

    ``pairs``: units x 2 model indices; ``yhat``: the judge's value of every unit; ``labelled``:
    boolean mask of the units with a human label; ``y``: the human labels of those units, in the
    order of ``np.flatnonzero(labelled)``; ``clusters``: a label per unit (its question) or None.
    ``lam=None``: one lambda tuned for all models, each model falling back to labels alone where that
    is more precise (:func:`shared_or_labels_only_fit`); a number: that one for all.
    ``over``: the models the label-anchored logits are centred over (default all); the others'
    are left NaN. Returns ``{"label_anchored", "labels_only", "judge_only",
    "labels_only_at_anchored"}``: the last is the labels-only covariance at the label-anchored
    logits (same Hessian), for ``n_eff``. ``probability``: each unit's chance of being labelled
    under an active design (``active_pieces``, whose labels-only fit is weighted by 1 / probability
    too); None for a uniform sample."""
    x = design(pairs, n_models, anchor)
    x_l, x_u = x[labelled], x[~labelled]
    c_l, c_u = (clusters[labelled], clusters[~labelled]) if clusters is not None else (None, None)
    y_all = np.full(len(yhat), np.nan)
    y_all[labelled] = y

    def fit_at(lam_value: float | None, reported_rows: np.ndarray | None = None) -> Pieces:
        if probability is None:
            return anchored_pieces(x_l, y, yhat[labelled], x_u, yhat[~labelled], lam_value, c_l, c_u,
                                   reported=reported_rows)
        return active_pieces(x, y_all, yhat, labelled, probability, lam_value, clusters, reported_rows)

    fits = {}
    zero = fit_at(0.0)
    fits["labels_only"] = centred(zero.theta, zero.covariance(), n_models, anchor, 0.0, zero.converged)
    reported = centring(n_models, anchor, over)
    shown = np.ones(n_models, bool) if over is None else np.asarray(over, bool)
    if lam is None:
        shared = fit_at(None, reported[shown])
        per_model = [shared_or_labels_only_fit(zero, shared, row) for row in reported[shown]]
    else:
        per_model = [fit_at(lam)] * int(shown.sum())
    fits["label_anchored"], fits["labels_only_at_anchored"] = per_model_fits(per_model, reported, shown)
    # The judge alone: every unit's judge value as its label (lam 0 with the judge as the labeller).
    empty = np.zeros((0, x.shape[1]))
    theta_j, cov_j, _, ok_j = anchored_fit(x, yhat, yhat, empty, np.zeros(0), 0.0, clusters,
                                           None if clusters is None else np.zeros(0))
    fits["judge_only"] = centred(theta_j, cov_j, n_models, anchor, 0.0, ok_j)
    return fits


def shared_or_labels_only_fit(zero: Pieces, shared: Pieces, row: np.ndarray) -> Pieces:
    """The fit one reported logit ``row @ theta`` is taken from: ``shared`` (one lambda for every
    model, tuned for the total variance of the reported logits), or ``zero`` (labels alone) where
    the shared fit would make this logit less precise than its labels alone, as a judge that is
    right on most models and wrong on one does to that one.

    Guarantee: the fit returned has, for this logit, an estimated variance no larger than both the
    labels-only fit's (``zero``: its interval is ``labels_only_ci_*``) and the labels-only variance
    at the same logits with the same Hessian (so ``n_eff >= n_labels``). Where the shared fit has no
    finite maximum, labels alone; where neither has one, ``shared`` (its interval unbounded).

    Not PPI++'s coordinate-wise lambda (each model's own, tuned for its logit's variance alone,
    with the same fallback): with a handful of labels per model that tuning is noisy and costs
    coverage. On simulated arenas of 8 models (500 seeds; docs/intervals.md): at 12 questions and 30
    labels (spread models, biased judge) 0.877 against this rule's 0.906; with a judge that
    contradicts people on one model, 0.926 against 0.931 at 30 questions and 120 labels and 0.926
    against 0.933 at 200 questions and 100 labels, its widths 2-4% narrower.
    """
    def variance(pieces: Pieces, lam: float | None = None) -> float:
        return float(joint_covariance([pieces.influence(row, lam)], pieces.groups)[0, 0])

    if shared.converged:
        limit = variance(zero) if zero.converged else np.inf
        if variance(shared) <= min(limit, variance(shared, 0.0)):
            return shared
    return zero if zero.converged else shared


def per_model_fits(per_model: list[Pieces], reported: np.ndarray, shown: np.ndarray) -> tuple[Fit, Fit]:
    """The logits ``reported[m] @ theta_m`` of the models ``shown``, each from its own fit, with
    their joint covariance (each logit's influence on the same units), and the labels-only
    covariance at the same points with the same Hessians; NaN for the others."""
    rows = reported[shown]
    groups = per_model[0].groups
    logit, lam = np.full(len(shown), np.nan), np.full(len(shown), np.nan)
    logit[shown] = [row @ pieces.theta for row, pieces in zip(rows, per_model)]
    lam[shown] = [pieces.lam for pieces in per_model]
    covariances = []
    for labels_alone in (None, 0.0):
        covariance = np.full((len(shown), len(shown)), np.nan)
        covariance[np.ix_(shown, shown)] = joint_covariance(
            [pieces.influence(row, labels_alone) for row, pieces in zip(rows, per_model)], groups)
        covariances.append(covariance)
    converged = all(pieces.converged for pieces in per_model)
    return (Fit(logit=logit, covariance=covariances[0], lam=lam, converged=converged),
            Fit(logit=logit, covariance=covariances[1], lam=0.0, converged=converged))


def normal_interval(fit: Fit, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """``logit +- z sd``; unbounded where the fit did not converge."""
    if not fit.converged:
        return np.full_like(fit.logit, -np.inf), np.full_like(fit.logit, np.inf)
    half = norm.ppf(1 - alpha / 2) * np.sqrt(np.clip(np.diag(fit.covariance), 0, None))
    return fit.logit - half, fit.logit + half


def rank_sets(fit: Fit, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """``(rank_best, rank_worst)`` per model, jointly valid at ``1 - alpha`` (module docstring)."""
    k = len(fit.logit)
    if not fit.converged or k < 2:
        return np.ones(k, int), np.full(k, k)
    return normal_rank_ranges(fit.logit, fit.covariance, 1 - alpha)


def effective_labels(fit: Fit, labels_only_at_same_point: Fit, n_labelled: int) -> np.ndarray:
    """Per model, the number of human labels a labels-only fit would need for an interval as narrow:
    ``n * var_labels_only / var_label_anchored`` (both at the label-anchored logits, same Hessian)."""
    anchored = np.diag(fit.covariance)
    labels_only = np.diag(labels_only_at_same_point.covariance)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(anchored > 0, n_labelled * labels_only / anchored, np.nan)


def labels_per_model(pairs: np.ndarray, labelled: np.ndarray, y: np.ndarray, n_models: int) -> tuple[np.ndarray, ...]:
    """Per model, its labelled units and how many of them it won (ties half): ``(labels,
    won)``. ``y`` is in the order of ``np.flatnonzero(labelled)``, each the label's value for the
    unit's first model."""
    first, second = pairs[labelled, 0], pairs[labelled, 1]
    count = np.bincount(first, minlength=n_models) + np.bincount(second, minlength=n_models)
    won = np.bincount(first, weights=y, minlength=n_models) + np.bincount(second, weights=1 - y, minlength=n_models)
    return count.astype(int), won


def label_reasons(labels: np.ndarray, won: np.ndarray) -> list[str]:
    """Per model, why its human labels cannot anchor its logit ("" where they can)."""
    reasons = []
    for n, w in zip(labels, won):
        if n == 0:
            reasons.append("no human label compares this model")
        elif w == n:
            reasons.append(f"preferred in all {n} of its human labels")
        elif w == 0:
            reasons.append(f"preferred in none of its {n} human labels")
        else:
            reasons.append("")
    return reasons


def centred_over(reasons: list[str]) -> np.ndarray:
    """The models the label-anchored logits are centred over: those the labels can anchor, or all
    when fewer than two can (then no model is reported, see :func:`estimability`)."""
    anchorable = np.array([not reason for reason in reasons])
    return anchorable if anchorable.sum() >= 2 else np.ones(len(reasons), bool)


def estimability(fit: Fit, labels: np.ndarray, won: np.ndarray, models: list[str]) -> tuple[np.ndarray, list[str]]:
    """Per model, whether its label-anchored logit, interval and rank can be reported, and the
    ``note`` that says why not (or, for the others, which models their centring leaves out).
    ``fit``: centred over :func:`centred_over` the same labels.

    A model is not estimable when no human label compares it, or when it is preferred in all or
    none of its labels (the labels separate it: its labels-only fit has no finite maximum, and what
    keeps the label-anchored one finite is the judge alone, whose bias on it the labels cannot
    measure; such intervals covered 0.10-0.54 in benchmarks/bench_label_anchored.py settings at 30
    labels). No model is estimable when the fit itself has no finite maximum or no finite
    covariance (separation, or with lam > 0 a rectifier from few labels, weighted 1/n, that
    outweighs the judge's term, weighted 1/N), or fewer than two models are: the centred logits all
    move with the one that diverges."""
    reasons = label_reasons(labels, won)
    estimable = np.array([not reason for reason in reasons])
    fitted = centred_over(reasons)
    separated = ", ".join(f"{m} ({r})" for m, r in zip(models, reasons) if r)
    finite = np.isfinite(fit.logit[fitted]).all() and np.isfinite(fit.covariance[np.ix_(fitted, fitted)]).all()
    if not fit.converged or not finite:
        causes = [f"labels that separate {separated} from the rest"] if separated else []
        if np.any(np.asarray(fit.lam)[fitted] > 0):
            causes.append("a correction from so few labels that it outweighs the judge's term")
        why = (f"not estimable: the fit has no finite maximum ({' or '.join(causes) or 'separation'}), so no logit, "
               "interval or rank: label more units")
        return np.zeros(len(models), bool), [why] * len(models)
    if estimable.sum() < 2:
        why = f"not estimable: fewer than two models are ({separated})"
        return np.zeros(len(models), bool), [why] * len(models)
    kept = (f"centred over the {int(estimable.sum())} estimable models (not estimable: {separated})"
            if not estimable.all() else "")
    return estimable, [kept if ok else f"not estimable: {reason}" for ok, reason in zip(estimable, reasons)]


def subset(fit: Fit, keep: np.ndarray) -> Fit:
    """The logits of the models in ``keep`` and their covariance (a fit centred over them)."""
    lam = fit.lam[keep] if np.ndim(fit.lam) else fit.lam
    return Fit(logit=fit.logit[keep], covariance=fit.covariance[np.ix_(keep, keep)], lam=lam, converged=fit.converged)


def label_anchored_table(units: pd.DataFrame, labels: pd.DataFrame, models: list[str], counts: dict,
                         alpha: float = 0.05, lam: float | None = None, cluster_by_question: bool = True,
                         active: bool = False) -> pd.DataFrame:
    """The label-anchored leaderboard of one judge (``units``: ``polyrag.arena.units.judge_units``,
    possibly of several languages; ``labels``: ``polyrag.arena.human_labels.labelled_units``, with
    ``inclusion_probability`` read when ``active``)."""
    unknown = sorted(set(labels["unit_id"]) - set(units["unit_id"]))
    if unknown:
        raise DataError(f"human labels for units the judge did not judge: {unknown[:3]} "
                        f"({len(unknown)} in all); was the sample drawn from another judge's games?")
    if len(labels) < 2:
        raise DataError(f"{len(labels)} human labels: the label-anchored fit needs at least 2")
    index = {model: i for i, model in enumerate(models)}
    outside = sorted((set(units["model_a"]) | set(units["model_b"])) - set(index))
    if outside:
        raise DataError(f"units of models that are not contestants: {outside}")
    units = units.reset_index(drop=True)
    pairs = np.column_stack([units["model_a"].map(index), units["model_b"].map(index)])
    joined = units[["unit_id"]].merge(labels, on="unit_id", how="left")
    label_value = joined["label_value"]
    labelled = label_value.notna().to_numpy()
    clusters = (units["lang"] + "\x1f" + units["query_id"].astype(str)).to_numpy() if cluster_by_question else None
    probability = joined["inclusion_probability"].fillna(1.0).to_numpy(float) if active else None
    model_labels, model_won = labels_per_model(pairs, labelled, label_value[labelled].to_numpy(float), len(models))
    fits = label_anchored_fits(pairs, units["judge_value"].to_numpy(float), labelled,
                               label_value[labelled].to_numpy(float), len(models), lam=lam, clusters=clusters,
                               probability=probability, over=centred_over(label_reasons(model_labels, model_won)))
    anchored = fits["label_anchored"]
    n_labels = int(labelled.sum())
    estimable, model_notes = estimability(anchored, model_labels, model_won, models)
    logit, low, high, n_eff = (np.full(len(models), np.nan) for _ in range(4))
    best, worst = pd.array([pd.NA] * len(models), dtype="Int64"), pd.array([pd.NA] * len(models), dtype="Int64")
    lam_used = np.full(len(models), np.nan)
    if estimable.any():  # the estimable models, centred over themselves
        reported = subset(anchored, estimable)
        logit[estimable] = reported.logit
        low[estimable], high[estimable] = normal_interval(reported, alpha)
        best[estimable], worst[estimable] = rank_sets(reported, alpha)
        n_eff[estimable] = effective_labels(reported, subset(fits["labels_only_at_anchored"], estimable), n_labels)
        lam_used[estimable] = reported.lam
    table = pd.DataFrame({"model": models, "logit": logit, "ci_low": low, "ci_high": high,
                          "rank": rank_by(logit).astype("Int64").array,
                          "rank_best": best, "rank_worst": worst, "estimable": estimable,
                          "model_labels": model_labels})
    for name in ("judge_only", "labels_only"):
        fit = fits[name]
        table[f"{name}_logit"] = fit.logit if fit.converged else np.nan
        table[f"{name}_ci_low"], table[f"{name}_ci_high"] = normal_interval(fit, alpha)
    table["judge_only_rank"] = rank_by(fits["judge_only"].logit).astype(int).to_numpy()
    table["n_labels"] = n_labels
    table["n_units"] = len(units)
    table["lambda"] = lam_used
    table["n_eff"] = n_eff
    table["labels_saved"] = n_eff - n_labels
    table["cant_judge"], table["missing"] = counts["cant_judge"], counts["missing"]
    table["units_without_valid_order"] = int((units["valid_orders"] == 0).sum())
    table["clustered_by_question"] = cluster_by_question
    table["design"] = "active" if active else "uniform"
    table["converged"] = anchored.converged
    notes = []
    if n_labels < MIN_HUMAN_LABELS:
        notes.append(f"fewer than {MIN_HUMAN_LABELS} human labels: such intervals covered 0.89-0.93 instead of 0.95 "
                     "at 30-50 labels (docs/human_labels.md)")
    if active:
        notes.append("active design: such intervals covered 0.92-0.94 instead of 0.95 from 100 labels "
                     "(docs/human_labels.md)")
    table["note"] = ["; ".join([note, *notes] if note else notes) for note in model_notes]
    return table.sort_values(["rank", "model"], ignore_index=True, na_position="last")
