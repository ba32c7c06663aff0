"""The PPI++ fit of Bradley-Terry logits to human labels and a judge's values (prediction-powered
inference for the arena; the ranking built on it is ``polyrag.arena.label_anchored``).

A unit is one question and one unordered model pair ``(model_a, model_b)``. Every unit has the
judge's value ``yhat`` (model_a's mean score over the judge's valid orders); a uniform random
sample of units also has a human label ``y`` (a person's verdict: 1, 0.5 for a tie, 0; PPI++'s
"gold-standard label"). The estimand is the Bradley-Terry fit to the human labels of every unit:
the logits ``theta`` that minimise the mean logistic loss
``l(theta; x, y) = log(1 + exp(x.theta)) - y x.theta`` with ``x = e_a - e_b``; soft labels (ties)
are allowed, which is why this is not ``ppi_py``'s ``ppi_logistic_ci`` (its scikit-learn start
refuses a continuous label).

The rectified loss of Angelopoulos, Duchi and Zrnic (PPI++, arXiv 2311.01453), as applied to BT by
Boyeau et al. ("AutoEval Done Right", arXiv 2403.07008)::

    L(theta) = lam / N  sum_unlabelled l(theta; x, yhat)
             + 1 / n    sum_labelled  [l(theta; x, y) - lam l(theta; x, yhat)]

``lam = 0`` is the labels-only fit, ``lam = 1`` plain PPI; power tuning picks ``lam`` in [0, 1]
that minimises the total variance of the logits, as ``ppi_py`` does (estimated at the ``lam = 1``
fit, refitted, re-estimated once at that fit). One model is anchored at 0 (the others' columns
form ``x``), and the logits are then centred (mean 0, polyrag's BT scale) with their covariance.

Covariance: the sandwich ``H^-1 (V_labelled / n + V_unlabelled / N) H^-1`` with ``H`` the
Hessian over all units, as in ``ppi_py``; with ``clusters`` (the question of each unit) the
meat sums each question's estimating-function contributions instead, so that the pairs of one
question, which share its passages and answers, are not counted as independent evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit


#: |logit| beyond which the fit is taken to diverge (the labels separate a model from the rest:
#: no finite maximum likelihood), as in a logistic regression with complete separation.
DIVERGED = 25.0


@dataclass
class Fit:
    """Centred logits, their covariance, and how they were obtained."""

    logit: np.ndarray
    covariance: np.ndarray
    lam: float | np.ndarray  # one for every logit, or each logit's (the shared one, or 0 where it fell back)
    converged: bool  # False where the labels have no finite maximum (the interval is unbounded)


def design(pairs: np.ndarray, n_models: int, anchor: int = 0) -> np.ndarray:
    """``x = e_a - e_b`` per unit (``pairs``: units x 2 model indices), the anchor's column dropped."""
    x = np.zeros((len(pairs), n_models))
    rows = np.arange(len(pairs))
    x[rows, pairs[:, 0]] += 1.0
    x[rows, pairs[:, 1]] -= 1.0
    return np.delete(x, anchor, axis=1)


def centring(n_models: int, anchor: int = 0, over: np.ndarray | None = None) -> np.ndarray:
    """The map from anchored parameters (the anchor at 0) to logits with mean 0 (models x params),
    or mean 0 over the models in the boolean mask ``over``."""
    full = np.delete(np.eye(n_models), anchor, axis=1)
    return full - full[slice(None) if over is None else over].mean(axis=0, keepdims=True)


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


@dataclass
class Pieces:
    """One fit's parameters and the per-unit terms of its estimating function ``psi = labels + lam
    judge``, in independent parts (labelled and unlabelled units, each averaged over its own size as
    in :func:`meat`), so that the covariance of any linear map of several such fits follows."""

    theta: np.ndarray
    inverse_hessian: np.ndarray
    labels: list[np.ndarray]
    judge: list[np.ndarray]
    groups: list[np.ndarray] | None  # the cluster of every row of each part, or None
    lam: float
    converged: bool

    def influence(self, row: np.ndarray, lam: float | None = None) -> list[np.ndarray]:
        """Per part, each unit's contribution to ``row @ theta`` (lam: the fit's own by default;
        0 gives the labels-only contribution at the same point, with the same Hessian)."""
        lam = self.lam if lam is None else lam
        v = row @ self.inverse_hessian
        return [(a + lam * b) @ v for a, b in zip(self.labels, self.judge)]

    def covariance(self, reported: np.ndarray | None = None) -> np.ndarray:
        v = np.eye(len(self.theta)) if reported is None else reported
        return joint_covariance([self.influence(row) for row in v], self.groups)


