"""Retrieval metrics against formulas written out here, on handmade runs and qrels; the bootstrap
intervals against simulations with a known answer."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from scipy.special import stdtrit
from scipy.stats import binom

from polyrag.errors import DataError
from polyrag.retrieval import metrics
from polyrag.retrieval.metrics import (paired_difference, per_query_metrics, retrieval_leaderboard, summarise,
                                       unjudged_at_k)

# --- handmade run and qrels --------------------------------------------------------------------

QRELS = {
    # graded relevance, judged non-relevant (0) documents, relevant ones beyond 5 and beyond 10
    "graded": {"d1": 2, "d2": 0, "d3": 1, "d4": 3, "d5": 0, "d6": 1, "d9": 2},
    # every score tied: the rank column, not pytrec_eval's docid-descending tie break, decides
    "tied": {"a": 1, "b": 0, "z": 2},
    # the first relevant document at position 101: MRR@100 is 0, Recall@100 is 0
    "deep": {"hit": 1},
    # scores ordered against the ranks
    "reversed": {"x1": 1, "x2": 0, "x3": 1},
    # judged but nothing relevant: left out, counted
    "no_relevant": {"n1": 0, "n2": 0},
    # in the qrels, never retrieved: scores 0, counts
    "absent": {"y": 1},
    # short run (fewer than 10 retrieved), ranks with gaps
    "short": {"s2": 1, "s9": 1},
}


def run_rows() -> list[tuple]:
    rows = []
    graded = ["u1", "d3", "d2", "u2", "d6", "d4", "u3", "d5", "u4", "u5", "d1", "u6"]  # d9 never retrieved
    rows += [("graded", doc, rank, 10.0 - rank) for rank, doc in enumerate(graded, start=1)]
    rows += [("tied", doc, rank, 1.0) for rank, doc in enumerate(["a", "b", "c", "z"], start=1)]
    deep = [f"m{k}" for k in range(100)] + ["hit"]
    rows += [("deep", doc, rank, 1.0 / rank) for rank, doc in enumerate(deep, start=1)]
    rows += [("reversed", doc, rank, float(rank)) for rank, doc in enumerate(["x2", "x1", "u", "x3"], start=1)]
    rows += [("no_relevant", doc, rank, 1.0) for rank, doc in enumerate(["n1", "w1", "w2"], start=1)]
    rows += [("only_in_run", doc, rank, 1.0) for rank, doc in enumerate(["p", "q"], start=1)]
    rows += [("short", doc, rank, 1.0) for doc, rank in (("s1", 2), ("s2", 5), ("v", 9), ("s9", 12))]
    return rows


@pytest.fixture
def run() -> pd.DataFrame:
    return pd.DataFrame(run_rows(), columns=["query_id", "docid", "rank", "score"])


def ranked(run: pd.DataFrame, query: str) -> list[str]:
    return list(run[run["query_id"] == query].sort_values("rank")["docid"])


# --- the formulas, written out -----------------------------------------------------------------

def ndcg_at(docs: list[str], judged: dict[str, int], k: int = 10) -> float:
    """trec_eval's ndcg_cut: gain = relevance, discount log2(position + 1), ideal from the qrels."""
    dcg = sum(judged.get(doc, 0) / math.log2(position + 1) for position, doc in enumerate(docs[:k], start=1)
              if judged.get(doc, 0) > 0)
    ideal = sorted((rel for rel in judged.values() if rel > 0), reverse=True)[:k]
    return dcg / sum(rel / math.log2(position + 1) for position, rel in enumerate(ideal, start=1))


def recall_at(docs: list[str], judged: dict[str, int], k: int) -> float:
    relevant = {doc for doc, rel in judged.items() if rel >= 1}
    return len(relevant & set(docs[:k])) / len(relevant)


def reciprocal_rank_at(docs: list[str], judged: dict[str, int], k: int = 100) -> float:
    return next((1 / position for position, doc in enumerate(docs[:k], start=1) if judged.get(doc, 0) >= 1), 0.0)


