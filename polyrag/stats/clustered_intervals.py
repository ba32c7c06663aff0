"""Proportions measured on clustered samples: a sandwich variance and a Wilson interval at the
effective sample size.

Items that share a question (the sentences of one answer, the games of one question, the two
orders of one pair) are not independent trials, so a binomial interval over items is too narrow
when they are positively correlated. The design effect (clustered variance over the binomial
one, at least 1) shrinks the sample to its effective size, and the Wilson interval is taken
there: it keeps the Wilson interval's behaviour at the edges (10 of 10 is not a certain 1) while
carrying the clustering. The design effect is never taken below 1, so an interval is never
narrower than the one that treats every item as an independent trial.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
# The normal and Student's t quantiles that scipy.stats.norm.ppf and t.ppf call: scipy.stats takes 0.6 s
# to import, and every arena job (and Snakemake's planning of the rounds) imports this module.
from scipy.special import ndtri, stdtrit


def stratified_cluster_variance(contributions: np.ndarray, clusters: np.ndarray, strata: np.ndarray) -> float:
    """Variance of a sum of per-row ``contributions`` whose clusters are sampled independently
    within strata: sum over strata of Q/(Q-1) times the squared deviations of the cluster totals
    from their stratum mean (the linearisation, or sandwich, estimator)."""
    clusters = pd.factorize(np.asarray(clusters))[0]
    totals = np.bincount(clusters, weights=contributions)
    stratum_of_cluster = np.zeros(len(totals), dtype=int)
    stratum_of_cluster[clusters] = pd.factorize(np.asarray(strata))[0]
    variance = 0.0
    for stratum in np.unique(stratum_of_cluster):
        members = totals[stratum_of_cluster == stratum]
        if len(members) > 1:
            variance += len(members) / (len(members) - 1) * np.sum((members - members.mean()) ** 2)
    return float(variance)


def design_effect(clustered: float, independent: float) -> float:
    """Clustered over independent-trials variance, at least 1 (1 when the latter is 0: a share of
    0 or 1, where the Wilson interval alone carries the width)."""
    return max(1.0, clustered / independent) if independent > 0 else 1.0


def wilson_interval(proportion: float, size: float, z: float) -> tuple[float, float]:
    """Wilson score interval of a proportion observed on ``size`` (possibly fractional) trials."""
    centre = (proportion + z * z / (2 * size)) / (1 + z * z / size)
    half = z / (1 + z * z / size) * np.sqrt(proportion * (1 - proportion) / size + z * z / (4 * size * size))
    return float(centre - half), float(centre + half)


def clustered_wilson_interval(outcomes: np.ndarray, clusters: np.ndarray,
                              confidence: float = 0.95) -> tuple[float, float]:
    """Interval of the share of true ``outcomes`` when items are sampled in ``clusters``: Wilson
    at the effective size (items over the design effect). (nan, nan) without items."""
    outcomes = np.asarray(outcomes, float)
    n = len(outcomes)
    if n == 0:
        return np.nan, np.nan
    share = outcomes.mean()
    independent = share * (1 - share) / n
    clustered = stratified_cluster_variance((outcomes - share) / n, clusters, np.zeros(n))
    return wilson_interval(share, n / design_effect(clustered, independent), float(ndtri(0.5 + confidence / 2)))


def clustered_mean_interval(values: np.ndarray, clusters: np.ndarray, strata: np.ndarray | None = None,
                            confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) of ``values`` sampled in ``clusters`` (within ``strata``): the sandwich
    standard error with a t quantile on clusters minus strata degrees of freedom. nan bounds
    with fewer than two clusters in some stratum to spare."""
    values = np.asarray(values, float)
    n = len(values)
    if n == 0:
        return np.nan, np.nan, np.nan
    strata = np.zeros(n) if strata is None else np.asarray(strata)
    mean = float(values.mean())
    degrees = len(pd.unique(np.asarray(clusters))) - len(pd.unique(strata))
    if degrees < 1:
        return mean, np.nan, np.nan
    half = float(stdtrit(degrees, 0.5 + confidence / 2)) * np.sqrt(
        stratified_cluster_variance((values - mean) / n, clusters, strata))
    return mean, mean - half, mean + half
