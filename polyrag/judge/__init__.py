"""Pairwise judging: every pair of judged models, on the arena sample, in both orders."""