def unjudged_share(docs: list[str], judged: dict[str, int], k: int = 10) -> float:
    return sum(doc not in judged for doc in docs[:k]) / k


def value(table: pd.DataFrame, query: str, measure: str) -> float:
    return float(table.set_index(["query_id", "measure"]).loc[(query, measure), "value"])


# --- per question -------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["graded", "tied", "deep", "reversed", "short"])
def test_measures_equal_the_formulas(run, query):
    table = per_query_metrics(run, QRELS, "en")
    docs, judged = ranked(run, query), QRELS[query]
    expected = {"nDCG@10": ndcg_at(docs, judged), "Recall@5": recall_at(docs, judged, 5),
                "Recall@100": recall_at(docs, judged, 100), "MRR@100": reciprocal_rank_at(docs, judged),
                "Unjudged@10": unjudged_share(docs, judged)}
    for measure, number in expected.items():
        assert value(table, query, measure) == pytest.approx(number, abs=1e-12), measure


def test_the_handmade_cases_mean_what_they_say(run):
    """The fixture exercises what it claims (so the formula test is not vacuous)."""
    table = per_query_metrics(run, QRELS, "en")
    assert value(table, "graded", "nDCG@10") == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(6) + 3 / math.log2(7))
        / (3 + 2 / math.log2(3) + 2 / math.log2(4) + 1 / math.log2(5) + 1 / math.log2(6)), abs=1e-12)
    assert value(table, "graded", "Recall@5") == pytest.approx(2 / 5)  # d3, d6 of d1, d3, d4, d6, d9
    assert value(table, "graded", "Recall@100") == pytest.approx(4 / 5)
    assert value(table, "graded", "MRR@100") == pytest.approx(1 / 2)
    assert value(table, "graded", "Unjudged@10") == pytest.approx(5 / 10)  # u1..u5
    assert value(table, "deep", "MRR@100") == 0.0 and value(table, "deep", "Recall@100") == 0.0
    assert value(table, "tied", "MRR@100") == 1.0  # a at rank 1, though z sorts first by docid
    assert value(table, "reversed", "MRR@100") == pytest.approx(1 / 2)  # x1 at rank 2 despite the lower score
    # ranks 2, 5, 9, 12 are the first four retrieved (the order counts, as in trec_eval, not the numbers)
    assert value(table, "short", "Recall@5") == 1.0
    assert value(table, "short", "Unjudged@10") == pytest.approx(2 / 10)  # s1 and v, over k
    assert value(table, "short", "Unjudged@10") != pytest.approx(2 / 4)  # not over those retrieved


def test_pytrec_eval_on_the_raw_scores_would_evaluate_another_order(run):
    """Why the module hands pytrec_eval -position: on the run's own scores it re-sorts ties by
    docid descending (z before a) and follows scores against ranks."""
    raw = {query: dict(zip(rows["docid"], rows["score"])) for query, rows in run.groupby("query_id")}
    naive = pytrec_eval.RelevanceEvaluator({q: QRELS[q] for q in ("tied", "reversed")},
                                           {"recip_rank", "ndcg_cut.10"}).evaluate(raw)
    table = per_query_metrics(run, QRELS, "en")
    assert naive["tied"]["recip_rank"] == 1.0 and naive["tied"]["ndcg_cut_10"] != pytest.approx(
        value(table, "tied", "nDCG@10"))
    assert naive["reversed"]["recip_rank"] == 1.0 != value(table, "reversed", "MRR@100")


def test_question_without_relevant_document_is_left_out_and_counted(run):
    table = per_query_metrics(run, QRELS, "en")
    for query in ("no_relevant", "only_in_run"):
        rows = table[table["query_id"] == query]
        assert not rows["has_relevant"].any()
        assert rows.loc[rows["measure"].isin(metrics.MEASURES), "value"].isna().all()
    # its unjudged share is still what it retrieved: w1, w2 unjudged; p, q unjudged (no qrels at all)
    assert value(table, "no_relevant", "Unjudged@10") == pytest.approx(2 / 10)
    assert value(table, "only_in_run", "Unjudged@10") == pytest.approx(2 / 10)
    # pytrec_eval itself scores such a question 0, which would pull the means down
    assert pytrec_eval.RelevanceEvaluator({"no_relevant": QRELS["no_relevant"]}, {"recall.5"}).evaluate(
        {"no_relevant": {"n1": 1.0}})["no_relevant"]["recall_5"] == 0.0
    summary = summarise(table).set_index("measure")
    assert (summary["n_without_relevant"] == 2).all() and (summary["n_questions"] == 6).all()
    assert "2 questions without a relevant document left out" in summary.loc["nDCG@10", "note"]


