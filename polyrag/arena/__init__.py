"""Arena statistics: Bradley-Terry with bootstrap, the surrogate judge, the leaderboard."""
