"""Active labelling for the label-anchored arena (Zrnic and Candes, "Active Statistical Inference",
arXiv 2403.03208): which units to label with what probability, and the inverse-probability
weighted PPI++ fit of ``polyrag.arena.ppi_fit`` on the units so drawn."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from polyrag.arena.ppi_fit import Pieces, gradients, hessian, newton_minimum


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
    """Anchored parameters, covariance, lam and convergence of :func:`active_pieces`' fit."""
    pieces = active_pieces(x, y, yhat, labelled, probability, lam, clusters, reported)
    return pieces.theta, pieces.covariance(), pieces.lam, pieces.converged


def active_pieces(x: np.ndarray, y: np.ndarray, yhat: np.ndarray, labelled: np.ndarray, probability: np.ndarray,
                  lam: float | None, clusters: np.ndarray | None = None, reported: np.ndarray | None = None) -> Pieces:
    """The active-inference M-estimator: every unit's loss on the judge value, plus on the units
    labelled with probability ``probability`` (independent draws) the label-minus-judge correction
    weighted by 1 / probability, so the loss is unbiased for the loss on every unit's human label whatever the design:
    ``1/N sum_u [lam l(yhat_u) + xi_u / pi_u (l(y_u) - lam l(yhat_u))]``. ``y`` is read only where
    ``labelled``. ``lam=None`` tunes it (trace of the covariance of ``reported @ theta``).
    Returns the fit and the terms of its covariance, as ``polyrag.arena.ppi_fit.anchored_pieces``."""
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
    return Pieces(theta, inverse_hessian, labels=[a], judge=[b], groups=None if clusters is None else [clusters],
                  lam=lam_used, converged=converged)