def test_question_absent_from_the_run_scores_zero_and_counts(run):
    table = per_query_metrics(run, QRELS, "en")
    rows = table[table["query_id"] == "absent"].set_index("measure")
    assert not rows["in_run"].any() and rows["has_relevant"].all()
    assert (rows["value"] == 0.0).all()
    expected = np.mean([recall_at(ranked(run, q), QRELS[q], 5) for q in ("graded", "tied", "deep", "reversed", "short")]
                       + [0.0])
    assert summarise(table).set_index("measure").loc["Recall@5", "mean"] == pytest.approx(expected, abs=1e-12)


def test_unjudged_and_judged_at_k(run):
    shares = unjudged_at_k(run, QRELS, k=5).set_index("query_id")
    for query in ("graded", "tied", "short", "only_in_run"):
        docs, judged = ranked(run, query), QRELS.get(query, {})
        assert shares.loc[query, "Unjudged@5"] == pytest.approx(unjudged_share(docs, judged, 5), abs=1e-12)
        assert shares.loc[query, "Judged@5"] == pytest.approx(sum(d in judged for d in docs[:5]) / 5, abs=1e-12)
    assert shares.loc["graded", "Unjudged@5"] == pytest.approx(2 / 5)  # u1, u2
    assert shares.loc["absent", "Unjudged@5"] == 0.0 and shares.loc["absent", "Judged@5"] == 0.0
    # a run of 3 for a question: the shares sum to 3/5, the positions filled
    assert shares.loc["no_relevant"].sum() == pytest.approx(3 / 5)


def test_per_query_table_shape_and_strings(run):
    table = per_query_metrics(run.assign(query_id=run["query_id"].str.replace("graded", "080")),
                              {("080" if q == "graded" else q): j for q, j in QRELS.items()}, "ar")
    assert list(table.columns) == metrics.PER_QUERY_COLUMNS
    assert "080" in set(table["query_id"]) and (table["lang"] == "ar").all()
    assert len(table) == 8 * 5 and not table.duplicated(["query_id", "measure"]).any()


@pytest.mark.parametrize("change, message", [
    (lambda r: r.assign(docid=range(len(r))), "docid must be strings"),
    (lambda r: pd.concat([r, r.iloc[[0]].assign(rank=99)]), "docid 'u1' more than once"),
    (lambda r: pd.concat([r, r.iloc[[0]].assign(docid="new")]), "question 'graded' has rank 1 more than once"),
    (lambda r: r.assign(rank=r["rank"] - 1), "rank must be integers from 1"),
    (lambda r: r.drop(columns="rank"), "missing columns"),
])
def test_bad_runs_stop_with_the_question(run, change, message):
    with pytest.raises(DataError, match=message):
        per_query_metrics(change(run), QRELS, "en")


def test_qrels_with_numpy_ints_as_read_from_parquet(run):
    as_numpy = {query: {doc: np.int64(rel) for doc, rel in judged.items()} for query, judged in QRELS.items()}
    pd.testing.assert_frame_equal(per_query_metrics(run, as_numpy, "en"), per_query_metrics(run, QRELS, "en"))


