"""Bradley-Terry logits anchored on gold labels: prediction-powered inference (PPI++) for the arena.

A unit is one question and one unordered model pair ``(model_a, model_b)``. Every unit has the
judge's value ``yhat`` (model_a's mean score over the judge's valid orders); a uniform random
sample of units also has a gold label ``y`` (a person's verdict: 1, 0.5 for a tie, 0). The
estimand is the Bradley-Terry fit to the gold labels of every unit: the logits ``theta`` that
minimise the mean logistic loss ``l(theta; x, y) = log(1 + exp(x.theta)) - y x.theta`` with
``x = e_a - e_b``; soft labels (ties) are allowed, which is why this is not ``ppi_py``'s
``ppi_logistic_ci`` (its scikit-learn start refuses a continuous label).

The rectified loss of Angelopoulos, Duchi and Zrnic (PPI++, arXiv 2311.01453), as applied to BT by
Boyeau et al. ("AutoEval Done Right", arXiv 2403.07008)::

    L(theta) = lam / N  sum_unlabelled l(theta; x, yhat)
             + 1 / n    sum_labelled  [l(theta; x, y) - lam l(theta; x, yhat)]

``lam = 0`` is the gold-only fit, ``lam = 1`` plain PPI; power tuning picks ``lam`` in [0, 1]
that minimises the total variance of the logits, as ``ppi_py`` does (estimated at the ``lam = 1``
fit, refitted, re-estimated once at that fit). One model is anchored at 0 (the others' columns
form ``x``), and the logits are then centred (mean 0, polyrag's BT scale) with their covariance.

Covariance: the sandwich ``H^-1 (V_labelled / n + V_unlabelled / N) H^-1`` with ``H`` the
Hessian over all units, as in ``ppi_py``; with ``clusters`` (the question of each unit) the
meat sums each question's estimating-function contributions instead, so that the pairs of one
question, which share its passages and answers, are not counted as independent evidence.

Estimability (``gold_anchored_table``, :func:`estimability`): a model that no gold label compares,
or that is preferred in all or none of its labels, has no logit the labels can anchor (its
gold-only fit diverges; a finite gold-anchored one rests on the judge alone, and such intervals
covered 0.10-0.54 at 30 labels). Its logit, interval and rank are left empty with the reason in
``note``, and the other models are reported centred over themselves (``restricted``). When the
fit has no finite maximum every model is left empty.

Ranks: model i is surely above j when ``logit_i - logit_j`` exceeds
``sqrt(chi2(K-1, level) var(logit_i - logit_j))``, the projection of the joint confidence
ellipsoid of the centred logits onto every pairwise difference (Scheffe), so ``rank_best``..
``rank_worst`` hold for all models at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import chi2, norm

from polyrag.errors import DataError

#: Below this many gold labels the intervals undercover: 0.91-0.93 at 50 labels in
#: benchmarks/bench_gold_anchored.py (0.94-0.95 from 100), 0.89-0.92 for the estimable models at
#: 30 labels of 12 questions, so the table says so.
MIN_GOLD_LABELS = 100

#: |logit| beyond which the fit is taken to diverge (the labels separate a model from the rest:
#: no finite maximum likelihood), as in a logistic regression with complete separation.
DIVERGED = 25.0


@dataclass
class Fit:
    """Centred logits, their covariance, and how they were obtained."""

    logit: np.ndarray
    covariance: np.ndarray
    lam: float
    converged: bool  # False where the labels have no finite maximum (the interval is unbounded)


def design(pairs: np.ndarray, n_models: int, anchor: int = 0) -> np.ndarray:
    """``x = e_a - e_b`` per unit (``pairs``: units x 2 model indices), the anchor's column dropped."""
    x = np.zeros((len(pairs), n_models))
    rows = np.arange(len(pairs))
    x[rows, pairs[:, 0]] += 1.0
    x[rows, pairs[:, 1]] -= 1.0
    return np.delete(x, anchor, axis=1)


