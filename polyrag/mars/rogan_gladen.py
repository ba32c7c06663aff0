"""A system's score from a judge's positive rate, corrected by the judge's confusion matrix
(Rogan & Gladen 1978), for calibration sets whose class balance differs from the system's.

MARS's calibration (gold) set is built 50% positive and 50% negative; a system's answers are, say,
80% positive. PPI subtracts the judge's mean error on the calibration set, which is the right
correction only when the calibration items are a random sample of the scored ones: with
class-dependent errors it converges to ``pi + (0.5 - pi)(FPR + FNR)``, pulled toward 0.5. Rates
conditional on the class do not depend on the balance: estimate the judge's true-positive rate
TPR (on calibration positives) and false-positive rate FPR (on calibration negatives), and invert
``q = FPR + pi (TPR - FPR)``, where q is the judge's positive rate on the system's answers:

    score = (q - FPR) / (TPR - FPR)

The assumption is that the judge errs at the same class-conditional rates on the calibration items
as on the system's answers (transportability), which PPI also needs and more.

The interval is Fieller's for this ratio: the scores theta0 whose linear contrast
``q - FPR - theta0 (TPR - FPR)`` is within z standard errors of 0, its variance summed over three
independent binomial samples (q over the N answers, TPR over the n1 calibration positives, FPR over
the n0 negatives):

    (q - FPR - theta0 (TPR - FPR))^2 <= z^2 [q0(1-q0)/N + theta0^2 TPR(1-TPR)/n1 + (1-theta0)^2 FPR(1-FPR)/n0]

with q0 = FPR + theta0 (TPR - FPR), the judge's positive rate were the score theta0: q's variance
is taken at the null, as Wilson's interval of a proportion does, and the inequality stays a
quadratic in theta0. Unlike the delta method it keeps the ratio's skew (the interval is not
symmetric when TPR - FPR is uncertain). TPR and FPR in the variance (and in q0) are smoothed by
one pseudo-count of each class (``SMOOTHING``), so that a calibration set where the judge made no
error still carries the uncertainty of its size (0 of 50 has a variance, not none). The coverage
benchmark (``benchmarks/bench_coverage.py``) measures 0.93-0.97 over class balances 0.5-0.98,
asymmetric judge errors, 50-300 calibration items per class and 10-500 answers; the delta method
undercovered (0.90) with a near-perfect judge on 50 items per class, plain Fieller too (0.90), and
q's plain variance at the observed q, q(1-q)/N, covered 0.89-0.93 at 10-20 answers (0.50-0.81
with a judge right 95% of the time on a system 90-98% good: ten yeses out of ten have no variance).

The quadratic's leading coefficient without q's part is ``(TPR - FPR)^2 - z^2 (var TPR + var FPR)``:
when it is not positive, the judge's Youden index TPR - FPR is not distinguishable from 0, the
judge cannot measure the score (with q's variance at its observed value the confidence set would be
unbounded), and the stratum is not estimable: its interval is [0, 1] and it has no score.
"""

from __future__ import annotations

import numpy as np

from polyrag.mars.estimates import Estimate, interval_columns, z_value

SMOOTHING = 1.0  # pseudo-counts added to each class in the variance of TPR and FPR


def smoothed_rate(hits: float, total: int) -> float:
    return (hits + SMOOTHING) / (total + 2 * SMOOTHING)


def rogan_gladen_estimate(labels: np.ndarray, predictions: np.ndarray, unlabelled_predictions: np.ndarray, *,
                          alpha: float) -> Estimate:
    """The corrected share of positives among the unlabelled items, from the judge's 0/1
    ``predictions`` of calibration items with 0/1 ``labels`` and its 0/1 labels of the system's items."""
    Y = np.asarray(labels, dtype=float)
    Yhat = np.asarray(predictions, dtype=float)
    judged = np.asarray(unlabelled_predictions, dtype=float)
    if len(judged) == 0:
        raise ValueError("the confusion-matrix correction needs judged items")
    positives, negatives = Y == 1, Y == 0
    n1, n0, N = int(positives.sum()), int(negatives.sum()), len(judged)
    q = float(judged.mean())
    common = dict(estimator="rogan_gladen", judge_positive_rate=q, n_calibration=len(Y), n_answers=N)
    unknown = dict(value=0.0, low=0.0, high=0.0, unknown_weight=1.0)
    if n1 == 0 or n0 == 0:  # no class-conditional rate without both classes
        return Estimate(**unknown, **common)
    tpr, fpr = float(Yhat[positives].mean()), float(Yhat[negatives].mean())
    common |= dict(true_positive_rate=tpr, false_positive_rate=fpr)
    t, f = smoothed_rate(Yhat[positives].sum(), n1), smoothed_rate(Yhat[negatives].sum(), n0)
    var_t, var_f = t * (1 - t) / n1, f * (1 - f) / n0
    z2 = z_value(alpha) ** 2
    youden, contrast = tpr - fpr, q - fpr
    # a theta^2 - 2 b theta + c <= 0
    a = youden**2 - z2 * (var_t + var_f)
    if a <= 0:  # a judge at chance measures nothing
        return Estimate(**unknown, **common)
    # q's variance at the null: q0(theta) (1 - q0(theta)) / N with q0 = f + theta (t - f), the judge's
    # positive rate were the score theta (smoothed rates), a quadratic in theta as Wilson's interval
    # uses the variance at the null proportion. The plain q (1 - q) / N at the observed q covered
    # 0.50-0.90 at N = 10-20 answers (0 when the judge said yes to all ten).
    slope = t - f
    a += z2 * slope**2 / N
    b = contrast * youden - z2 * var_f + z2 * slope * (1 - 2 * f) / (2 * N)
    c = contrast**2 - z2 * (var_f + f * (1 - f) / N)
    root = np.sqrt(max(b * b - a * c, 0.0))
    return Estimate(value=contrast / youden, low=(b - root) / a, high=(b + root) / a, **common)


def rogan_gladen_score(labels: np.ndarray, predictions: np.ndarray, unlabelled_predictions: np.ndarray, *,
                       alpha: float) -> dict:
    """:func:`rogan_gladen_estimate` as the columns of ``estimates.interval_columns``."""
    return interval_columns(rogan_gladen_estimate(labels, predictions, unlabelled_predictions, alpha=alpha))