def test_empty_run_and_empty_qrels():
    empty = pd.DataFrame({"query_id": pd.Series([], dtype=str), "docid": pd.Series([], dtype=str),
                          "rank": pd.Series([], dtype=int), "score": pd.Series([], dtype=float)})
    table = per_query_metrics(empty, {"q": {"d": 1}}, "en")
    assert (table.loc[table["measure"].isin(metrics.MEASURES), "value"] == 0.0).all() and not table["in_run"].any()
    one = pd.DataFrame({"query_id": ["q"], "docid": ["d"], "rank": [1], "score": [1.0]})
    table = per_query_metrics(one, {}, "en")
    assert not table["has_relevant"].any()
    row = summarise(table).iloc[0]
    assert np.isnan(row["mean"]) and row["n_questions"] == 0 and row["n_without_relevant"] == 1
    assert "no question with a relevant document" in row["note"]


def test_bad_qrels_stop():
    run = pd.DataFrame({"query_id": ["q"], "docid": ["d"], "rank": [1], "score": [1.0]})
    with pytest.raises(DataError, match="must be an int >= 0"):
        per_query_metrics(run, {"q": {"d": -1}}, "en")
    with pytest.raises(DataError, match="not a string"):
        per_query_metrics(run, {"q": {7: 1}}, "en")


# --- intervals ----------------------------------------------------------------------------------

def frame(values: dict[str, np.ndarray], measure: str = "nDCG@10") -> pd.DataFrame:
    """A per-query table from each language's per-question values."""
    return pd.concat([pd.DataFrame({"lang": lang, "query_id": [f"q{k:03d}" for k in range(len(v))], "measure": measure,
                                    "value": np.asarray(v, float), "has_relevant": True, "in_run": True})
                      for lang, v in values.items()], ignore_index=True)


def wilson(share: float, n: float, z: float) -> tuple[float, float]:
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_bootstrap_resamples_questions_with_replacement():
    """The bootstrap variance of a mean over n questions drawn with replacement is the values'
    variance (divided by n, not n - 1) over n."""
    values = np.random.default_rng(3).beta(0.5, 2, 25)
    sample = metrics.language_samples(frame({"en": values}), ["nDCG@10"], 40_000, seed=1)["en"]
    assert sample.draws[:, 0].mean() == pytest.approx(values.mean(), abs=0.002)
    assert sample.draws[:, 0].var() == pytest.approx(values.var() / 25, rel=0.03)


def test_interval_is_wilson_at_the_effective_number_of_questions():
    values = np.random.default_rng(4).beta(0.5, 2, 30)
    sample = metrics.language_samples(frame({"en": values}), ["nDCG@10"], 1000, seed=2)["en"]
    mean = values.mean()
    effective = mean * (1 - mean) / (sample.draws[:, 0].var(ddof=1) * 30 / 29)
    row = summarise(frame({"en": values}), seed=2, level=0.9).iloc[0]
    assert (row["lower"], row["upper"]) == pytest.approx(wilson(mean, effective, stdtrit(29, 0.95)), abs=1e-12)
    assert row["level"] == 0.9 and row["n_bootstrap"] == 1000


def test_six_questions_all_found_keep_a_wide_interval():
    """Six questions retrieved at rank 1: not a certain 1 (a percentile bootstrap says [1, 1])."""
    row = summarise(frame({"en": np.ones(6)}, "MRR@100")).iloc[0]
    z = stdtrit(5, 0.975)
    assert row["mean"] == 1.0 and row["upper"] == 1.0
    assert row["lower"] == pytest.approx(6 / (6 + z * z), abs=1e-12)  # Wilson's bound at 6 of 6
    assert "only 6 questions" in row["note"]


def test_same_seed_same_interval_and_another_seed_another():
    values = frame({"en": np.random.default_rng(5).beta(0.5, 2, 40)})
    first, again, other = summarise(values, seed=7), summarise(values, seed=7), summarise(values, seed=8)
    pd.testing.assert_frame_equal(first, again)
    assert first.loc[0, "lower"] != other.loc[0, "lower"]


def within_band(covered: int, trials: int, level: float = 0.95) -> bool:
    """A coverage count consistent with ``level`` at the 99.9% binomial level."""
    low, high = binom.interval(0.999, trials, level)
    return low <= covered <= high


