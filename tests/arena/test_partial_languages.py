"""A system that answers only some languages (``languages:``) on the leaderboard: ranked where it
answered, never pulled down by languages it was not asked. Simulated arenas with known strengths,
fitted by polyrag's Bradley-Terry and leaderboard."""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.arena.bradley_terry import bradley_terry
from polyrag.arena.leaderboard import language_table, leaderboard, short_leaderboard
from tests.helpers.arena import simulate_games

# Five models answering every language, each language its own order; "p" is strong in English.
STRENGTHS = {
    "en": {"a": 1.2, "b": 0.4, "c": 0.0, "d": -0.5, "e": -1.1, "p": 0.8},
    "de": {"a": -0.3, "b": 1.0, "c": 0.3, "d": 0.1, "e": -0.9},
    "hi": {"a": 0.2, "b": -0.4, "c": 0.9, "d": -1.0, "e": 0.5},
}
QUESTIONS = 40


def arena(games_by_language: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The leaderboard of judged models from each language's games (the models those games hold)."""
    per_language = {}
    for k, (lang, games) in enumerate(games_by_language.items()):
        models = sorted(set(games["model_a"]) | set(games["model_b"]))
        bt, boot, _ = bradley_terry(games, models, 0.01, 200, np.random.default_rng(k))
        surrogate = bt[["model", "logit"]].rename(columns={"logit": "predicted_logit"})  # every model judged: unused
        per_language[lang] = language_table(lang, bt, boot, surrogate,
                                            boot.rename(columns={"logit": "predicted_logit"}))
    return leaderboard(per_language)


def games_in(lang: str, strengths: dict[str, float]) -> pd.DataFrame:
    return simulate_games(strengths, QUESTIONS, np.random.default_rng(sum(map(ord, lang))))


def losing_every_game(games: pd.DataFrame, model: str, others: list[str]) -> pd.DataFrame:
    """What ``missing: unanswered`` gives a system with empty files: it loses every game it plays."""
    rows = [{"query_id": f"q{q}", "model_a": min(model, other), "model_b": max(model, other), "shown_first": first,
             "verdict": "model_a" if min(model, other) == other else "model_b"}
            for q in range(QUESTIONS) for other in others for first in (model, other)]
    return pd.concat([games, pd.DataFrame(rows)], ignore_index=True)


def ranked_where_it_answered(table: pd.DataFrame, by_language: pd.DataFrame, model: str, languages: list[str]) -> bool:
    """The criterion: its overall score is its mean arena logit over the languages it answers (so
    never below what it earns there), and those are the languages the table says it is ranked on."""
    row = table.set_index("model").loc[model]
    own = by_language[(by_language["model"] == model) & by_language["lang"].isin(languages)]["arena_logit"]
    return bool(np.isclose(row["score"], own.mean()) and row.get("languages") == ",".join(languages))


def test_an_english_only_system_is_ranked_where_it_answered():
    partial = {lang: games_in(lang, {m: s for m, s in strengths.items()}) for lang, strengths in STRENGTHS.items()}
    table, by_language = arena(partial)
    rows = table.set_index("model")
    p = rows.loc["p"]
    # Ranked over English only, said in the table; its other languages are not applicable (empty).
    assert p["languages"] == "en" and rows.loc["a", "languages"] == "en,de,hi"
    assert pd.isna(p["rank_de"]) and pd.isna(p["rank_hi"]) and str(table["rank_de"].dtype) == "Int64"
    assert set(by_language.loc[by_language["model"] == "p", "lang"]) == {"en"}
    en_logit = by_language.query("model == 'p' and lang == 'en'")["arena_logit"].iloc[0]
    assert p["score"] == en_logit  # not below what it earns in English: exactly that
    assert ranked_where_it_answered(table, by_language, "p", ["en"])
    # Its interval is that of its English logit, finite and around its score; its rank range is valid.
    en_row = by_language.query("model == 'p' and lang == 'en'").iloc[0]
    assert np.isfinite([p["ci_low"], p["ci_high"]]).all() and p["ci_low"] < p["score"] < p["ci_high"]
    assert np.isclose([p["ci_low"], p["ci_high"]], [en_row["bt_ci_low"], en_row["bt_ci_high"]], atol=0.05).all()
    assert p["rank_best"] <= p["rank"] <= p["rank_worst"]
    # The English rank it gets when it answers every language, with its English answers' strength
    # in each: the same English arena, so the same English rank (2nd: only a is stronger).
    everywhere = {lang: games_in(lang, {**strengths, "p": STRENGTHS["en"]["p"]}) for lang, strengths in STRENGTHS.items()}
    full_table, _ = arena(everywhere)
    assert p["rank_en"] == full_table.set_index("model").loc["p", "rank_en"] == 2
    # The other languages' arenas are those without it: the same ranks as a run without p.
    without, _ = arena({lang: games_in(lang, STRENGTHS[lang]) if lang != "en" else partial["en"] for lang in STRENGTHS})
    for lang in ("de", "hi"):
        assert rows[f"rank_{lang}"].drop("p").to_dict() == without.set_index("model")[f"rank_{lang}"].drop("p").to_dict()
    assert "languages" in short_leaderboard(table).columns


def test_counting_the_languages_it_was_not_asked_as_lost_fails_the_criterion():
    """The behaviour this replaces: empty files under missing: unanswered, every game in de and hi
    lost. The system falls to the bottom overall although it is second in English."""
    unanswered = {lang: games_in(lang, strengths) for lang, strengths in STRENGTHS.items()}
    others = sorted(STRENGTHS["de"])
    for lang in ("de", "hi"):
        unanswered[lang] = losing_every_game(unanswered[lang], "p", others)
    table, by_language = arena(unanswered)
    p = table.set_index("model").loc["p"]
    assert p["rank_en"] == 2 and p["rank"] == len(table)  # second in English, last overall
    en_logit = by_language.query("model == 'p' and lang == 'en'")["arena_logit"].iloc[0]
    assert p["score"] < en_logit
    assert not ranked_where_it_answered(table, by_language, "p", ["en"])
