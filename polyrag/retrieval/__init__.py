"""Retrieval: indexes, runs and their metrics against qrels."""
