"""Balanced accuracy with question-clustered standard errors and intervals, per-class recall
intervals, and paired permutation tests with a family-wise correction (MEMERAG).

Balanced accuracy is the mean recall over classes. Over several languages (the multilingual
task, ``lang == "all"``) it is the mean recall over (language, class) groups: every class and
every language weighs the same, whatever its size. A missing prediction (an LLM label that never
came) is counted as wrong, as MEMERAG does; summaries also report it excluded.

Sentences of one answer share a question, its passages and its answer, so they are not
independent: the standard error (:func:`clustered_se`) treats each question as a cluster and each
language as a stratum, and permutation tests swap whole questions. The interval
(:func:`balanced_accuracy_interval`) is built from each class's Wilson interval at its effective
size (sentences over the design effect of clustering), combined by MOVER (Zou & Donner 2008): a
class of a handful of sentences keeps a wide interval (10 of 10 recalled is [0.72, 1], not a
certain 1), where a bootstrap of sentences collapses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import betaincinv
from scipy.stats import t as student_t

from polyrag.stats.clustered_intervals import design_effect, stratified_cluster_variance, wilson_interval


def group_keys(labels: np.ndarray, langs: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """One integer per (language, class) group, and the group's ``(language, label)`` at each integer."""
    ids, keys = pd.factorize(pd.Series(list(zip(langs, labels))))
    return ids, list(keys)


def group_ids(labels: np.ndarray, langs: np.ndarray) -> np.ndarray:
    """One integer per (language, class) group."""
    return group_keys(labels, langs)[0]


