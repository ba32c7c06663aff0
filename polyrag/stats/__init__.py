"""Statistics that several stages share: the question bootstrap and ranks (``bootstrap.py``: the
arena, its diagnostics and style control, the retrieval leaderboard) and proportions on clustered
samples (``clustered_intervals.py``). Neither imports anything of polyrag."""
