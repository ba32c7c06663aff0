"""The leaderboard (polyrag.arena.leaderboard): ranks by the mean logit over languages with that mean's
interval, the short table a reader needs first, and a rank that never contradicts the interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scipy.stats import t as student_t

from polyrag.arena.leaderboard import (language_table, leaderboard, short_leaderboard, with_mars_scores, with_retrieval,
                                       with_systems)


def arena_tables(lang_logits: dict[str, float], unjudged: dict[str, float], n: int = 50, seed: int = 0):
    rng = np.random.default_rng(seed)
    bt = pd.DataFrame({"model": list(lang_logits), "logit": list(lang_logits.values())})
    bt["ci_low"], bt["ci_high"] = bt["logit"] - 0.5, bt["logit"] + 0.5
    bt["n_questions"] = 30
    boot = pd.DataFrame([{"tournament": t, "model": m, "logit": v + rng.normal(0, 0.1)}
                         for t in range(n) for m, v in lang_logits.items()])
    everything = {**lang_logits, **unjudged}
    sur = pd.DataFrame({"model": list(everything), "predicted_logit": [v + 0.01 for v in everything.values()]})
    sur_boot = pd.DataFrame([{"tournament": t, "model": m, "predicted_logit": v + rng.normal(0, 0.1)}
                             for t in range(n) for m, v in everything.items()])
    return bt, boot, sur, sur_boot


EN_LOGITS, DE_LOGITS = {"a": 1.0, "b": 0.0, "c": -1.0}, {"a": -0.2, "b": 0.6, "c": -0.6}


def test_leaderboard_ranks_by_mean_logit_and_its_interval_is_that_of_the_mean():
    en = language_table("en", *arena_tables(EN_LOGITS, {"x": 0.5}))
    de = language_table("de", *arena_tables(DE_LOGITS, {"x": 0.1}))
    table, by_language = leaderboard({"en": en, "de": de})
    rows = table.set_index("model")
    # en: a 1, x 2, b 3, c 4; de: b 1, x 2, a 3, c 4.
    assert rows.loc["a", ["rank_en", "rank_de"]].tolist() == [1, 3]
    assert rows.loc["x", "mean_rank"] == 2.0 and rows.loc["a", "mean_rank"] == 2.0
    assert rows.loc["a", "score"] == pytest.approx(0.4) and rows.loc["x", "score"] == pytest.approx(0.31)
    assert rows.loc["b", "score"] == pytest.approx(0.3)
    assert table["model"].tolist() == ["a", "x", "b", "c"] and table["rank"].tolist() == [1, 2, 3, 4]
    assert not rows.loc["x", "judged"] and rows.loc["a", "judged"]
    # The interval: from the spread of the per-tournament mean over languages, computed here by
    # hand (BT bootstrap for judged models, surrogate samples for x), t-corrected for 30 questions.
    for model, column, tables in (("a", "logit", (1, 1)), ("x", "predicted_logit", (3, 3))):
        draws = [arena_tables(*arguments)[table] for arguments, table in
                 zip(((EN_LOGITS, {"x": 0.5}), (DE_LOGITS, {"x": 0.1})), tables)]
        mean = (draws[0].query("model == @model")[column].to_numpy() + draws[1].query("model == @model")[column].to_numpy()) / 2
        half = student_t.ppf(0.975, 29) * np.sqrt(30 / 29) * mean.std(ddof=1)
        np.testing.assert_allclose(rows.loc[model, ["ci_low", "ci_high"]].to_numpy(float),
                                   [rows.loc[model, "score"] - half, rows.loc[model, "score"] + half])
    x = by_language[by_language["model"] == "x"]
    assert x["bt_logit"].isna().all() and (x["arena_logit"] == x["surrogate_logit"]).all()


def test_the_short_leaderboard_is_what_a_reader_needs_first_and_mars_columns_name_their_languages():
    table, _ = leaderboard({"en": language_table("en", *arena_tables(EN_LOGITS, {"x": 0.5})),
                            "de": language_table("de", *arena_tables(DE_LOGITS, {"x": 0.1}))})
    # MARS scored en only: its pooled ("all") score covers en, which the column says.
    scores = pd.DataFrame([{"model": m, "lang": lang, "metric": "af", "score": 0.8, "ci_low": 0.7, "ci_high": 0.9}
                           for m in ("a", "b", "c", "x") for lang in ("en", "all")])
    detailed = with_mars_scores(table, scores)
    assert set(detailed["mars_languages"]) == {"en"} and detailed["mars_af"].eq(0.8).all()
    short = short_leaderboard(detailed)
    assert list(short.columns) == ["rank", "model", "score", "ci_low", "ci_high", "rank_best", "rank_worst", "judged",
                                   "languages"]
    assert short.equals(detailed[short.columns]) and len(detailed.columns) == 16


def test_leaderboard_rank_never_contradicts_the_interval():
    """`a` wins three languages narrowly and loses the fourth by far: the best mean rank, but its
    interval lies wholly below `b`'s. Ranking by mean rank put it first."""
    narrow = ({"a": 0.1, "b": 0.0, "c": -0.1}, {})
    languages = {"en": narrow, "de": narrow, "es": narrow, "fr": ({"a": -3.0, "b": 3.0, "c": 0.0}, {})}
    table, _ = leaderboard({lang: language_table(lang, *arena_tables(logits, unjudged, seed=k))
                            for k, (lang, (logits, unjudged)) in enumerate(languages.items())})
    rows = table.set_index("model")
    assert rows.loc["a", "mean_rank"] < rows.loc["b", "mean_rank"]  # 1.5 against 1.75
    assert rows.loc["b", "ci_low"] > rows.loc["a", "ci_high"]
    assert rows.loc["b", "rank"] == 1 and rows.loc["a", "rank"] > 1
    # For every pair: an interval wholly above another's means a better rank; the rank lies in its range.
    for i in rows.index:
        assert rows.loc[i, "rank_best"] <= rows.loc[i, "rank"] <= rows.loc[i, "rank_worst"]
        for j in rows.index:
            if rows.loc[i, "ci_low"] > rows.loc[j, "ci_high"]:
                assert rows.loc[i, "rank"] < rows.loc[j, "rank"]