def joint_covariance(influences: list[list[np.ndarray]], groups: list[np.ndarray] | None) -> np.ndarray:
    """The covariance of several estimates, each given by its per-part unit contributions
    (:meth:`Pieces.influence`) on the same units: :func:`meat` of the stacked columns. Clustered,
    each estimate's small-sample factor C / (C - 1) counts the clusters of the parts it draws on
    (a fit with lam 0 draws nothing from the unlabelled units), as its own fit's covariance does;
    scaling the columns so keeps the matrix positive semi-definite."""
    parts = [np.column_stack(columns) for columns in zip(*influences)]
    if groups is None:
        return meat([(rows, 1.0) for rows in parts], None)
    names, index = np.unique(np.concatenate(groups), return_inverse=True)
    sums = np.zeros((len(names), parts[0].shape[1]))
    seen = np.zeros((len(names), parts[0].shape[1]), bool)
    offset = 0
    for rows in parts:
        if len(rows):
            where = index[offset:offset + len(rows)]
            np.add.at(sums, where, (rows - rows.mean(axis=0)) / len(rows))
            drawn = np.any(rows != 0, axis=0)  # the estimates this part enters
            seen[np.ix_(np.unique(where), drawn)] = True
        offset += len(rows)
    c = seen.sum(axis=0)
    scaled = sums * np.sqrt(c / np.maximum(c - 1, 1))
    return scaled.T @ scaled


def anchored_pieces(x_labelled, y, yhat_labelled, x_unlabelled, yhat_unlabelled, lam: float | None,
                    clusters_labelled=None, clusters_unlabelled=None, reported: np.ndarray | None = None) -> Pieces:
    """The fit of :func:`anchored_fit` with the terms of its covariance."""
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
    groups = None if clusters_labelled is None else [clusters_labelled, clusters_unlabelled]
    return Pieces(theta, inverse_hessian, labels=[g, np.zeros_like(g_hat_unlabelled)],
                  judge=[-g_hat, g_hat_unlabelled], groups=groups, lam=lam_used, converged=converged)


def anchored_fit(x_labelled, y, yhat_labelled, x_unlabelled, yhat_unlabelled, lam: float | None,
                 clusters_labelled=None, clusters_unlabelled=None,
                 reported: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """Anchored parameters, their covariance, ``lam`` and convergence (``lam=None``: power tuning
    for the total variance of ``reported @ theta``, see :func:`power_tuning`).
    ``ppi_py``'s conventions: the Hessian averages over all units (labelled only when lam is 0),
    the meat uses covariances with ``ddof=1``."""
    pieces = anchored_pieces(x_labelled, y, yhat_labelled, x_unlabelled, yhat_unlabelled, lam, clusters_labelled,
                             clusters_unlabelled, reported)
    return pieces.theta, pieces.covariance(), pieces.lam, pieces.converged


def centred(theta: np.ndarray, covariance: np.ndarray, n_models: int, anchor: int, lam: float,
            converged: bool) -> Fit:
    a = centring(n_models, anchor)
    return Fit(logit=a @ theta, covariance=a @ covariance @ a.T, lam=lam, converged=converged)


def labels_only_covariance(theta, x, x_labelled, y, clusters_labelled, same_bread_as_lam: float) -> np.ndarray:
    """The covariance a labels-only fit of the labelled units would have at ``theta``, with the same
    Hessian as the fit it is compared with (all units, or the labelled ones when that fit's lam is
    0, as in :func:`anchored_fit`), so that at lam 0 the two agree and n_eff is n."""
    inverse_hessian = np.linalg.pinv(hessian(theta, x if same_bread_as_lam else x_labelled))
    g = gradients(theta, x_labelled, y)
    groups = None if clusters_labelled is None else [clusters_labelled]
    return inverse_hessian @ meat([(g, 1.0)], groups) @ inverse_hessian
