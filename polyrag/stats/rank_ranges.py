"""Joint rank ranges: which estimates are surely ahead of which, for all of them at once.

Every rank range polyrag prints (the arena's Bradley-Terry and style-controlled tables, the
leaderboard overall and per language, the label-anchored rank sets, the retrieval leaderboard)
comes from :func:`rank_ranges`. Estimate i is *surely ahead* of j when the simultaneous interval of
``theta_i - theta_j`` lies above 0; i's rank range is ``1 + #surely ahead of i`` ..
``K - #i is surely ahead of``, and all ranges hold at once at the family's level: the confidence
set for all ranks of Mogstad, Romano, Shaikh and Wilhelm (2024, "Inference for ranks with
applications to mobility across neighbourhoods and academic achievement across countries", RES).

The simultaneous intervals' critical value is the ``confidence`` quantile of the max-|t| over the
pairs in the joint draws of the estimates (bootstrap resamples, or draws from the estimates'
normal law when a covariance is all there is): ``max_p |d*_p - d_p| / sd_p``, ``d*_p`` a pair's
difference in one draw, ``d_p`` its estimate, ``sd_p`` its sd over the draws. The pairs share
their models' estimates, so the quantile is far below Bonferroni's over K(K-1)/2 pairs.
*Stepdown* (Romano and Wolf 2005): the pairs found apart leave the family and the quantile is taken
again over the remaining pairs, until no further pair is found apart; for the family of all pairwise
order claims this keeps the family-wise level (Mogstad et al., section 3.3).

Few clusters. Draws over Q questions give a sd that is (Q-1)/Q of the unbiased variance, and an
sd estimated from Q questions is itself uncertain; as every interval over questions here
(``polyrag.stats.bootstrap``) a pair's standard error is ``sqrt(inflation) * sd`` and its max-|t|
is divided by the ratio of an estimated sd to the true one, ``sqrt(chi2(df) / df)``, one ratio
shared by all pairs in a draw (as Tukey's studentised range shares one error variance;
:func:`variance_factors`), ``df`` and ``inflation`` the pair's :class:`Clusters` (the fewer
degrees of freedom and the larger inflation of its two estimates). One pair gives the t interval
``d +- t(df) sqrt(inflation) sd``; independent normal estimates give Tukey's studentised range
(the tests check both). With normal draws ``df`` is infinite and the interval is ``d +- c sd``.
Carrying the max-|t| quantile to each pair's t tail instead (independent variance errors) was
wider than Bonferroni at 6 questions; the shared ratio covered 0.96-1.00.
``benchmarks/bench_coverage.py`` measures the family-wise coverage and the mean width beside
Bonferroni and percentile-overlap ranges (docs/intervals.md#joint-rank-ranges).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

#: the rank-range methods: the default, and the two it is measured against
METHODS = ("max-t stepdown", "max-t", "bonferroni")
#: points of the quadrature over the estimated variances' chi-square law (``variance_factors``)
QUADRATURE_POINTS = 40


@dataclass(frozen=True)
class Clusters:
    """Per estimate, the t degrees of freedom of its variance and the factor that turns the
    bootstrap variance into the unbiased one (``Q / (Q-1)`` over Q questions)."""

    df: np.ndarray
    inflation: np.ndarray

    @classmethod
    def of_counts(cls, n_questions, size: int) -> "Clusters":
        """Q questions per estimate (one count for all, or one each): ``df = Q - 1``."""
        q = np.maximum(np.broadcast_to(np.asarray(n_questions, dtype=float), (size,)), 2)
        return cls(q - 1, q / (q - 1))

    @classmethod
    def normal(cls, size: int) -> "Clusters":
        """Draws from a normal law with a known covariance: no small-sample correction."""
        return cls(np.full(size, np.inf), np.ones(size))

    @classmethod
    def pooled(cls, variances: np.ndarray, n_questions: np.ndarray) -> "Clusters":
        """A mean over independent groups (languages x estimates: each group's bootstrap variance
        of the mean's term and its questions): Welch-Satterthwaite degrees of freedom of the
        unbiased pooled variance. Equal variances over L groups of Q questions give L (Q - 1). A group
        an estimate has no part in (NaN: a language its model does not answer) is left out."""
        q, raw = np.asarray(n_questions, dtype=float), np.asarray(variances, dtype=float)
        absent = ~(np.isfinite(q) & np.isfinite(raw))  # a language the estimate's model does not answer
        q, raw = np.where(absent, 2.0, np.maximum(q, 2)), np.where(absent, 0.0, raw)
        unbiased = raw * q / (q - 1)
        total = unbiased.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(total > 0, total**2 / (unbiased**2 / (q - 1)).sum(axis=0),
                          np.where(absent, np.inf, q).min(axis=0) - 1)
            inflation = np.where(raw.sum(axis=0) > 0, total / raw.sum(axis=0),
                                 np.where(absent, 1.0, q / (q - 1)).max(axis=0))
        return cls(df, inflation)

    def pairs(self, first: np.ndarray, second: np.ndarray) -> "Clusters":
        """A difference rests on the fewer degrees of freedom and the larger inflation of its two."""
        return Clusters(np.minimum(self.df[first], self.df[second]),
                        np.maximum(self.inflation[first], self.inflation[second]))

    def critical(self, tail) -> np.ndarray:
        """The multiple of a draws' sd that an interval with two-sided ``tail`` needs."""
        z = ndtri(1 - np.asarray(tail) / 2)
        t = np.where(np.isinf(self.df), z, stdtrit(np.where(np.isinf(self.df), 1, self.df), 1 - np.asarray(tail) / 2))
        return t * np.sqrt(self.inflation)


def surely_apart(difference: np.ndarray, draws: np.ndarray, clusters: Clusters, confidence: float = 0.95,
                 method: str = "max-t stepdown") -> np.ndarray:
    """Per pair, whether its simultaneous interval excludes 0 (module docstring). ``difference``:
    the pairs' estimates; ``draws``: draws x pairs of the same differences; ``clusters``: per
    pair. A pair whose draws do not vary is never found apart (no evidence of its spread)."""
    if method not in METHODS:
        raise ValueError(f"rank-range method {method!r} is not one of {list(METHODS)}")
    sd = draws.std(axis=0, ddof=1) if len(draws) > 1 else np.zeros(len(difference))
    varies = sd > 0
    apart = np.zeros(len(difference), dtype=bool)
    if not varies.any():
        return apart
    alpha = 1 - confidence
    if method == "bonferroni":
        return varies & (np.abs(difference) > clusters.critical(np.full(len(difference), alpha / len(difference))) * sd)
    # |z| of every draw and pair (the draws' sd), compared with |d| / (sd * sqrt(inflation)), the
    # pair's estimated se, after division by the variance ratio of each quadrature point
    z_draws = np.zeros_like(draws)
    z_draws[:, varies] = np.abs(draws[:, varies] - difference[varies]) / sd[varies]
    statistic = np.zeros(len(difference))
    statistic[varies] = np.abs(difference[varies]) / (sd[varies] * np.sqrt(clusters.inflation[varies]))
    active = varies.copy()
    while active.any():
        # pairs of one df share their variance ratio: the max over them, then over the dfs
        groups = [active & (clusters.df == df) for df in np.unique(clusters.df[active])]
        group_max = np.stack([z_draws[:, group].max(axis=1) for group in groups], axis=1)  # draws x dfs
        factors = variance_factors(np.array([clusters.df[group][0] for group in groups]))  # points x dfs
        maxima = (group_max[:, None, :] / factors[None, :, :]).max(axis=2).ravel()
        quantile = np.quantile(maxima, confidence, method="higher")
        newly = active & (statistic > quantile)
        if not newly.any():
            break
        apart |= newly
        active &= ~newly
        if method == "max-t":  # single step: one quantile over all pairs
            break
    return apart


def variance_factors(df: np.ndarray, points: int = QUADRATURE_POINTS) -> np.ndarray:
    """``sqrt(chi2(df) / df)`` at the ``(r + 1/2) / points`` quantiles, r = 0 .. points-1, per pair
    (points x pairs; 1 where ``df`` is infinite): the ratio of an estimated sd to the true one,
    one shared ratio for all pairs at each point (as Tukey's studentised range shares one error
    variance), a deterministic quadrature over its law."""
    from scipy.special import chdtri  # chi2 quantile from the upper tail

    df = np.asarray(df, dtype=float)
    if np.isinf(df).all():
        return np.ones((1, len(df)))
    upper = 1 - (np.arange(points) + 0.5) / points
    finite = np.where(np.isinf(df), 1.0, df)
    factor = np.sqrt(chdtri(finite[None, :], upper[:, None]) / finite[None, :])
    return np.where(np.isinf(df)[None, :], 1.0, factor)


def rank_ranges(point: np.ndarray, samples: np.ndarray, clusters: Clusters, confidence: float = 0.95,
                method: str = "max-t stepdown") -> tuple[np.ndarray, np.ndarray]:
    """``(rank_best, rank_worst)`` of each estimate (higher first), jointly at ``confidence``, from
    its point estimate and joint draws (``samples``: draws x estimates, e.g. bootstrap
    resamples of the same questions) and per-estimate :class:`Clusters`."""
    point = np.asarray(point, dtype=float)
    k = len(point)
    first, second = np.triu_indices(k, k=1)
    if not len(first):
        return np.ones(k, int), np.full(k, k)
    difference = point[first] - point[second]
    apart = surely_apart(difference, samples[:, first] - samples[:, second], clusters.pairs(first, second),
                         confidence, method)
    ahead = np.zeros((k, k), dtype=bool)  # [i, j]: i surely ahead of j
    ahead[first[apart & (difference > 0)], second[apart & (difference > 0)]] = True
    ahead[second[apart & (difference < 0)], first[apart & (difference < 0)]] = True
    return 1 + ahead.sum(axis=0), k - ahead.sum(axis=1)


def normal_rank_ranges(point: np.ndarray, covariance: np.ndarray, confidence: float = 0.95,
                       method: str = "max-t stepdown", n_draws: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rank_ranges` for estimates with a (sandwich) covariance and no resamples: the
    max-|z| quantile from draws of their normal law. The draws only integrate that law (a fixed
    seed, so the same fit gives the same ranges); 20,000 of them put the 0.95 quantile within
    about 0.01 of its value."""
    point = np.asarray(point, dtype=float)
    rng = np.random.default_rng(20240101)
    covariance = (np.asarray(covariance, float) + np.asarray(covariance, float).T) / 2
    draws = rng.multivariate_normal(point, covariance, size=n_draws, method="eigh", check_valid="ignore")
    return rank_ranges(point, draws, Clusters.normal(len(point)), confidence, method)