def test_interval_covers_a_known_mean():
    """Recall@5 of questions with one relevant passage each, found with probability 0.8: the
    interval of 20 questions holds 0.8 as often as its level says."""
    rng = np.random.default_rng(6)
    covered = 0
    for repetition in range(200):
        row = summarise(frame({"en": rng.random(20) < 0.8}, "Recall@5"), n_bootstrap=300, seed=repetition).iloc[0]
        covered += row["lower"] <= 0.8 <= row["upper"]
    assert within_band(covered, 200), covered


@pytest.mark.slow
def test_paired_interval_covers_a_known_difference():
    """Two runs on the same questions: both find it (0.6), a only (0.15), b only (0.05):
    mean_a - mean_b = 0.1."""
    rng = np.random.default_rng(7)
    covered = 0
    for repetition in range(200):
        outcome = rng.choice(4, 25, p=[0.6, 0.15, 0.05, 0.2])
        a, b = np.isin(outcome, (0, 1)), np.isin(outcome, (0, 2))
        row = paired_difference(frame({"en": a}), frame({"en": b}), n_bootstrap=300, seed=repetition,
                                n_permutations=200).iloc[0]
        assert row["difference"] == pytest.approx(a.mean() - b.mean(), abs=1e-12)
        covered += row["lower"] <= 0.1 <= row["upper"]
    assert within_band(covered, 200), covered


def test_identical_runs_get_the_bound_of_no_difference_seen():
    """Two runs alike on all 12 questions may still differ elsewhere: by at most Wilson's upper
    bound of 0 of 12."""
    values = frame({"en": np.random.default_rng(8).random(12)})
    row = paired_difference(values, values).iloc[0]
    z = stdtrit(11, 0.975)
    assert row["difference"] == 0.0 and row["upper"] == pytest.approx(z * z / (12 + z * z), abs=1e-12)
    assert row["lower"] == -row["upper"] and row["p_value"] == 1.0


def test_all_languages_row_is_the_macro_average_with_mover():
    rng = np.random.default_rng(9)
    values = {"de": rng.beta(1, 3, 8), "en": rng.beta(2, 2, 30), "th": rng.random(15) < 0.3}
    summary = summarise(frame(values)).set_index("lang")
    languages = summary.drop(index="all")
    assert summary.loc["all", "mean"] == pytest.approx(np.mean([v.mean() for v in values.values()]), abs=1e-12)
    assert summary.loc["all", "lower"] == pytest.approx(
        languages["mean"].mean() - np.sqrt(((languages["mean"] - languages["lower"]) ** 2).sum()) / 3, abs=1e-12)
    assert summary.loc["all", "upper"] == pytest.approx(
        languages["mean"].mean() + np.sqrt(((languages["upper"] - languages["mean"]) ** 2).sum()) / 3, abs=1e-12)
    assert summary.loc["all", "n_questions"] == 53


def test_paired_comparison_needs_the_same_questions():
    a = frame({"en": np.ones(10)})
    b = frame({"en": np.ones(11)})
    with pytest.raises(DataError, match="not the same questions"):
        paired_difference(a, b)
    with pytest.raises(DataError, match="different languages"):
        paired_difference(a, frame({"de": np.ones(10)}))


# --- leaderboard --------------------------------------------------------------------------------

def test_leaderboard_rows_columns_and_names():
    rng = np.random.default_rng(10)
    found = rng.random((2, 40))
    by_run = {"NA": frame({"de": found[0] < 0.9, "en": found[1] < 0.9}),
              "080": frame({"de": found[0] < 0.5, "en": found[1] < 0.5}),
              "bm25": frame({"de": found[0] < 0.5, "en": found[1] < 0.5})}
    table = retrieval_leaderboard(by_run, n_bootstrap=300)
    assert len(table) == 3 * 3 and set(table["lang"]) == {"de", "en", "all"}
    assert set(table["model"]) == {"NA", "080", "bm25"}  # names stay strings
    assert {"nDCG@10", "nDCG@10_lower", "nDCG@10_upper", "rank", "rank_best", "rank_worst"} <= set(table.columns)
    for lang, rows in table.groupby("lang"):
        rows = rows.set_index("model")
        assert rows.loc["NA", "rank"] == 1 and rows.loc["080", "rank"] == rows.loc["bm25", "rank"] == 2
        # a clear gap is claimed, identical runs are not ordered
        assert (rows.loc["NA", "rank_best"], rows.loc["NA", "rank_worst"]) == (1, 1)
        assert (rows.loc["bm25", "rank_best"], rows.loc["bm25", "rank_worst"]) == (2, 3)
    summary = summarise(by_run["NA"], n_bootstrap=300).set_index(["lang", "measure"])
    row = table[(table["model"] == "NA") & (table["lang"] == "all")].iloc[0]
    assert (row["nDCG@10"], row["nDCG@10_lower"], row["nDCG@10_upper"]) == pytest.approx(
        tuple(summary.loc[("all", "nDCG@10"), ["mean", "lower", "upper"]]), abs=1e-12)