def test_leaderboard_rank_ranges_pool_the_languages_degrees_of_freedom():
    """Two languages of 12 questions, two models whose mean logits differ by 2.23 sds of the
    difference: apart at the Welch-Satterthwaite degrees of freedom of the two languages (22:
    t(22) sqrt(12/11) = 2.17 sds), not at one language's (11: t(11) sqrt(12/11) = 2.30 sds, the
    leaderboard before). The score's interval stays at one language's 11."""
    rng = np.random.default_rng(7)
    noise = {lang: rng.normal(0, 0.1, (4000, 2)) for lang in ("en", "de")}
    mean_noise = (noise["en"] + noise["de"]) / 2
    sd = (mean_noise[:, 0] - mean_noise[:, 1]).std(ddof=1)
    assert student_t.ppf(0.975, 22) * np.sqrt(12 / 11) < 2.23 < student_t.ppf(0.975, 11) * np.sqrt(12 / 11)
    per_language = {}
    for lang, gap in (("en", 2.23 * sd), ("de", 2.23 * sd)):
        logits = {"a": gap / 2, "b": -gap / 2}
        bt = pd.DataFrame({"model": ["a", "b"], "logit": list(logits.values()), "ci_low": 0.0, "ci_high": 0.0,
                           "n_questions": 12, "model_questions": 12})
        boot = pd.DataFrame({"tournament": np.repeat(np.arange(4000), 2), "model": np.tile(["a", "b"], 4000),
                             "logit": (np.array(list(logits.values())) + noise[lang]).ravel()})
        sur = pd.DataFrame({"model": ["a", "b"], "predicted_logit": list(logits.values())})
        per_language[lang] = language_table(lang, bt, boot, sur, boot.rename(columns={"logit": "predicted_logit"}))
    rows = leaderboard(per_language)[0].set_index("model")
    assert rows.loc["a", ["rank_best", "rank_worst"]].tolist() == [1, 1]
    assert rows.loc["b", ["rank_best", "rank_worst"]].tolist() == [2, 2]
    half = student_t.ppf(0.975, 11) * np.sqrt(12 / 11) * mean_noise[:, 0].std(ddof=1)
    assert rows.loc["a", "ci_high"] - rows.loc["a", "score"] == pytest.approx(half)


