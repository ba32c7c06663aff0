"""The question bootstrap's shared pieces: the ranks of scores."""

from __future__ import annotations

import numpy as np

from polyrag.stats.bootstrap import rank_by


def test_scores_that_differ_by_solver_noise_share_their_rank():
    """Two models with the same games get logits that differ only by solver noise (-7.607e-17
    against -7.649e-17 in one language), which ranked them 2 and 3."""
    assert rank_by([0.5, -7.607e-17, -7.649e-17, -0.5]).tolist() == [1.0, 2.0, 2.0, 4.0]
    assert rank_by([1.0, np.nan, 0.0]).isna().tolist() == [False, True, False]