def test_leaderboard_needs_the_same_questions_and_a_known_rank_measure():
    with pytest.raises(DataError, match="not the same questions"):
        retrieval_leaderboard({"a": frame({"en": np.ones(10)}), "b": frame({"en": np.ones(9)})})
    with pytest.raises(DataError, match="rank_measure"):
        retrieval_leaderboard({"a": frame({"en": np.ones(10)})}, rank_measure="MAP")


def test_equal_systems_are_rarely_ordered():
    """Four systems of equal quality on 12 questions: the leaderboard claims an order in at most
    5% of draws."""
    rng = np.random.default_rng(11)
    claimed = 0
    for repetition in range(40):
        chance = rng.random(12)
        by_run = {f"s{k}": frame({"en": np.where(rng.random(12) < chance, rng.random(12), 0.0)}) for k in range(4)}
        table = retrieval_leaderboard(by_run, n_bootstrap=200, seed=repetition, n_permutations=500)
        claimed += bool(((table["rank_best"] > 1) | (table["rank_worst"] < 4)).any())
    assert claimed <= binom.ppf(0.999, 40, 0.05), claimed


def test_rank_ranges_are_narrower_than_holm_adjusted_pairwise_randomization_tests():
    """Eight systems on 30 questions, each finding a relevant passage 10% less often than the one
    before: the joint max-|t| stepdown (the arena's method) orders more pairs than Holm's
    adjustment of each pair's randomization test (computed here with meta_eval's test), and never
    a pair in the wrong direction."""
    from polyrag.meta_eval.statistics import holm, paired_permutation_test

    widths, holm_widths = [], []
    for repetition in range(6):
        rng = np.random.default_rng(100 + repetition)
        chance = rng.beta(1, 1.5, 30)
        values = {f"s{k}": np.where(rng.random(30) < chance * (1 - 0.1 * k), rng.beta(2, 1.2, 30), 0.0) for k in range(8)}
        table = retrieval_leaderboard({name: frame({"en": v}) for name, v in values.items()}, n_bootstrap=200,
                                      seed=repetition, n_permutations=1000).set_index("model").loc[list(values)]
        widths.append((table["rank_worst"] - table["rank_best"]).mean())
        names = list(values)
        pairs = [(i, j) for i in range(8) for j in range(i + 1, 8)]
        p = np.array([paired_permutation_test(values[names[i]], values[names[j]], np.zeros(30, int), np.arange(30), 1000,
                                              np.random.default_rng(k))[1] for k, (i, j) in enumerate(pairs)])
        ahead = np.zeros((8, 8), bool)
        for (i, j), reject in zip(pairs, holm(p) < 0.05):
            difference = values[names[i]].mean() - values[names[j]].mean()
            ahead[i, j], ahead[j, i] = reject and difference > 0, reject and difference < 0
        holm_widths.append(np.mean((8 - ahead.sum(axis=1)) - (1 + ahead.sum(axis=0))))
        means = np.array([v.mean() for v in values.values()])
        order = pd.Series(-means).rank(method="min").to_numpy()
        assert ((table["rank_best"].to_numpy() <= order) & (order <= table["rank_worst"].to_numpy())).all()
    assert np.mean(widths) < np.mean(holm_widths) - 0.1, (widths, holm_widths)
