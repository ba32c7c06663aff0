"""Snakemake entry point of rule answers_browser: results/answers.html, every system's answers
with their passages and the arena judge's verdicts, to read in the report or on its own
(polyrag.answers_browser)."""

from pathlib import Path

import pandas as pd

from polyrag.answers_browser import answers_page, browser_data
from polyrag.csv_tables import read_table
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    languages, models = sm.params.languages, sm.params.models
    questions = {lang: pd.read_parquet(path) for lang, path in zip(languages, sm.input.questions)}
    answers = {key: pd.read_parquet(path) for key, path in zip(sm.params.answer_keys, sm.input.answers)}
    games = {}
    for lang, path in zip(sm.params.games_languages, sm.input.games):
        games.setdefault(lang, []).append(pd.read_parquet(path))
    games = {lang: pd.concat(parts, ignore_index=True) for lang, parts in games.items()}
    if sm.input.leaderboard:  # systems in the leaderboard's order, the best first
        ranked = read_table(sm.input.leaderboard[0])["model"].tolist()
        models = [m for m in ranked if m in models] + [m for m in models if m not in ranked]
    data = browser_data(questions, answers, games, models, sm.params.judge, sm.params.model_languages)
    Path(sm.output[0]).write_text(answers_page(data), encoding="utf-8")


run_logged(main, snakemake.log[0])  # noqa: F821