def centring(n_models: int, anchor: int = 0) -> np.ndarray:
    """The map from anchored parameters (the anchor at 0) to logits with mean 0 (models x params)."""
    full = np.delete(np.eye(n_models), anchor, axis=1)
    return full - full.mean(axis=0, keepdims=True)


def gradients(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-unit gradients of the logistic loss, ``(sigmoid(x.theta) - y) x``."""
    return (expit(x @ theta) - y)[:, None] * x


def hessian(theta: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mean Hessian of the logistic loss over the rows of ``x`` (the labels do not enter it)."""
    p = expit(x @ theta)
    return (x * (p * (1 - p))[:, None]).T @ x / len(x)


def newton_minimum(loss, derivatives, dimension: int, tol: float = 1e-12,
                   max_iter: int = 200) -> tuple[np.ndarray, bool]:
    """Minimise a convex ``loss`` by Newton's method with step halving (``derivatives(theta)``:
    gradient and Hessian); ``converged`` is False when the minimum is at infinity."""
    theta = np.zeros(dimension)
    current = loss(theta)
    for _ in range(max_iter):
        gradient, curvature = derivatives(theta)
        step = np.linalg.lstsq(curvature, -gradient, rcond=None)[0]
        scale = 1.0
        while scale > 1e-10 and loss(theta + scale * step) > current + 1e-15:
            scale /= 2
        theta = theta + scale * step
        current = loss(theta)
        if np.abs(theta).max() > DIVERGED:
            return theta, False
        if np.abs(scale * step).max() < tol:
            return theta, True
    return theta, False


def rectified_minimum(x_labelled, y, yhat_labelled, x_unlabelled, yhat_unlabelled,
                      lam: float) -> tuple[np.ndarray, bool]:
    """The minimiser of the rectified loss (convex for ``lam`` in [0, 1])."""
    n, big_n = len(y), len(yhat_unlabelled)

    def loss(theta):
        def mean_loss(x, labels, size):
            z = x @ theta
            return (np.logaddexp(0.0, z) - labels * z).sum() / size if size else 0.0
        return (lam * mean_loss(x_unlabelled, yhat_unlabelled, big_n) + mean_loss(x_labelled, y, n)
                - lam * mean_loss(x_labelled, yhat_labelled, n))

    def derivatives(theta):
        gradient = gradients(theta, x_labelled, y).sum(axis=0) / max(n, 1) \
            - lam * gradients(theta, x_labelled, yhat_labelled).sum(axis=0) / max(n, 1)
        curvature = (1 - lam) * hessian(theta, x_labelled) if n else 0.0
        if lam and big_n:
            gradient = gradient + lam * gradients(theta, x_unlabelled, yhat_unlabelled).mean(axis=0)
            curvature = curvature + lam * hessian(theta, x_unlabelled)
        return gradient, curvature

    return newton_minimum(loss, derivatives, x_labelled.shape[1] if n else x_unlabelled.shape[1])


def meat(parts: list[tuple[np.ndarray, float]], clusters: list[np.ndarray] | None) -> np.ndarray:
    """Variance of ``sum_k weight_k * mean(rows_k)`` for independent row sets (``ppi_py``'s
    ``cov(rows) / size``), or, with ``clusters`` (one label per row of each part), of the sum of
    every cluster's centred contributions, with the small-sample factor C / (C - 1)."""
    d = parts[0][0].shape[1]
    if clusters is None:
        total = np.zeros((d, d))
        for rows, weight in parts:
            if len(rows) > 1:
                total += weight**2 * np.cov(rows.T).reshape(d, d) / len(rows)
        return total
    labels = np.concatenate(clusters)
    names, index = np.unique(labels, return_inverse=True)
    sums = np.zeros((len(names), d))
    offset = 0
    for rows, weight in parts:
        if len(rows):
            np.add.at(sums, index[offset:offset + len(rows)], weight * (rows - rows.mean(axis=0)) / len(rows))
        offset += len(rows)
    c = len(names)
    return sums.T @ sums * c / max(c - 1, 1)


def power_tuning(g, g_hat, g_hat_unlabelled, inverse_hessian, reported: np.ndarray | None = None) -> float:
    """``ppi_py``'s ``_calc_lam_glm`` (overall mode, clipped to [0, 1]): the ``lam`` minimising the
    trace of the asymptotic covariance of ``reported @ theta`` (default: theta itself, as
    ``ppi_py``; the centred logits do not depend on which model is anchored, so neither does
    a ``lam`` tuned for them)."""
    n, big_n = len(g), len(g_hat_unlabelled)
    g_centred, g_hat_centred = g - g.mean(axis=0), g_hat - g_hat.mean(axis=0)
    covariance = (g_centred.T @ g_hat_centred + g_hat_centred.T @ g_centred) / n
    variance_hat = np.atleast_2d(np.cov(np.concatenate([g_hat, g_hat_unlabelled]).T))
    v = inverse_hessian if reported is None else reported @ inverse_hessian
    numerator = np.trace(v @ covariance @ v.T)
    denominator = 2 * (1 + n / big_n) * np.trace(v @ variance_hat @ v.T)
    return float(np.clip(numerator / denominator, 0.0, 1.0)) if denominator > 0 else 0.0


def anchored_fit(x_labelled, y, yhat_labelled, x_unlabelled, yhat_unlabelled, lam: float | None,
                 clusters_labelled=None, clusters_unlabelled=None,
                 reported: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """Anchored parameters, their covariance, ``lam`` and convergence (``lam=None``: power tuning
    for the total variance of ``reported @ theta``, see :func:`power_tuning`).
    ``ppi_py``'s conventions: the Hessian averages over all units (labelled only when lam is 0),
    the meat uses covariances with ``ddof=1``."""
    clustered = clusters_labelled is not None
    tuned = lam is None
    lam_used = 1.0 if tuned else float(lam)
    passes = 3 if tuned else 1
    for step in range(passes):
        theta, converged = rectified_minimum(x_labelled, y, yhat_labelled, x_unlabelled, yhat_unlabelled, lam_used)
        g = gradients(theta, x_labelled, y)
        g_hat = gradients(theta, x_labelled, yhat_labelled)
        g_hat_unlabelled = gradients(theta, x_unlabelled, yhat_unlabelled)
        tuning = step < passes - 1
        everything = np.concatenate([x_unlabelled, x_labelled]) if lam_used or tuning else x_labelled
        inverse_hessian = np.linalg.pinv(hessian(theta, everything))
        if tuning:
            lam_used = power_tuning(g, g_hat, g_hat_unlabelled, inverse_hessian, reported)
    parts = [(g - lam_used * g_hat, 1.0)]
    groups = [clusters_labelled] if clustered else None
    if lam_used:
        parts.append((g_hat_unlabelled, lam_used))
        if clustered:
            groups.append(clusters_unlabelled)
    covariance = inverse_hessian @ meat(parts, groups) @ inverse_hessian
    return theta, covariance, lam_used, converged


def centred(theta: np.ndarray, covariance: np.ndarray, n_models: int, anchor: int, lam: float,
            converged: bool) -> Fit:
    a = centring(n_models, anchor)
    return Fit(logit=a @ theta, covariance=a @ covariance @ a.T, lam=lam, converged=converged)


def gold_anchored(pairs: np.ndarray, yhat: np.ndarray, labelled: np.ndarray, y: np.ndarray, n_models: int,
                  lam: float | None = None, clusters: np.ndarray | None = None, anchor: int = 0,
                  probability: np.ndarray | None = None) -> dict[str, Fit]:
    """The gold-anchored fit and the two it sits between, on one set of units.

    ``pairs``: units x 2 model indices; ``yhat``: the judge's value of every unit; ``labelled``:
    boolean mask of the units with a gold label; ``y``: the gold labels of those units, in the
    order of ``np.flatnonzero(labelled)``; ``clusters``: a label per unit (its question) or None.
    Returns ``{"gold_anchored", "gold_only", "judge_only", "gold_only_at_anchored"}``: the last is
    the gold-only covariance at the gold-anchored logits (same Hessian), for ``n_eff``.
    ``probability``: each unit's chance of being labelled under an active design (``active_fit``,
    whose gold-only fit is weighted by 1 / probability too); None for a uniform sample."""
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
    fits["gold_anchored"] = centred(theta, cov, n_models, anchor, lam_used, ok)
    fits["gold_only"] = centred(theta0, cov0, n_models, anchor, 0.0, ok0)
    # The judge alone: every unit's judge value as its label (lam 0 with the judge as "gold").
    empty = np.zeros((0, x.shape[1]))
    theta_j, cov_j, _, ok_j = anchored_fit(x, yhat, yhat, empty, np.zeros(0), 0.0, clusters,
                                           None if clusters is None else np.zeros(0))
    fits["judge_only"] = centred(theta_j, cov_j, n_models, anchor, 0.0, ok_j)
    cov_gold = gold_only_covariance(theta, x, x_l, y, c_l, same_bread_as_lam=lam_used if probability is None else 1.0)
    fits["gold_only_at_anchored"] = centred(theta, cov_gold, n_models, anchor, 0.0, ok)
    return fits


def gold_only_covariance(theta, x, x_labelled, y, clusters_labelled, same_bread_as_lam: float) -> np.ndarray:
    """The covariance a gold-only fit of the labelled units would have at ``theta``, with the same
    Hessian as the fit it is compared with (all units, or the labelled ones when that fit's lam is
    0, as in :func:`anchored_fit`), so that at lam 0 the two agree and n_eff is n."""
    inverse_hessian = np.linalg.pinv(hessian(theta, x if same_bread_as_lam else x_labelled))
    g = gradients(theta, x_labelled, y)
    groups = None if clusters_labelled is None else [clusters_labelled]
    return inverse_hessian @ meat([(g, 1.0)], groups) @ inverse_hessian


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


def effective_labels(fit: Fit, gold_only_at_same_point: Fit, n_labelled: int) -> np.ndarray:
    """Per model, the number of gold labels a gold-only fit would need for an interval as narrow:
    ``n * var_gold_only / var_gold_anchored`` (both at the gold-anchored logits, same Hessian)."""
    anchored = np.diag(fit.covariance)
    gold = np.diag(gold_only_at_same_point.covariance)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(anchored > 0, n_labelled * gold / anchored, np.nan)


def labels_per_model(pairs: np.ndarray, labelled: np.ndarray, y: np.ndarray, n_models: int) -> tuple[np.ndarray, ...]:
    """Per model, its gold-labelled units and how many of them it won (ties half): ``(labels,
    won)``. ``y`` is in the order of ``np.flatnonzero(labelled)``, each the gold value for the
    unit's first model."""
    first, second = pairs[labelled, 0], pairs[labelled, 1]
    count = np.bincount(first, minlength=n_models) + np.bincount(second, minlength=n_models)
    won = np.bincount(first, weights=y, minlength=n_models) + np.bincount(second, weights=1 - y, minlength=n_models)
    return count.astype(int), won


def estimability(fit: Fit, labels: np.ndarray, won: np.ndarray, models: list[str]) -> tuple[np.ndarray, list[str]]:
    """Per model, whether its gold-anchored logit, interval and rank can be reported, and the
    ``note`` that says why not (or, for the others, which models their centring leaves out).

    A model is not estimable when no gold label compares it, or when it is preferred in all or
    none of its labels (the labels separate it: its gold-only fit has no finite maximum, and what
    keeps the gold-anchored one finite is the judge alone, whose bias on it the labels cannot
    measure; such intervals covered 0.10-0.54 in benchmarks/bench_gold_anchored.py settings at 30
    labels). No model is estimable when the fit itself has no finite maximum or no finite
    covariance (separation, or with lam > 0 a rectifier from few labels, weighted 1/n, that
    outweighs the judge's term, weighted 1/N), or fewer than two models are: the centred logits all
    move with the one that diverges."""
    reasons = []
    for n, w in zip(labels, won):
        if n == 0:
            reasons.append("no gold label compares this model")
        elif w == n:
            reasons.append(f"preferred in all {n} of its gold labels")
        elif w == 0:
            reasons.append(f"preferred in none of its {n} gold labels")
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


def gold_anchored_table(units: pd.DataFrame, labels: pd.DataFrame, models: list[str], counts: dict,
                        alpha: float = 0.05, lam: float | None = None, cluster_by_question: bool = True,
                        active: bool = False) -> pd.DataFrame:
    """The gold-anchored leaderboard of one judge (``units``: ``polyrag.arena.units.judge_units``,
    possibly of several languages; ``labels``: ``polyrag.arena.gold_labels.gold_labels``, with
    ``inclusion_probability`` read when ``active``)."""
    unknown = sorted(set(labels["unit_id"]) - set(units["unit_id"]))
    if unknown:
        raise DataError(f"gold labels for units the judge did not judge: {unknown[:3]} "
                        f"({len(unknown)} in all); was the sample drawn from another judge's games?")
    if len(labels) < 2:
        raise DataError(f"{len(labels)} gold labels: the gold-anchored fit needs at least 2")
    index = {model: i for i, model in enumerate(models)}
    outside = sorted((set(units["model_a"]) | set(units["model_b"])) - set(index))
    if outside:
        raise DataError(f"units of models that are not contestants: {outside}")
    units = units.reset_index(drop=True)
    pairs = np.column_stack([units["model_a"].map(index), units["model_b"].map(index)])
    joined = units[["unit_id"]].merge(labels, on="unit_id", how="left")
    gold = joined["gold"]
    labelled = gold.notna().to_numpy()
    clusters = (units["lang"] + "\x1f" + units["query_id"].astype(str)).to_numpy() if cluster_by_question else None
    probability = joined["inclusion_probability"].fillna(1.0).to_numpy(float) if active else None
    fits = gold_anchored(pairs, units["judge_value"].to_numpy(float), labelled, gold[labelled].to_numpy(float),
                         len(models), lam=lam, clusters=clusters, probability=probability)
    anchored = fits["gold_anchored"]
    n_gold = int(labelled.sum())
    model_labels, model_won = labels_per_model(pairs, labelled, gold[labelled].to_numpy(float), len(models))
    estimable, model_notes = estimability(anchored, model_labels, model_won, models)
    logit, low, high, n_eff = (np.full(len(models), np.nan) for _ in range(4))
    best, worst = pd.array([pd.NA] * len(models), dtype="Int64"), pd.array([pd.NA] * len(models), dtype="Int64")
    if estimable.any():  # the estimable models, centred over themselves
        reported = restricted(anchored, estimable)
        logit[estimable] = reported.logit
        low[estimable], high[estimable] = normal_interval(reported, alpha)
        best[estimable], worst[estimable] = rank_sets(reported, alpha)
        n_eff[estimable] = effective_labels(reported, restricted(fits["gold_only_at_anchored"], estimable), n_gold)
    table = pd.DataFrame({"model": models, "logit": logit, "ci_low": low, "ci_high": high,
                          "rank": pd.Series(-logit).rank(method="min").astype("Int64").array,
                          "rank_best": best, "rank_worst": worst, "estimable": estimable,
                          "model_gold": model_labels})
    for name in ("judge_only", "gold_only"):
        fit = fits[name]
        table[f"{name}_logit"] = fit.logit if fit.converged else np.nan
        table[f"{name}_ci_low"], table[f"{name}_ci_high"] = normal_interval(fit, alpha)
    table["judge_only_rank"] = pd.Series(-fits["judge_only"].logit).rank(method="min").astype(int).to_numpy()
    table["n_gold"] = n_gold
    table["n_units"] = len(units)
    table["lambda"] = anchored.lam
    table["n_eff"] = n_eff
    table["labels_saved"] = n_eff - n_gold
    table["cant_judge"], table["missing"] = counts["cant_judge"], counts["missing"]
    table["units_without_valid_order"] = int((units["valid_orders"] == 0).sum())
    table["clustered_by_question"] = cluster_by_question
    table["design"] = "active" if active else "uniform"
    table["converged"] = anchored.converged
    notes = []
    if n_gold < MIN_GOLD_LABELS:
        notes.append(f"fewer than {MIN_GOLD_LABELS} gold labels: such intervals covered 0.89-0.93 instead of 0.95 "
                     "at 30-50 labels (docs/gold_anchored.md)")
    if active:
        notes.append("active design: such intervals covered 0.92-0.94 instead of 0.95 from 100 labels "
                     "(docs/gold_anchored.md)")
    table["note"] = ["; ".join([note, *notes] if note else notes) for note in model_notes]
    return table.sort_values(["rank", "model"], ignore_index=True, na_position="last")


def judge_gold_agreement(units: pd.DataFrame, labels: pd.DataFrame, games: pd.DataFrame,
                         answer_length: dict[tuple[str, str], int]) -> pd.DataFrame:
    """How the judge agrees with gold on the labelled units, beside what chance would give.

    ``agreement``: the judge's decision (its unit value above, below or at 0.5) equals the gold
    one; ``chance_agreement``: what a judge with the same marginal shares but no skill would get;
    ``kappa``: Cohen's; ``judge_{x}_gold_{y}``: the confusion matrix (counts of units). Over the
    judge's single-order games that contradict a decisive gold label:
    ``errors_first_shown`` (share where the judge picked the answer shown first; 0.5 without
    position bias) and ``errors_longer_answer`` (share where it picked the longer answer; 0.5
    without length bias). ``answer_length``: (model, query_id) -> characters."""
    merged = labels.merge(units[["unit_id", "judge_value"]], on="unit_id")

    def decision(value):
        return np.sign(np.asarray(value, float) - 0.5)

    judge, gold = decision(merged["judge_value"]), decision(merged["gold"])
    agreement = float((judge == gold).mean())
    chance = float(sum((judge == k).mean() * (gold == k).mean() for k in (-1, 0, 1)))
    rows = [("agreement", agreement, len(merged)), ("chance_agreement", chance, len(merged)),
            ("kappa", (agreement - chance) / (1 - chance) if chance < 1 else np.nan, len(merged))]
    names = {1: "model_a", 0: "tie", -1: "model_b"}  # the confusion matrix, as counts
    rows += [(f"judge_{names[j]}_gold_{names[k]}", float(((judge == j) & (gold == k)).sum()), len(merged))
             for j in (1, 0, -1) for k in (1, 0, -1)]
    decisive = merged[merged["gold"] != 0.5]
    loser = dict(zip(zip(decisive["query_id"].astype(str), decisive["model_a"], decisive["model_b"]),
                     decisive["model_b"].where(decisive["gold"] == 1.0, decisive["model_a"])))
    played = games[games["verdict"].isin(["model_a", "model_b"])].assign(query_id=games["query_id"].astype(str))
    picked = played["model_a"].where(played["verdict"] == "model_a", played["model_b"])
    other = played["model_b"].where(played["verdict"] == "model_a", played["model_a"])
    pair = [tuple(sorted(p)) for p in zip(played["model_a"], played["model_b"])]
    wrong = [loser.get((q, a, b)) == pick for q, (a, b), pick in zip(played["query_id"], pair, picked)]
    wrong = np.array(wrong, dtype=bool)
    first = (picked == played["shown_first"]).to_numpy()[wrong]
    longer = np.array([answer_length.get((m, q), 0) > answer_length.get((o, q), 0)
                       for m, o, q in zip(picked[wrong], other[wrong], played["query_id"][wrong])], dtype=bool)
    rows += [("errors_first_shown", float(first.mean()) if len(first) else np.nan, int(wrong.sum())),
             ("errors_longer_answer", float(longer.mean()) if len(longer) else np.nan, int(wrong.sum()))]
    return pd.DataFrame(rows, columns=["metric", "value", "n"])


# --- active labelling (Zrnic and Candes, "Active Statistical Inference", arXiv 2403.03208) ------

def active_inclusion_probabilities(judge_value: np.ndarray, expected_labels: int, floor: float) -> np.ndarray:
    """Each unit's probability of being labelled: a share ``floor`` of the budget spread
    uniformly, the rest in proportion to the judge's uncertainty ``1 - |2 yhat - 1|`` (1 where its
    orders disagree or it says tie, 0 where both orders agree), capped at 1."""
    uncertainty = 1 - np.abs(2 * np.asarray(judge_value, float) - 1)
    size = len(uncertainty)
    uniform = np.full(size, 1 / size)
    guided = uncertainty / uncertainty.sum() if uncertainty.sum() > 0 else uniform
    return np.minimum(expected_labels * ((1 - floor) * guided + floor * uniform), 1.0)


def active_fit(x: np.ndarray, y: np.ndarray, yhat: np.ndarray, labelled: np.ndarray, probability: np.ndarray,
               lam: float | None, clusters: np.ndarray | None = None,
               reported: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """The active-inference M-estimator: every unit's loss on the judge value, plus on the units
    labelled with probability ``probability`` (independent draws) the gold-minus-judge correction
    weighted by 1 / probability, so the loss is unbiased for the gold one whatever the design:
    ``1/N sum_u [lam l(yhat_u) + xi_u / pi_u (l(y_u) - lam l(yhat_u))]``. ``y`` is read only where
    ``labelled``. ``lam=None`` tunes it (trace of the covariance of ``reported @ theta``).
    Returns anchored parameters, covariance, lam and convergence as :func:`anchored_fit`."""
    weight = np.where(labelled, 1 / probability, 0.0)
    y = np.where(labelled, y, yhat)
    lam_used = 1.0 if lam is None else float(lam)
    for step in range(3 if lam is None else 1):
        def loss(theta):
            z = x @ theta
            base = np.logaddexp(0.0, z)
            return np.mean(lam_used * (base - yhat * z) + weight * ((base - y * z) - lam_used * (base - yhat * z)))

        def derivatives(theta):
            p = expit(x @ theta)
            gradient = ((lam_used * (p - yhat) + weight * ((p - y) - lam_used * (p - yhat)))[:, None] * x).mean(axis=0)
            curvature = (x * ((lam_used + weight * (1 - lam_used)) * p * (1 - p))[:, None]).T @ x / len(x)
            return gradient, curvature

        theta, converged = newton_minimum(loss, derivatives, x.shape[1])
        inverse_hessian = np.linalg.pinv(hessian(theta, x))
        g, g_hat = gradients(theta, x, y), gradients(theta, x, yhat)
        a, b = weight[:, None] * g, (1 - weight)[:, None] * g_hat  # psi = a + lam b
        if lam is None and step < 2:
            v = inverse_hessian if reported is None else reported @ inverse_hessian
            a_centred, b_centred = a - a.mean(axis=0), b - b.mean(axis=0)
            cross = (a_centred.T @ b_centred + b_centred.T @ a_centred) / 2
            denominator = np.trace(v @ (b_centred.T @ b_centred) @ v.T)
            lam_used = float(np.clip(-np.trace(v @ cross @ v.T) / denominator, 0, 1)) if denominator > 0 else 0.0
    psi = a + lam_used * b
    covariance = inverse_hessian @ meat([(psi, 1.0)], None if clusters is None else [clusters]) @ inverse_hessian
    return theta, covariance, lam_used, converged


def agreement_over_languages(units: pd.DataFrame, labels: pd.DataFrame, games: dict[str, pd.DataFrame],
                             answers: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """:func:`judge_gold_agreement` over one language or several pooled (``games``: language ->
    its games; ``answers``: (language, model) -> its answers file). Question ids are unique within
    a language only, so each is read with its language."""
    def in_language(frame: pd.DataFrame, lang) -> pd.DataFrame:
        return frame.assign(query_id=lang + "/" + frame["query_id"].astype(str))

    length = {}
    for (lang, model), frame in answers.items():
        keyed = in_language(frame, lang)
        length.update(zip(zip([model] * len(keyed), keyed["query_id"]), keyed["answer"].fillna("").str.len()))
    pooled_games = pd.concat([in_language(frame, lang) for lang, frame in games.items()], ignore_index=True)
    return judge_gold_agreement(in_language(units, units["lang"]), in_language(labels, labels["lang"]),
                                pooled_games, length)
