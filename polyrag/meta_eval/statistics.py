"""Balanced accuracy with bootstrap standard errors, per-class recall intervals, and paired
permutation tests (MEMERAG).

Balanced accuracy is the mean recall over classes. Over several languages (the multilingual
task, ``lang == "all"``) it is the mean recall over (language, class) groups: every class and
every language weighs the same, whatever its size. A missing prediction (an LLM label that never
came) is counted as wrong, as MEMERAG does; summaries also report it excluded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binomtest


def group_ids(labels: np.ndarray, langs: np.ndarray) -> np.ndarray:
    """One integer per (language, class) group."""
    keys = pd.Series(list(zip(langs, labels)))
    return pd.factorize(keys)[0]


def balanced_accuracy(correct: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Mean per-group accuracy. ``correct``: (n,) or (k, n) booleans; returns a scalar or (k,)."""
    correct = np.asarray(correct, float)
    n_groups = groups.max() + 1
    onehot = np.zeros((len(groups), n_groups))
    onehot[np.arange(len(groups)), groups] = 1.0
    return (correct @ onehot / onehot.sum(axis=0)).mean(axis=-1)


def bootstrap_se(correct: np.ndarray, groups: np.ndarray, n: int, rng: np.random.Generator) -> float:
    """Standard deviation of balanced accuracy over ``n`` resamples of sentences drawn within each
    (language, class) group (stratified), so no resample loses a class and none is dropped.

    Resampling ``n_g`` binary outcomes with replacement from a group with ``k_g`` correct draws a
    Binomial(n_g, k_g / n_g) count of correct ones, so each group's resampled recall is drawn from
    that binomial directly: the same bootstrap distribution, without an (n, sentences) matrix."""
    correct = np.asarray(correct, bool)
    sizes = np.bincount(groups)
    recalls = np.bincount(groups, weights=correct) / sizes
    resampled = rng.binomial(sizes, recalls, size=(n, len(sizes))) / sizes
    return float(np.std(resampled.mean(axis=1), ddof=1))


def recall_interval(correct: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact binomial) interval of a recall of ``correct`` out of ``total``; NaN
    without sentences. 3 of 3 reads [0.29, 1.0], not a certain 1.0."""
    if total == 0:
        return np.nan, np.nan
    interval = binomtest(correct, total).proportion_ci(confidence_level=confidence, method="exact")
    return float(interval.low), float(interval.high)


def paired_permutation_test(correct_a: np.ndarray, correct_b: np.ndarray, groups: np.ndarray, n: int,
                            rng: np.random.Generator) -> tuple[float, float]:
    """Two-sided test that evaluators a and b have the same balanced accuracy on the same
    sentences: each sentence's pair of outcomes is swapped with probability 1/2. Returns the
    observed difference (a - b) and the p-value (with the observed arrangement counted)."""
    observed = balanced_accuracy(correct_a, groups) - balanced_accuracy(correct_b, groups)
    swap = rng.random((n, len(groups))) < 0.5
    permuted_a = np.where(swap, correct_b, correct_a)
    permuted_b = np.where(swap, correct_a, correct_b)
    differences = balanced_accuracy(permuted_a, groups) - balanced_accuracy(permuted_b, groups)
    extreme = np.sum(np.abs(differences) >= abs(observed) - 1e-12)
    return float(observed), float((extreme + 1) / (n + 1))
