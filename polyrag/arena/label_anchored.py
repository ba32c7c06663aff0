"""Bradley-Terry logits anchored on human labels: prediction-powered inference (PPI++) for the arena.

The fit itself (units, the rectified loss, power tuning, the clustered sandwich) is
``polyrag.arena.ppi_fit``; under an active design, ``polyrag.arena.active``. Here: the fits of one arena and
the table built on them.

Estimability (``label_anchored_table``, :func:`estimability`): a model that no human label compares,
or that is preferred in all or none of its labels, has no logit the labels can anchor (its
labels-only fit diverges; a finite label-anchored one rests on the judge alone, and such intervals
covered 0.10-0.54 at 30 labels). Its logit, interval and rank are left empty with the reason in
``note``, and the other models are reported centred over themselves (``restricted``). When the
fit has no finite maximum every model is left empty.

Ranks: model i is surely above j when ``logit_i - logit_j`` exceeds
``sqrt(chi2(K-1, level) var(logit_i - logit_j))``, the projection of the joint confidence
ellipsoid of the centred logits onto every pairwise difference (Scheffe), so ``rank_best``..
``rank_worst`` hold for all models at once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import chi2, norm

from polyrag.arena.active import active_fit
from polyrag.arena.ppi_fit import Fit, anchored_fit, centred, centring, design, labels_only_covariance
from polyrag.errors import DataError
from polyrag.stats.bootstrap import rank_by

#: Below this many human labels the intervals undercover: 0.91-0.93 at 50 labels in
#: benchmarks/bench_label_anchored.py (0.94-0.95 from 100), 0.89-0.92 for the estimable models at
#: 30 labels of 12 questions, so the table says so.
MIN_HUMAN_LABELS = 100


def label_anchored_fits(pairs: np.ndarray, yhat: np.ndarray, labelled: np.ndarray, y: np.ndarray, n_models: int,
                        lam: float | None = None, clusters: np.ndarray | None = None, anchor: int = 0,
                        probability: np.ndarray | None = None) -> dict[str, Fit]:
    """The label-anchored fit and the two it sits between, on one set of units.

    ``pairs``: units x 2 model indices; ``yhat``: the judge's value of every unit; ``labelled``:
    boolean mask of the units with a human label; ``y``: the human labels of those units, in the
    order of ``np.flatnonzero(labelled)``; ``clusters``: a label per unit (its question) or None.
    Returns ``{"label_anchored", "labels_only", "judge_only", "labels_only_at_anchored"}``: the last is
    the labels-only covariance at the label-anchored logits (same Hessian), for ``n_eff``.
    ``probability``: each unit's chance of being labelled under an active design (``active_fit``,
    whose labels-only fit is weighted by 1 / probability too); None for a uniform sample."""
    x = design(pairs, n_models, anchor)
    x_l, x_u = x[labelled], x[~labelled]
    c_l, c_u = (clusters[labelled], clusters[~labelled]) if clusters is not None else (None, None)
    fits = {}
    reported = centring(n_models, anchor)
    if probability is None:
        theta, cov, lam_used, ok = anchored_fit(x_l, y, yhat[labelled], x_u, yhat[~labelled], lam, c_l, c_u,
                                                reported=reported)
        theta0, cov0, _, ok0 = anchored_fit(x_l, y, yhat[labelled], x_u, yhat[~labelled], 0.0, c_l, c_u)
    else:
        y_all = np.full(len(yhat), np.nan)
        y_all[labelled] = y
        theta, cov, lam_used, ok = active_fit(x, y_all, yhat, labelled, probability, lam, clusters, reported)
        theta0, cov0, _, ok0 = active_fit(x, y_all, yhat, labelled, probability, 0.0, clusters)
    fits["label_anchored"] = centred(theta, cov, n_models, anchor, lam_used, ok)
    fits["labels_only"] = centred(theta0, cov0, n_models, anchor, 0.0, ok0)
    # The judge alone: every unit's judge value as its label (lam 0 with the judge as the labeller).
    empty = np.zeros((0, x.shape[1]))
    theta_j, cov_j, _, ok_j = anchored_fit(x, yhat, yhat, empty, np.zeros(0), 0.0, clusters,
                                           None if clusters is None else np.zeros(0))
    fits["judge_only"] = centred(theta_j, cov_j, n_models, anchor, 0.0, ok_j)
    cov_labels = labels_only_covariance(theta, x, x_l, y, c_l,
                                        same_bread_as_lam=lam_used if probability is None else 1.0)
    fits["labels_only_at_anchored"] = centred(theta, cov_labels, n_models, anchor, 0.0, ok)
    return fits


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
    bound = chi2.ppf(1 - alpha, k - 1)
    variance = np.diag(fit.covariance)
    difference_variance = variance[:, None] + variance[None, :] - 2 * fit.covariance
    difference = fit.logit[:, None] - fit.logit[None, :]
    above = difference**2 > bound * np.clip(difference_variance, 0, None)
    above &= difference > 0  # above[i, j]: i surely above j
    return 1 + above.sum(axis=0), k - above.sum(axis=1)


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


def estimability(fit: Fit, labels: np.ndarray, won: np.ndarray, models: list[str]) -> tuple[np.ndarray, list[str]]:
    """Per model, whether its label-anchored logit, interval and rank can be reported, and the
    ``note`` that says why not (or, for the others, which models their centring leaves out).

    A model is not estimable when no human label compares it, or when it is preferred in all or
    none of its labels (the labels separate it: its labels-only fit has no finite maximum, and what
    keeps the label-anchored one finite is the judge alone, whose bias on it the labels cannot
    measure; such intervals covered 0.10-0.54 in benchmarks/bench_label_anchored.py settings at 30
    labels). No model is estimable when the fit itself has no finite maximum or no finite
    covariance (separation, or with lam > 0 a rectifier from few labels, weighted 1/n, that
    outweighs the judge's term, weighted 1/N), or fewer than two models are: the centred logits all
    move with the one that diverges."""
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
    estimable = np.array([not reason for reason in reasons])
    separated = ", ".join(f"{m} ({r})" for m, r in zip(models, reasons) if r)
    finite = np.isfinite(fit.logit).all() and np.isfinite(fit.covariance).all()
    if not fit.converged or not finite:
        causes = [f"labels that separate {separated} from the rest"] if separated else []
        if fit.lam > 0:
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


def restricted(fit: Fit, keep: np.ndarray) -> Fit:
    """The fit of the models in ``keep`` alone, recentred to mean 0 over them (the covariance
    mapped likewise): the centred scale that leaves out models whose logits are not estimable."""
    k = int(keep.sum())
    a = np.eye(k) - 1.0 / k
    return Fit(logit=a @ fit.logit[keep], covariance=a @ fit.covariance[np.ix_(keep, keep)] @ a.T, lam=fit.lam,
               converged=fit.converged)


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
    fits = label_anchored_fits(pairs, units["judge_value"].to_numpy(float), labelled,
                               label_value[labelled].to_numpy(float), len(models), lam=lam, clusters=clusters,
                               probability=probability)
    anchored = fits["label_anchored"]
    n_labels = int(labelled.sum())
    model_labels, model_won = labels_per_model(pairs, labelled, label_value[labelled].to_numpy(float), len(models))
    estimable, model_notes = estimability(anchored, model_labels, model_won, models)
    logit, low, high, n_eff = (np.full(len(models), np.nan) for _ in range(4))
    best, worst = pd.array([pd.NA] * len(models), dtype="Int64"), pd.array([pd.NA] * len(models), dtype="Int64")
    if estimable.any():  # the estimable models, centred over themselves
        reported = restricted(anchored, estimable)
        logit[estimable] = reported.logit
        low[estimable], high[estimable] = normal_interval(reported, alpha)
        best[estimable], worst[estimable] = rank_sets(reported, alpha)
        n_eff[estimable] = effective_labels(reported, restricted(fits["labels_only_at_anchored"], estimable), n_labels)
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
    table["lambda"] = anchored.lam
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