def balanced_accuracy(correct: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Mean per-group accuracy. ``correct``: (n,) or (k, n) booleans; returns a scalar or (k,)."""
    correct = np.asarray(correct, float)
    n_groups = groups.max() + 1
    onehot = np.zeros((len(groups), n_groups))
    onehot[np.arange(len(groups)), groups] = 1.0
    return (correct @ onehot / onehot.sum(axis=0)).mean(axis=-1)


def question_ids(langs: np.ndarray, query_ids: np.ndarray) -> np.ndarray:
    """One integer per (language, question): the clusters."""
    return pd.factorize(pd.Series(list(zip(langs, query_ids))))[0]


def recall_contributions(correct: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each group's recall, each row's influence on balanced accuracy): the balanced accuracy
    minus its value is the sum of the rows' (correct - recall of its group) / (groups x size)."""
    correct = np.asarray(correct, float)
    sizes = np.bincount(groups)
    recalls = np.bincount(groups, weights=correct) / sizes
    return recalls, (correct - recalls[groups]) / (len(sizes) * sizes[groups])


def clustered_se(correct: np.ndarray, groups: np.ndarray, clusters: np.ndarray, strata: np.ndarray) -> float:
    """Standard error of balanced accuracy with questions as clusters within language strata."""
    return float(np.sqrt(stratified_cluster_variance(recall_contributions(correct, groups)[1], clusters, strata)))


def class_design_effects(correct: np.ndarray, groups: np.ndarray, clusters: np.ndarray,
                         strata: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (language, class) group's recall and design effect: its own (the clustered over the
    binomial variance of its recall), at least that of the balanced accuracy as a whole (which
    carries the correlation of a question's sentences across classes, and stands in where the
    group's own is 0/0, a recall of 0 or 1, or rests on a few questions), and at most the group's
    sentences per question weighted by size, sum m^2 / n: the design effect were every sentence of
    a question alike (intra-question correlation 1). 10 negatives in 8 questions can weigh no less
    than about 7 independent sentences, whatever the positives' clustering says."""
    correct = np.asarray(correct, float)
    clusters = pd.factorize(np.asarray(clusters))[0]
    sizes = np.bincount(groups).astype(float)
    recalls, contributions = recall_contributions(correct, groups)
    independent = np.sum(recalls * (1 - recalls) / sizes) / len(sizes) ** 2
    whole = design_effect(stratified_cluster_variance(contributions, clusters, strata), independent)
    per_question = np.bincount(groups * (clusters.max() + 1) + clusters,
                               minlength=len(sizes) * (clusters.max() + 1)).reshape(len(sizes), -1)
    alike = (per_question.astype(float) ** 2).sum(axis=1) / sizes
    effects = np.empty(len(sizes))
    for group in range(len(sizes)):
        members = groups == group
        own = design_effect(stratified_cluster_variance((correct[members] - recalls[group]) / sizes[group],
                                                        clusters[members], np.asarray(strata)[members]),
                            recalls[group] * (1 - recalls[group]) / sizes[group])
        effects[group] = min(max(own, whole), alike[group])
    return recalls, np.maximum(effects, 1.0)


def balanced_accuracy_interval(correct: np.ndarray, groups: np.ndarray, clusters: np.ndarray, strata: np.ndarray,
                               confidence: float = 0.95) -> tuple[float, float]:
    """MOVER interval of the mean of the groups' recalls from their Wilson intervals, each at its
    effective size: the group's sentences divided by its design effect (:func:`class_design_effects`).
    The Wilson intervals use the t quantile on questions minus languages degrees of freedom (the
    variance is estimated from that many clusters).

    The design effect of the balanced accuracy as a whole, applied to every class, took 10
    negatives in 8 questions to 3.3 effective sentences when the positives were clustered; with
    each class's own, bounded by its clustering at correlation 1, coverage stayed 0.93-0.97 in
    every simulated setting and the interval narrowed by up to a quarter where a class is tiny
    (docs/intervals.md)."""
    # t on clusters minus strata degrees of freedom: with 25 questions z covered 0.927.
    degrees = max(len(np.unique(clusters)) - len(np.unique(strata)), 1)
    z = float(student_t.ppf(0.5 + confidence / 2, degrees))
    sizes = np.bincount(groups).astype(float)
    recalls, effects = class_design_effects(correct, groups, clusters, strata)
    lows, highs = np.array([wilson_interval(r, n / e, z) for r, n, e in zip(recalls, sizes, effects)]).T
    score = recalls.mean()
    return (float(score - np.sqrt(np.sum((recalls - lows) ** 2)) / len(sizes)),
            float(score + np.sqrt(np.sum((highs - recalls) ** 2)) / len(sizes)))


# The standard error is a normal statement: it needs each class's recall to vary. Below 5 effective
# right or wrong sentences in some class (the textbook n p >= 5 for a binomial's normal
# approximation; a recall of 0 or 1 has none), estimate +- t se covered 0.61-0.91 in
# simulations (true recall below 1), against 0.94-0.97 where every class had 5 (docs/intervals.md).
MIN_EFFECTIVE_OUTCOMES = 5.0


def se_note(correct: np.ndarray, groups: np.ndarray, clusters: np.ndarray, strata: np.ndarray,
            names: list[str]) -> str:
    """Why the standard error of balanced accuracy is not a statement, or "" when it is: the first
    (language, class) group (``names[group]``) whose recall is 0 or 1, or has fewer than
    ``MIN_EFFECTIVE_OUTCOMES`` effective right or wrong sentences. Its variance is then missing
    from the sandwich estimator (10 of 10 right adds none) or rests on a sentence or two."""
    sizes = np.bincount(groups).astype(float)
    recalls, effects = class_design_effects(correct, groups, clusters, strata)
    for group in range(len(sizes)):
        right, effective = recalls[group] * sizes[group], sizes[group] / effects[group]
        fewest = min(recalls[group], 1 - recalls[group]) * effective
        if fewest < MIN_EFFECTIVE_OUTCOMES:
            return (f"se left empty: {names[group]} recall {int(round(right))} of {int(sizes[group])} "
                    f"({effective:.1f} effective sentences) adds "
                    + ("no variance" if fewest == 0 else f"the variance of {fewest:.1f} effective "
                       + ("misses" if recalls[group] > 0.5 else "hits"))
                    + "; the interval is the statement")
    return ""


def recall_interval(correct: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact binomial) interval of a recall of ``correct`` out of ``total``; NaN
    without sentences. 3 of 3 reads [0.29, 1.0], not a certain 1.0."""
    if total == 0:
        return np.nan, np.nan
    # The exact interval's bounds are beta quantiles; scipy's binomtest finds the same bounds by
    # root-finding, 15x slower (a third of the coverage benchmark's MEMERAG significance cell).
    alpha = 1 - confidence
    low = betaincinv(correct, total - correct + 1, alpha / 2) if correct > 0 else 0.0
    high = betaincinv(correct + 1, total - correct, 1 - alpha / 2) if correct < total else 1.0
    return float(low), float(high)


def paired_permutation_test(correct_a: np.ndarray, correct_b: np.ndarray, groups: np.ndarray, clusters: np.ndarray,
                            n: int, rng: np.random.Generator) -> tuple[float, float]:
    """Two-sided test that evaluators a and b have the same balanced accuracy on the same
    sentences: the outcomes of a whole question (every sentence of it) are swapped between a and
    b with probability 1/2, since sentences of one question are not exchangeable on their own.
    Returns the observed difference (a - b) and the p-value (with the observed arrangement counted).

    The difference of balanced accuracies is a weighted sum of per-sentence differences, so a
    permutation only flips the signs of the questions' weighted totals."""
    sizes = np.bincount(groups)
    weights = 1.0 / (len(sizes) * sizes[groups])
    totals = np.bincount(clusters, weights=weights * (np.asarray(correct_a, float) - np.asarray(correct_b, float)))
    observed = float(totals.sum())
    signs = np.where(rng.random((n, len(totals))) < 0.5, -1.0, 1.0)
    differences = signs @ totals
    extreme = np.sum(np.abs(differences) >= abs(observed) - 1e-12)
    return observed, float((extreme + 1) / (n + 1))


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: family-wise error control under any dependence.

    The k-th smallest p-value times (m - k + 1), made non-decreasing in that order, capped at 1:
    statsmodels' ``multipletests(method="holm")`` computes the same (tested equal) but runs a full
    garbage collection on every call, which was most of the coverage benchmark's time."""
    p_values = np.asarray(p_values, float)
    order = np.argsort(p_values, kind="stable")
    stepped = np.maximum.accumulate(p_values[order] * np.arange(len(p_values), 0, -1))
    adjusted = np.empty_like(p_values)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted
