"""Joint rank ranges (polyrag.stats.rank_ranges), checked against scipy's t and studentised-range
laws and a simulation with known truth."""

import numpy as np
import pytest
from scipy.stats import binom, norm, studentized_range
from scipy.stats import t as student_t

from polyrag.stats.rank_ranges import Clusters, normal_rank_ranges, rank_ranges, surely_apart


def centred_normal(rng, n: int, k: int) -> np.ndarray:
    """Draws with mean exactly 0 and sd exactly 1 per column: the critical values are then exact."""
    z = rng.normal(size=(n, k))
    return (z - z.mean(axis=0)) / z.std(axis=0, ddof=1)


@pytest.mark.parametrize("questions", [6, 12, 30])
def test_one_pair_is_the_t_interval_of_its_questions(questions):
    """A single difference over Q questions is apart exactly when it leaves
    ``t(Q-1, 0.975) sqrt(Q/(Q-1)) sd``, the arena's marginal interval."""
    z = norm.ppf((np.arange(100_000) + 0.5) / 100_000)  # the normal law's quantiles: exact quantiles
    z /= z.std(ddof=1)
    critical = student_t.ppf(0.975, questions - 1) * np.sqrt(questions / (questions - 1))
    clusters = Clusters.of_counts(questions, 1)
    for factor, apart in ((0.99, False), (1.01, True)):
        difference = np.array([critical * factor])
        assert surely_apart(difference, (difference + z)[:, None], clusters).tolist() == [apart]


@pytest.mark.parametrize("df", [5, 20, np.inf])
def test_independent_normal_estimates_give_tukeys_studentised_range(df):
    """K independent estimates of equal sd with a shared variance estimate on df degrees of freedom:
    the simultaneous critical value of all differences is Tukey's q(0.95; K, df) / sqrt(2) (the
    difference's sd is sqrt(2) sd). Model 1 sits just inside or just outside it from model 0."""
    k = 5
    q = studentized_range.ppf(0.95, k, 1e6 if np.isinf(df) else df) / np.sqrt(2)
    draws = centred_normal(np.random.default_rng(2), 100_000, k)
    clusters = Clusters(np.full(k, float(df)), np.ones(k))
    for factor, ordered in ((0.98, False), (1.02, True)):
        point = np.array([0.0, q * factor * np.sqrt(2), 60.0, 120.0, 180.0])
        best, worst = rank_ranges(point, point + draws, clusters, method="max-t")
        assert (best[0] == 5 and worst[1] == 4) == ordered
        assert best[1:].tolist() == [4, 3, 2, 1] and worst[2:].tolist() == [3, 2, 1]


def test_stepdown_orders_a_pair_the_single_step_leaves():
    """Three independent normal estimates, one far above: the single step uses the three-pair
    critical value q(0.95; 3, inf) / sqrt(2) = 2.34 for the close pair; once the far model's pairs
    are apart the close pair is alone and needs only 1.96."""
    draws = centred_normal(np.random.default_rng(3), 200_000, 3)
    point = np.array([100.0, 2.15 * np.sqrt(2), 0.0])
    normal = Clusters.normal(3)
    single = rank_ranges(point, point + draws, normal, method="max-t")
    stepdown = rank_ranges(point, point + draws, normal, method="max-t stepdown")
    assert single[0].tolist() == [1, 2, 2] and single[1].tolist() == [1, 3, 3]
    assert stepdown[0].tolist() == [1, 2, 3] and stepdown[1].tolist() == [1, 2, 3]


def test_bonferroni_method_uses_the_t_quantile_over_all_pairs():
    draws = centred_normal(np.random.default_rng(4), 100_000, 4)
    critical = student_t.ppf(1 - 0.025 / 6, 11) * np.sqrt(12 / 11)  # 6 pairs, 12 questions
    for factor, ordered in ((0.99, False), (1.01, True)):
        point = np.array([critical * factor * np.sqrt(2), 0.0, 50.0, 100.0])
        best, _ = rank_ranges(point, point + draws, Clusters.of_counts(12, 4), method="bonferroni")
        assert (best[1] == 4) == ordered


