"""Pairwise games read from the judgments files of one judge and language.

Each judged order of a pair is one game. Verdicts are ``model_a``, ``model_b``, ``tie`` or
``invalid``. The tie rule (``arena.ties``): a tie counts as half a win for each side
(:func:`question_win_matrices`), or is its own outcome in Davidson's model
(:func:`question_outcome_matrices`, ``bradley_terry.fit_davidson_batch``). ``invalid`` verdicts are no
games: they are excluded from every fit and counted. When one order of a question is invalid,
the other order still counts alone (it is a real verdict); how often that happens is reported
beside the judge's position bias (``position_bias``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from polyrag.errors import DataError
from polyrag.stats.clustered_intervals import clustered_wilson_interval

VERDICTS = {"model_a", "model_b", "tie", "invalid"}
COLUMNS = ["query_id", "model_a", "model_b", "shown_first", "verdict"]


def read_games(paths: list[str | Path], extra_columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """All games of these judgments files, checked: known verdicts, no missing fields;
    ``extra_columns`` (e.g. ``raw_output``) read as they are."""
    frames = []
    for path in paths:
        frame = pd.read_parquet(path, columns=COLUMNS + list(extra_columns))
        missing = frame[COLUMNS].isna().any(axis=1)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise DataError(f"{path}: row {row}: missing value in {frame.columns[frame.iloc[row].isna()].tolist()}")
        unknown = ~frame["verdict"].isin(VERDICTS)
        if unknown.any():
            row = int(np.flatnonzero(unknown)[0])
            raise DataError(f"{path}: row {row}: verdict {frame['verdict'].iloc[row]!r} is not one of {sorted(VERDICTS)}")
        neither = (frame["shown_first"] != frame["model_a"]) & (frame["shown_first"] != frame["model_b"])
        if neither.any():
            row = int(np.flatnonzero(neither)[0])
            raise DataError(f"{path}: row {row}: shown_first {frame['shown_first'].iloc[row]!r} is neither "
                            f"model_a nor model_b")
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=COLUMNS + list(extra_columns))
    games = pd.concat(frames, ignore_index=True)
    games["query_id"] = games["query_id"].astype(str)
    return games


def gather_games(paths: list[str | Path], output: str | Path) -> int:
    """The games of ``paths`` (one file per pair of one judge and language), in their order, as one
    file; returns the number of games. Columns and types are the pair files' own (a file of no
    games has them too), so reading the one file gives what reading the pairs' files gave."""
    tables = [pq.read_table(path) for path in paths]
    if not tables:
        raise DataError(f"no games files to gather into {output}")
    for path, table in zip(paths, tables):
        if not table.schema.equals(tables[0].schema):
            raise DataError(f"{path}: its columns ({table.schema.names}, types "
                            f"{[str(t) for t in table.schema.types]}) differ from {paths[0]}'s; rerun its judging job")
    gathered = pa.concat_tables(tables)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(gathered, output)
    return gathered.num_rows


def question_win_matrices(games: pd.DataFrame, models: list[str]) -> tuple[list[str], np.ndarray]:
    """Sorted question ids and, per question, ``wins[i, j]``: games model i won against model j
    on that question (ties as half a win each). A bootstrap tournament's win matrix is the sum of
    its questions' matrices, each as many times as it was drawn."""
    questions, decisive, ties = question_outcome_matrices(games, models)
    return questions, decisive + ties / 2


def question_outcome_matrices(games: pd.DataFrame, models: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Sorted question ids and, per question, ``decisive[i, j]``: games model i won outright
    against model j, and ``ties[i, j]`` (symmetric): games of i and j judged a tie; for tie
    models that fit ties as their own outcome (Davidson's)."""
    index = {model: i for i, model in enumerate(models)}
    valid = games[games["verdict"] != "invalid"]
    questions = sorted(games["query_id"].unique())
    q = valid["query_id"].map({query_id: k for k, query_id in enumerate(questions)}).to_numpy()
    a = valid["model_a"].map(index).to_numpy()
    b = valid["model_b"].map(index).to_numpy()
    verdict = valid["verdict"].to_numpy()
    decisive = np.zeros((len(questions), len(models), len(models)))
    ties = np.zeros_like(decisive)
    np.add.at(decisive, (q, a, b), (verdict == "model_a").astype(float))
    np.add.at(decisive, (q, b, a), (verdict == "model_b").astype(float))
    np.add.at(ties, (q, a, b), (verdict == "tie").astype(float))
    np.add.at(ties, (q, b, a), (verdict == "tie").astype(float))
    return questions, decisive, ties


def win_matrix(games: pd.DataFrame, models: list[str]) -> np.ndarray:
    """``wins[i, j]``: games model i won against model j over all questions."""
    return question_win_matrices(games, models)[1].sum(axis=0)


def tally(games: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Per model: games played (valid), wins, losses, ties, and invalid verdicts in its pairs."""
    rows = []
    for model in models:
        as_a, as_b = games["model_a"] == model, games["model_b"] == model
        mine = games[as_a | as_b]
        won = (as_a & (games["verdict"] == "model_a")) | (as_b & (games["verdict"] == "model_b"))
        lost = (as_a & (games["verdict"] == "model_b")) | (as_b & (games["verdict"] == "model_a"))
        rows.append({"model": model, "games": int((mine["verdict"] != "invalid").sum()), "wins": int(won.sum()),
                     "losses": int(lost.sum()), "ties": int((mine["verdict"] == "tie").sum()),
                     "invalid": int((mine["verdict"] == "invalid").sum())})
    return pd.DataFrame(rows)


def position_bias(games: pd.DataFrame) -> dict:
    """How often the answer shown first wins, over decisive games (ties and invalid verdicts
    excluded): 0.5 for a judge without position bias, since every pair is shown in both orders.
    Its 95% interval is Wilson's clustered by question (``clustered_wilson_interval``): the two
    orders of a pair, and the pairs of one question, are not independent trials.
    ``games_without_other_order``: valid games whose question and pair have no valid verdict in
    the other order, which therefore count alone in the fit."""
    valid = games[games["verdict"] != "invalid"]
    decisive = valid[valid["verdict"] != "tie"]
    winner = decisive["model_a"].where(decisive["verdict"] == "model_a", decisive["model_b"])
    first_won = (winner == decisive["shown_first"]).to_numpy()
    first_wins, n = int(first_won.sum()), len(decisive)
    low, high = clustered_wilson_interval(first_won, decisive["query_id"].to_numpy())
    orders = valid.groupby(["query_id", "model_a", "model_b"])["shown_first"].transform("nunique")
    return {"decisive_games": n, "first_position_wins": first_wins,
            "first_position_win_rate": first_wins / n if n else np.nan,
            "first_position_ci_low": low, "first_position_ci_high": high,
            "ties": int((valid["verdict"] == "tie").sum()), "invalid": int(len(games) - len(valid)),
            "games_without_other_order": int((orders < 2).sum())}