def test_with_systems_names_each_systems_parts_and_the_share_of_unjudged_citations():
    table = pd.DataFrame({"model": ["b", "a", "c"], "rank": [1, 2, 3]})
    components = {"a": {"generator": "a", "passages": "question"}, "b": {"generator": "a", "passages": "file"},
                  "c": {"generator": "c", "passages": "closed_book"}}
    # b: answers whose citations are 1/2 and 0 unjudged, one answer citing nothing (null); c cites nothing
    features = pd.DataFrame({"model": ["a", "a", "b", "b", "b", "c"],
                             "unjudged_citations": [0.0, 0.0, 0.5, 0.0, None, None]})
    out = with_systems(table, components, features)
    assert out["model"].tolist() == ["b", "a", "c"] and out["rank"].tolist() == [1, 2, 3]
    assert out["generator"].tolist() == ["a", "a", "c"] and out["passages"].tolist() == ["file", "question", "closed_book"]
    assert out["unjudged_citations"].iloc[0] == 0.25 and out["unjudged_citations"].iloc[1] == 0.0
    assert pd.isna(out["unjudged_citations"].iloc[2])  # nothing cited: no share, not 0


def test_with_systems_columns_keep_their_order_when_the_entries_keys_come_sorted():
    # a rule's params reach the script with their keys sorted (rules/common.smk, canonical_params)
    table = pd.DataFrame({"model": ["s"], "rank": [1]})
    components = {"s": dict(sorted({"generator": "g", "passages": "bm25@2", "retriever": "bm25", "reranker": None,
                                    "top_k": 2}.items()))}
    out = with_systems(table, components, pd.DataFrame({"model": ["s"], "unjudged_citations": [0.0]}))
    assert list(out.columns) == ["model", "rank", "generator", "passages", "retriever", "reranker", "top_k",
                                 "unjudged_citations"]


def test_with_retrieval_puts_each_retrieved_systems_run_measures_beside_it():
    table = pd.DataFrame({"model": ["s1", "s2", "g"], "retriever": ["bm25", "bm25", None], "reranker": [None, "ce", None]})
    retrieval = pd.DataFrame({"model": ["bm25", "bm25", "bm25", "bm25+ce", "bm25+ce", "bm25+ce"],
                              "lang": ["en", "de", "all"] * 2,
                              "nDCG@10": [0.5, 0.3, 0.4, 0.7, 0.5, 0.6], "nDCG@10_lower": [0.1] * 6, "nDCG@10_upper": [0.9] * 6,
                              "Recall@5": [0.6, 0.4, 0.5, 0.8, 0.6, 0.7], "Recall@5_lower": [0.2] * 6, "Recall@5_upper": [1.0] * 6})
    runs = {"s1": "bm25", "s2": "bm25+ce"}  # the runs the retrieved systems read
    out = with_retrieval(table, retrieval, runs)
    assert out["retrieval_nDCG@10"].tolist()[:2] == [0.4, 0.6] and pd.isna(out["retrieval_nDCG@10"].iloc[2])
    assert out["retrieval_Recall@5"].tolist()[:2] == [0.5, 0.7] and out["model"].tolist() == ["s1", "s2", "g"]
    one_language = with_retrieval(table, retrieval[retrieval["lang"] == "de"], runs)
    assert one_language["retrieval_nDCG@10"].tolist()[:2] == [0.3, 0.5]


def test_a_mars_score_left_empty_has_an_empty_interval_in_the_leaderboard():
    """A metric no judge could measure (MARS leaves its score empty with the bound [0, 1]) shows
    nothing in the leaderboard: before, mars_lc was empty beside an interval."""
    table, _ = leaderboard({"en": language_table("en", *arena_tables(EN_LOGITS, {}))})
    scores = pd.DataFrame([{"model": m, "lang": lang, "metric": metric, "score": score, "ci_low": low, "ci_high": high}
                           for m in ("a", "b", "c") for lang in ("en", "all")
                           for metric, score, low, high in (("af", 0.8, 0.7, 0.9), ("lc", np.nan, 0.0, 1.0))])
    detailed = with_mars_scores(table, scores).set_index("model")
    assert detailed[["mars_lc", "mars_lc_ci_low", "mars_lc_ci_high"]].isna().all().all()
    assert detailed[["mars_af", "mars_af_ci_low", "mars_af_ci_high"]].eq([0.8, 0.7, 0.9]).all().all()
    assert scores["ci_high"].eq([0.9, 1.0] * 6).all()  # the scores table itself keeps its bound