def test_pooled_clusters_are_welch_satterthwaite():
    """Four languages of 6 questions with equal variances pool to 4 x 5 = 20 degrees of freedom;
    unequal ones to the Welch-Satterthwaite value computed here by hand."""
    equal = Clusters.pooled(np.full((4, 1), 0.3), np.full((4, 1), 6))
    assert equal.df[0] == pytest.approx(20) and equal.inflation[0] == pytest.approx(1.2)
    variances, counts = np.array([[1.0], [0.1], [0.2]]), np.array([[6], [12], [6]])
    unbiased = variances[:, 0] * counts[:, 0] / (counts[:, 0] - 1)
    expected = unbiased.sum() ** 2 / (unbiased**2 / (counts[:, 0] - 1)).sum()
    pooled = Clusters.pooled(variances, counts)
    assert pooled.df[0] == pytest.approx(expected) and 5 < pooled.df[0] < 20
    assert pooled.inflation[0] == pytest.approx(unbiased.sum() / variances.sum())


def test_a_language_an_estimate_has_no_part_in_is_left_out_of_its_pooled_clusters():
    """A model that answers some languages (NaN variance and questions elsewhere) pools over its own:
    the same degrees of freedom and inflation as the pooling of those languages alone."""
    variances = np.array([[1.0, 1.0], [0.1, np.nan], [0.2, 0.2]])
    counts = np.array([[6.0, 6.0], [12.0, np.nan], [6.0, 6.0]])
    pooled = Clusters.pooled(variances, counts)
    alone = Clusters.pooled(variances[[0, 2], 1:], counts[[0, 2], 1:])
    assert np.isfinite(pooled.df).all() and np.isfinite(pooled.inflation).all()
    assert pooled.df[1] == pytest.approx(alone.df[0]) and pooled.inflation[1] == pytest.approx(alone.inflation[0])
    assert pooled.df[0] == pytest.approx(Clusters.pooled(variances[:, :1], counts[:, :1]).df[0])


def test_a_pair_that_never_varies_is_never_apart():
    point = np.array([1.0, 0.0, 0.0])
    draws = np.tile(point, (50, 1))
    best, worst = rank_ranges(point, draws, Clusters.of_counts(12, 3))
    assert best.tolist() == [1, 1, 1] and worst.tolist() == [3, 3, 3]


def test_normal_rank_ranges_hold_jointly_and_are_narrower_than_bonferroni():
    """Ten estimates with a known correlated normal law (five equal, five spread): over 300
    simulated estimates no false order is claimed in at least 95% (within the binomial band),
    and the ranges are narrower on average than Bonferroni's over the 45 pairs."""
    rng = np.random.default_rng(5)
    truth = np.array([0.0] * 5 + [0.4, 0.8, 1.2, -0.6, -1.5])
    root = rng.normal(0, 0.1, (10, 10))
    covariance = root @ root.T + np.eye(10) * 0.02
    correct, width, bonferroni_width = [], [], []
    for _ in range(300):
        point = rng.multivariate_normal(truth, covariance)
        best, worst = normal_rank_ranges(point, covariance, n_draws=5000)
        better = (truth[None, :] > truth[:, None]).sum(axis=1)
        worse = (truth[None, :] < truth[:, None]).sum(axis=1)
        correct.append(bool(np.all((best <= 1 + better) & (worst >= 10 - worse))))
        width.append(np.mean(worst - best))
        draws = rng.multivariate_normal(point, covariance, 5000)
        b_best, b_worst = rank_ranges(point, draws, Clusters.normal(10), method="bonferroni")
        bonferroni_width.append(np.mean(b_worst - b_best))
    assert np.sum(correct) >= binom.ppf(0.001, 300, 0.95)
    assert np.mean(width) < np.mean(bonferroni_width) - 0.2
