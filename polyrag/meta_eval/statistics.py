"""Balanced accuracy with bootstrap standard errors, and paired permutation tests (MEMERAG).

Balanced accuracy is the mean recall over classes. Over several languages (the multilingual
task, ``lang == "all"``) it is the mean recall over (language, class) groups: every class and
every language weighs the same, whatever its size. A missing prediction (an LLM label that never
came) is counted as wrong, as MEMERAG does; summaries also report it excluded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


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


def bootstrap_se(correct: np.ndarray, groups: np.ndarray, langs: np.ndarray, n: int,
                 rng: np.random.Generator) -> float:
    """Standard deviation of balanced accuracy over ``n`` resamples of sentences, within language."""
    indices = []
    for lang in np.unique(langs):
        members = np.flatnonzero(langs == lang)
        indices.append(rng.choice(members, size=(n, len(members)), replace=True))
    drawn = np.concatenate(indices, axis=1)
    values = [balanced_accuracy(correct[row], groups[row]) if len(np.unique(groups[row])) == groups.max() + 1
              else np.nan for row in drawn]  # a resample that lost a whole class has no balanced accuracy
    return float(np.nanstd(values, ddof=1))


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
