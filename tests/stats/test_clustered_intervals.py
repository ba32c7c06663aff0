"""Proportions on clustered samples, against the Wilson interval written out."""

from __future__ import annotations

import numpy as np
import pytest

from polyrag.stats.clustered_intervals import clustered_wilson_interval
from tests.helpers.arena import wilson


def test_clustered_wilson_of_items_copied_within_clusters_is_wilson_at_the_cluster_count_minus_one():
    """Q clusters of k identical items: the sandwich variance is p(1-p)/(Q-1), the binomial one
    p(1-p)/(Qk), so the effective size is Q - 1 trials; independent items keep all of them."""
    outcomes = np.random.default_rng(4).random(40) < 0.3
    copied = np.repeat(outcomes, 5)
    interval = clustered_wilson_interval(copied, np.repeat(np.arange(40), 5))
    share = outcomes.mean()
    assert interval == pytest.approx(wilson(share * 39, 39))
    # Every item its own cluster: the same sandwich at k = 1, n - 1 trials.
    assert clustered_wilson_interval(copied, np.arange(200)) == pytest.approx(wilson(copied.mean() * 199, 199))
