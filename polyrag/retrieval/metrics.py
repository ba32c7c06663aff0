"""Retrieval metrics of a run against qrels: per question, per language with intervals, paired
comparisons of two runs, and the retrieval leaderboard.

Inputs
------
A *run* is a DataFrame ``query_id`` (str), ``docid`` (str), ``rank`` (int, 1-based), ``score``
(float). Its order is ``rank`` within a question; ``score`` is never read. *Qrels* are
``{query_id: {docid: relevance}}``, relevance an int >= 0 (0: judged non-relevant). A retrieved
docid absent from its question's qrels is *unjudged*.

Measures (one value per question)
---------------------------------
pytrec_eval (trec_eval 9) computes the first four, at relevance level 1:

- ``nDCG@10``: trec_eval's ``ndcg_cut.10``: gain = the graded relevance itself (not 2^rel - 1),
  discount 1 / log2(1 + position), divided by the same sum over the qrels' documents sorted by
  relevance (the ideal ranking), both over the first 10 positions.
- ``Recall@5``, ``Recall@100``: relevant documents (relevance >= 1) among the first k retrieved,
  over all relevant documents in the qrels.
- ``MRR@100``: per question the reciprocal rank of the first relevant document among the first
  100 (0 if none); its mean is the MRR. trec_eval's ``recip_rank`` has no cutoff, so the run is
  cut at 100 first and runs retrieved to different depths compare.
- ``Unjudged@10`` (``unjudged_at``): the share of the first 10 positions holding a docid absent
  from the question's qrels, over 10 (as ir-measures' ``Judged@k`` divides by k; a run shorter
  than 10 leaves positions that count as neither). It says how much of a metric rests on
  passages nobody judged: pytrec_eval counts them non-relevant, like judged 0s, and this module
  never counts them relevant. :func:`unjudged_at_k` also gives ``Judged@k``.
- ``InLanguage@10`` (given each retrieved passage's language): the share of the first 10 positions
  holding a passage in the question's language, over 10 as ``Unjudged@10``. A run over the
  question's own corpus scores 1 wherever it retrieved 10; over another language's 0; over a pooled
  corpus it says how much of what a generator would read is in the question's language (BERGEN's
  multilingual datastores).

pytrec_eval sorts a question's documents by score and breaks ties by docid *descending*, so it is
given each document's -position as its score: the run's own order is what is evaluated, whatever
its scores (tied or not).

Questions are those of the qrels and of the run together. A question with no relevant document
in the qrels (all judged 0, or absent from the qrels) has no recall or nDCG (0/0); pytrec_eval
0.5.11 scores it 0, which would pull every mean down. Here its measures are NaN with
``has_relevant`` false, and every summary leaves it out and reports how many it left out
(``n_without_relevant``). A question of the qrels that the run does not retrieve for scores 0
and counts (``in_run`` false).

Intervals (what they are and why)
---------------------------------
The interval of a measure's mean over a language's questions (the population: questions like
these) comes from a question bootstrap: questions are drawn with replacement ``n_bootstrap``
times (default 1,000), seeded by ``seed`` and the language, the same draws for every run and
measure of a language. Every measure lies in [0, 1], and a mean of [0, 1] values varies at most
as a share of 0/1 outcomes does, m(1 - m)/n. The bootstrap variance of the mean (times
n/(n - 1), the unbiased variance of a mean over n draws) gives the *effective number of
questions* n_eff = m(1 - m) / variance (more than n when questions vary less than 0/1 outcomes),
and the interval is Wilson's score interval at n_eff with the Student t(n - 1) quantile at
``level`` (default 0.95): a share's interval built for small counts, with the variance taken
from the bootstrap. Where every question scores the same (all 0, all 1), the data say nothing
of the spread and n_eff = n, the widest a [0, 1] mean needs.

The percentile interval of the same bootstrap (the textbook choice) covered 0.46 at 6
questions, 0.70 at 12 and 0.89 at 30 where the values are skewed (Recall@5 near 0.9, nDCG@10 with
90% zeros; benchmarks/bench_coverage.py, 1,000 seeds a cell): six questions all found at rank 1
give a zero-width interval at 1. The t-corrected bootstrap interval of the arena
(``stats.bootstrap.bootstrap_interval``) did no better there (0.48, 0.71, 0.90: the same zero width). This
interval covered 0.94-1.00 in every simulated setting from 6 to 200 questions, conservative
(0.96-1.00) at 6 and 12 where the t(n - 1) quantile is large; at 200 questions it is as wide as
the percentile interval (docs/retrieval.md#measured-coverage has the table).

- *All languages* (``lang == "all"``): the macro average, every language weighing the same.
  Languages are resampled independently, so their intervals combine by MOVER (Zou & Donner
  2008), which keeps each one's asymmetry (``polyrag.mars.estimates.pooled`` does the same).
- *Paired difference* of two runs on the same questions: mean_a - mean_b, from the two Wilson
  intervals and the correlation of the two bootstrap means over the same draws (MOVER for
  correlated estimates). When the two runs score alike on every question the correlation is 1
  and MOVER can collapse to a point; the runs may still differ on questions not drawn, by at
  most the mean |difference|, whose Wilson bound at n questions (0 of n) is the interval then.
- *Rank ranges* in the leaderboard: ``rank`` orders the systems by the mean of the ranking
  measure; system i is *surely ahead* of j when the simultaneous interval of their difference lies
  above 0 and i's mean is the higher: the max-|t| stepdown over all pairs of every rank range
  polyrag prints (``polyrag.stats.rank_ranges``), its joint law under no difference from
  ``n_permutations`` randomizations that shuffle the systems' values within each question (each
  language shuffled on its own for the macro average). ``rank_best`` = 1 + the systems surely
  ahead of it, ``rank_worst`` = the systems minus those it is surely ahead of, so "rank 2-4" holds
  for all systems at once. The randomization is exact when the systems are alike; a question
  bootstrap of these bounded, skewed values claimed an order among 4 equal systems in 8-12% of
  leaderboards of 12 questions (100 seeds), and Holm-adjusted pairwise randomization tests were
  wider (docs/intervals.md#joint-rank-ranges).

Fewer than ``MIN_BOOTSTRAP_QUESTIONS`` (10) questions are flagged in ``note`` (as the arena
flags them); the interval there is still the one above, which covered (conservatively) at 6
questions. One question gives the interval [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytrec_eval
from scipy.special import stdtrit

from polyrag.errors import DataError
from polyrag.meta_eval.statistics import paired_permutation_test
from polyrag.seeds import rng_for
from polyrag.stats.bootstrap import MIN_BOOTSTRAP_QUESTIONS, rank_by, tournament_counts
from polyrag.stats.rank_ranges import Clusters
from polyrag.stats.rank_ranges import rank_ranges as simultaneous_rank_ranges
from polyrag.stats.clustered_intervals import wilson_interval

#: the relevance measures and the pytrec_eval names they come from
PYTREC_MEASURES = {"nDCG@10": "ndcg_cut_10", "Recall@5": "recall_5", "Recall@100": "recall_100",
                   "MRR@100": "recip_rank"}
MEASURES = tuple(PYTREC_MEASURES)
#: the run is cut here before pytrec_eval sees it: the deepest cutoff of MEASURES (MRR@100)
DEPTH = 100
RUN_COLUMNS = ["query_id", "docid", "rank", "score"]
#: The share of the first 10 retrieved in the question's language (given the passages' languages).
IN_LANGUAGE = "InLanguage@10"
PER_QUERY_COLUMNS = ["lang", "query_id", "measure", "value", "has_relevant", "in_run"]
ALL_LANGUAGES = "all"


# --- per question -----------------------------------------------------------------------------

def check_strings(values: pd.Series, what: str) -> None:
    """Names stay strings: a docid read as a number (080 -> 80) cannot be matched to its qrels."""
    bad = values[~values.map(lambda value: isinstance(value, str))]
    if len(bad):
        raise DataError(f"{what} must be strings; found {bad.iloc[0]!r} ({type(bad.iloc[0]).__name__}) "
                        f"in row {bad.index[0]}")


def ranked_docids(run: pd.DataFrame) -> dict[str, list[str]]:
    """Each question's docids in the run's order (by ``rank``), after checking the run: its
    columns, string names, ranks >= 1, no docid or rank twice in a question."""
    missing = [column for column in RUN_COLUMNS if column not in run.columns]
    if missing:
        raise DataError(f"run: missing columns {missing}; a run has {RUN_COLUMNS}")
    check_strings(run["query_id"], "run query_id")
    check_strings(run["docid"], "run docid")
    if not pd.api.types.is_integer_dtype(run["rank"]) or (run["rank"] < 1).any():
        raise DataError("run: rank must be integers from 1")
    for key in ("docid", "rank"):
        repeated = run.duplicated(["query_id", key], keep=False)
        if repeated.any():
            row = run[repeated].iloc[0]
            shown = repr(row[key]) if isinstance(row[key], str) else int(row[key])
            raise DataError(f"run: question {row['query_id']!r} has {key} {shown} more than once")
    ordered = run.sort_values(["query_id", "rank"], kind="stable")
    return {query: list(docids) for query, docids in ordered.groupby("query_id", sort=True)["docid"]}


def check_qrels(qrels: dict[str, dict[str, int]]) -> None:
    for query, judged in qrels.items():
        if not isinstance(query, str):
            raise DataError(f"qrels: query id {query!r} is not a string")
        for docid, relevance in judged.items():
            if not isinstance(docid, str):
                raise DataError(f"qrels: question {query!r}: docid {docid!r} is not a string")
            if not isinstance(relevance, (int, np.integer)) or isinstance(relevance, bool) or relevance < 0:
                raise DataError(f"qrels: question {query!r}, docid {docid!r}: relevance {relevance!r} "
                                "must be an int >= 0")


def has_relevant_document(judged: dict[str, int]) -> bool:
    return any(relevance >= 1 for relevance in judged.values())


def pytrec_scores(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """pytrec_eval's measures of the questions of ``qrels`` that the run retrieves for. Scores are
    -position, so pytrec_eval's own sort (by score, ties by docid descending) keeps the run's order."""
    run = {query: {docid: -float(position) for position, docid in enumerate(ranked[query][:DEPTH])}
           for query in qrels if ranked.get(query)}
    # pytrec_eval takes Python ints only (qrels read from Parquet hold numpy ints)
    judged = {query: {docid: int(relevance) for docid, relevance in docs.items()} for query, docs in qrels.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10", "recall.5,100", "recip_rank"})
    return evaluator.evaluate(run)


def unjudged_at_k(run: pd.DataFrame, qrels: dict[str, dict[str, int]], k: int = 10) -> pd.DataFrame:
    """Per question of the run or the qrels: ``Unjudged@k`` and ``Judged@k``, the shares of the
    first k positions holding a docid absent from / present in the question's qrels, each over
    k (ir-measures' Judged@k). Their sum is min(k, retrieved) / k."""
    check_qrels(qrels)
    ranked = ranked_docids(run)
    rows = []
    for query in sorted(set(qrels) | set(ranked)):
        top = ranked.get(query, [])[:k]
        judged = sum(docid in qrels.get(query, {}) for docid in top)
        rows.append((query, (len(top) - judged) / k, judged / k))
    return pd.DataFrame(rows, columns=["query_id", f"Unjudged@{k}", f"Judged@{k}"])


def per_query_metrics(run: pd.DataFrame, qrels: dict[str, dict[str, int]], lang: str,
                      unjudged_at: int = 10, languages=None) -> pd.DataFrame:
    """The measures of ``run`` against ``qrels`` for one language, one row per (question,
    measure): ``lang, query_id, measure, value, has_relevant, in_run``. Measures: ``MEASURES``
    and ``Unjudged@{unjudged_at}``, and ``InLanguage@10`` when ``languages`` gives each row of the
    run its passage's language (``corpus.question_docids``), the question's being ``lang``. A
    question without a relevant document has NaN values (``has_relevant`` false); one the run did
    not retrieve for scores 0 (``in_run`` false)."""
    check_qrels(qrels)
    ranked = ranked_docids(run)
    in_language = None
    if languages is not None:
        if len(languages) != len(run):
            raise DataError(f"run: {len(languages)} passage languages for {len(run)} rows")
        shown = run.assign(_same=[language == lang for language in languages])
        shown = shown.sort_values(["query_id", "rank"], kind="stable")
        in_language = shown.groupby("query_id", sort=False)["_same"].agg(lambda same: same.iloc[:10].sum() / 10)
    questions = sorted(set(qrels) | set(ranked))
    with_relevant = {query: qrels[query] for query in questions
                     if query in qrels and has_relevant_document(qrels[query])}
    scores = pytrec_scores(ranked, with_relevant)
    unjudged = unjudged_at_k(run, qrels, unjudged_at).set_index("query_id")[f"Unjudged@{unjudged_at}"]
    rows = []
    for query in questions:
        relevant, in_run = query in with_relevant, bool(ranked.get(query))
        for measure, name in PYTREC_MEASURES.items():
            value = scores.get(query, {}).get(name, 0.0) if relevant else np.nan
            rows.append((lang, query, measure, value, relevant, in_run))
        rows.append((lang, query, f"Unjudged@{unjudged_at}", unjudged[query], relevant, in_run))
        if in_language is not None:
            rows.append((lang, query, IN_LANGUAGE, float(in_language.get(query, 0.0)), relevant, in_run))
    return pd.DataFrame(rows, columns=PER_QUERY_COLUMNS)


# --- intervals --------------------------------------------------------------------------------

@dataclass
class LanguageSample:
    """One run's questions with a relevant document in one language: ``values`` (questions x
    measures) and the bootstrap means of each measure (draws x measures)."""

    query_ids: list[str]
    values: np.ndarray
    draws: np.ndarray
    n_without_relevant: int


def question_draws(n_questions: int, n_bootstrap: int, seed: int, lang: str) -> np.ndarray:
    """How often each question is drawn in each bootstrap resample (draws x questions): the same
    for every run and measure of a language, so paired comparisons share them."""
    if n_bootstrap < 2:
        raise ValueError(f"n_bootstrap must be at least 2, got {n_bootstrap}")
    return tournament_counts(n_questions, n_bootstrap, rng_for(seed, "retrieval-bootstrap", lang))


def language_samples(per_query: pd.DataFrame, measures: list[str], n_bootstrap: int,
                     seed: int) -> dict[str, LanguageSample]:
    """Per language of ``per_query`` (``per_query_metrics`` rows), its questions with a relevant
    document, their values of ``measures`` and the bootstrap means."""
    missing = [column for column in PER_QUERY_COLUMNS if column not in per_query.columns]
    if missing:
        raise DataError(f"per-query metrics: missing columns {missing}")
    samples = {}
    for lang, rows in per_query.groupby("lang", sort=True):
        counted = rows[rows["has_relevant"]]
        if counted.duplicated(["query_id", "measure"]).any():
            raise DataError(f"per-query metrics of {lang}: a (question, measure) appears twice")
        values = counted.pivot(index="query_id", columns="measure", values="value").sort_index()
        absent = [measure for measure in measures if measure not in values.columns]
        if absent and len(values):
            raise DataError(f"per-query metrics of {lang}: no values of {absent}")
        values = values.reindex(columns=measures).to_numpy(float)
        if np.isnan(values).any():
            raise DataError(f"per-query metrics of {lang}: a question with a relevant document has no value")
        n = len(values)
        draws = (question_draws(n, n_bootstrap, seed, lang) @ values / n if n
                 else np.empty((n_bootstrap, len(measures))))
        samples[lang] = LanguageSample(sorted(counted["query_id"].unique()), values, draws,
                                       int(rows.loc[~rows["has_relevant"], "query_id"].nunique()))
    return samples


def t_quantile(n_questions: int, level: float) -> float:
    return float(stdtrit(n_questions - 1, 0.5 + level / 2))


def mean_interval(values: np.ndarray, draws: np.ndarray, level: float) -> tuple[float, float, float]:
    """(mean, lower, upper) of [0, 1] ``values`` over questions: Wilson's interval at the
    effective number of questions with the t(n - 1) quantile (module docstring)."""
    n = len(values)
    if n == 0:
        return np.nan, np.nan, np.nan
    mean = float(values.mean())
    if n == 1:
        return mean, 0.0, 1.0
    variance = draws.var(ddof=1) * n / (n - 1)
    alike = np.ptp(values) == 0 or variance <= 0  # no spread seen: the 0/1 bound
    effective = n if alike else mean * (1 - mean) / variance
    low, high = wilson_interval(mean, effective, t_quantile(n, level))
    return mean, max(low, 0.0), min(high, 1.0)


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, 0 where either does not vary (no evidence of a shared part)."""
    if np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def mover_difference(first: tuple[float, float, float], second: tuple[float, float, float],
                     r: float) -> tuple[float, float, float]:
    """(difference, lower, upper) of two correlated estimates, each (value, lower, upper): MOVER
    (Zou & Donner 2008), their correlation ``r``."""
    (m1, l1, u1), (m2, l2, u2) = first, second
    below = (m1 - l1) ** 2 + (u2 - m2) ** 2 - 2 * r * (m1 - l1) * (u2 - m2)
    above = (u1 - m1) ** 2 + (m2 - l2) ** 2 - 2 * r * (u1 - m1) * (m2 - l2)
    return m1 - m2, m1 - m2 - np.sqrt(max(below, 0.0)), m1 - m2 + np.sqrt(max(above, 0.0))


def macro_interval(estimates: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(mean, lower, upper) of the mean of independent estimates (each value, lower, upper),
    every one weighing the same: MOVER."""
    value, low, high = (np.array(column, float) for column in zip(*estimates))
    k = len(value)
    return (float(value.mean()), float(value.mean() - np.sqrt(np.sum((value - low) ** 2)) / k),
            float(value.mean() + np.sqrt(np.sum((high - value) ** 2)) / k))


def paired_interval(a: LanguageSample, b: LanguageSample, column: int, level: float) -> tuple[float, float, float]:
    """(mean_a - mean_b, lower, upper) of one measure on the same questions (module docstring)."""
    values_a, values_b = a.values[:, column], b.values[:, column]
    n = len(values_a)
    if n == 0:
        return np.nan, np.nan, np.nan
    difference = float(values_a.mean() - values_b.mean())
    if n == 1:
        return difference, -1.0, 1.0
    if np.array_equal(values_a, values_b):
        # alike on every question: |difference| is at most the mean |a - b|, 0 of n observed
        bound = wilson_interval(0.0, n, t_quantile(n, level))[1]
        return difference, -bound, bound
    return mover_difference(mean_interval(values_a, a.draws[:, column], level),
                            mean_interval(values_b, b.draws[:, column], level),
                            correlation(a.draws[:, column], b.draws[:, column]))


def column_mean(sample: LanguageSample, column: int) -> float:
    return float(sample.values[:, column].mean()) if len(sample.values) else np.nan


def randomization_test(a: dict[str, LanguageSample], b: dict[str, LanguageSample], langs: list[str], column: int,
                       n_permutations: int, rng: np.random.Generator) -> float:
    """Two-sided p-value of a paired randomization test that runs a and b have the same mean of
    one measure over ``langs`` (the macro average when several): each question's pair of values
    is swapped with probability 1/2 (``meta_eval.statistics.paired_permutation_test``, each
    language a group weighing the same, each question a cluster)."""
    values_a = np.concatenate([a[lang].values[:, column] for lang in langs])
    values_b = np.concatenate([b[lang].values[:, column] for lang in langs])
    if any(len(a[lang].values) == 0 for lang in langs):
        return np.nan
    groups = np.repeat(np.arange(len(langs)), [len(a[lang].values) for lang in langs])
    return paired_permutation_test(values_a, values_b, groups, np.arange(len(values_a)), n_permutations, rng)[1]


def same_questions(a: dict[str, LanguageSample], b: dict[str, LanguageSample], names: tuple[str, str]) -> None:
    """Paired comparisons need the same languages and the same questions with a relevant document."""
    if set(a) != set(b):
        raise DataError(f"{names[0]} and {names[1]} cover different languages: {sorted(a)} and {sorted(b)}")
    for lang in a:
        if a[lang].query_ids != b[lang].query_ids:
            only = sorted(set(a[lang].query_ids) ^ set(b[lang].query_ids))
            raise DataError(f"{names[0]} and {names[1]} in {lang}: not the same questions with a relevant "
                            f"document ({len(only)} differ, e.g. {only[:3]}); compare runs against the same qrels")


def note(n_questions: int, n_without_relevant: int) -> str:
    parts = []
    if n_questions == 0:
        parts.append("no question with a relevant document")
    elif n_questions < MIN_BOOTSTRAP_QUESTIONS:
        parts.append(f"only {n_questions} questions: the interval rests on few questions")
    if n_without_relevant:
        parts.append(f"{n_without_relevant} questions without a relevant document left out")
    return "; ".join(parts)


def measures_of(per_query: pd.DataFrame) -> list[str]:
    """The measures of a per-query table, those of ``MEASURES`` first."""
    present = list(pd.unique(per_query["measure"]))
    return [m for m in MEASURES if m in present] + sorted(m for m in present if m not in MEASURES)


# --- summaries --------------------------------------------------------------------------------

def summarise(per_query: pd.DataFrame, n_bootstrap: int = 1000, level: float = 0.95,
              seed: int = 0) -> pd.DataFrame:
    """One row per (language, measure) of one run's ``per_query_metrics`` (several languages
    concatenated), and per measure an ``all`` row (the macro average) when there are several
    languages: ``lang, measure, mean, lower, upper, level, n_questions, n_without_relevant,
    n_bootstrap, note``. ``n_questions``: questions with a relevant document, those the mean is
    over."""
    measures = measures_of(per_query)
    samples = language_samples(per_query, measures, n_bootstrap, seed)
    rows = []
    for lang, sample in samples.items():
        n, without = len(sample.query_ids), sample.n_without_relevant
        for column, measure in enumerate(measures):
            rows.append((lang, measure, *mean_interval(sample.values[:, column], sample.draws[:, column], level),
                         n, without, note(n, without)))
    if len(samples) > 1:
        n = sum(len(s.query_ids) for s in samples.values())
        without = sum(s.n_without_relevant for s in samples.values())
        for column, measure in enumerate(measures):
            estimates = [mean_interval(s.values[:, column], s.draws[:, column], level) for s in samples.values()]
            rows.append((ALL_LANGUAGES, measure, *macro_interval(estimates), n, without,
                         f"macro average over {len(samples)} languages"))
    table = pd.DataFrame(rows, columns=["lang", "measure", "mean", "lower", "upper", "n_questions",
                                        "n_without_relevant", "note"])
    return table.assign(level=level, n_bootstrap=n_bootstrap)[
        ["lang", "measure", "mean", "lower", "upper", "level", "n_questions", "n_without_relevant", "n_bootstrap",
         "note"]]


def paired_difference(per_query_a: pd.DataFrame, per_query_b: pd.DataFrame, n_bootstrap: int = 1000,
                      level: float = 0.95, seed: int = 0, names: tuple[str, str] = ("a", "b"),
                      n_permutations: int = 2000) -> pd.DataFrame:
    """Run a minus run b on the same questions, one row per (language, measure) and an ``all``
    row (the macro average of the per-language differences) when there are several languages:
    ``lang, measure, mean_a, mean_b, difference, lower, upper, level, p_value, n_questions,
    note``. ``p_value``: the paired randomization test that both have the same mean."""
    measures = measures_of(per_query_a)
    a = language_samples(per_query_a, measures, n_bootstrap, seed)
    b = language_samples(per_query_b, measures, n_bootstrap, seed)
    same_questions(a, b, names)
    langs = list(a)
    groups = [[lang] for lang in langs] + ([langs] if len(langs) > 1 else [])
    rows = []
    for group in groups:
        where = group[0] if len(group) == 1 else ALL_LANGUAGES
        n = sum(len(a[lang].query_ids) for lang in group)
        for column, measure in enumerate(measures):
            differences = [paired_interval(a[lang], b[lang], column, level) for lang in group]
            p_value = randomization_test(a, b, group, column, n_permutations,
                                         rng_for(seed, "retrieval-paired", where, measure))
            rows.append((where, measure, np.mean([column_mean(a[lang], column) for lang in group]),
                         np.mean([column_mean(b[lang], column) for lang in group]),
                         *(differences[0] if len(group) == 1 else macro_interval(differences)), level, p_value, n,
                         note(n, 0) if len(group) == 1 else f"macro average over {len(group)} languages"))
    return pd.DataFrame(rows, columns=["lang", "measure", "mean_a", "mean_b", "difference", "lower", "upper", "level",
                                       "p_value", "n_questions", "note"])


# --- leaderboard ------------------------------------------------------------------------------

def rank_ranges(samples: dict[str, dict[str, LanguageSample]], systems: list[str], langs: list[str], column: int,
                level: float, n_permutations: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each system's best and worst rank on one measure over ``langs`` (one language, or all of
    them for the macro average), for all systems at once at ``level``: the simultaneous max-|t|
    stepdown of every two systems' difference (``polyrag.stats.rank_ranges``, the arena's method),
    its joint law under no difference from ``n_permutations`` randomizations that shuffle the
    systems' values within each question (module docstring). A language without a question with a
    relevant document orders nothing."""
    k = len(systems)
    if k < 2 or any(len(samples[systems[0]][lang].values) == 0 for lang in langs):
        return np.ones(k, int), np.full(k, k)
    rng = rng_for(seed, "retrieval-ranks", langs[0] if len(langs) == 1 else ALL_LANGUAGES)
    point = np.zeros(k)
    null = np.zeros((n_permutations, k))
    for lang in langs:
        values = np.column_stack([samples[system][lang].values[:, column] for system in systems])  # questions x systems
        point += values.mean(axis=0) / len(langs)
        order = rng.random((n_permutations, *values.shape)).argsort(axis=2)
        null += np.take_along_axis(values[None], order, axis=2).mean(axis=1) / len(langs)
    # the randomization law is exact: no small-sample correction (normal clusters)
    return simultaneous_rank_ranges(point, point + null - null.mean(axis=0), Clusters.normal(k), level)


def retrieval_leaderboard(per_query_metrics_by_run: dict[str, pd.DataFrame], n_bootstrap: int = 1000,
                          level: float = 0.95, seed: int = 0, rank_measure: str = "nDCG@10",
                          n_permutations: int = 2000) -> pd.DataFrame:
    """One row per (system, language) and per system an ``all`` row (the macro average over
    languages): ``model`` (the run: a retriever, or a retriever and reranker; ``model`` as in every
    other table), ``lang, rank, rank_best, rank_worst``, per measure its mean ``{measure}``
    with ``{measure}_lower`` and ``{measure}_upper``, then ``level, n_questions,
    n_without_relevant, note``. Within each language (and ``all``) ``rank`` orders the systems
    by the mean of ``rank_measure`` (ties share the best rank); ``rank_best``..``rank_worst``
    hold for all systems at once at ``level`` (module docstring). Every system must cover the
    same languages and, in each, the same questions with a relevant document (the same qrels)."""
    systems = sorted(per_query_metrics_by_run, key=str)
    measures = measures_of(pd.concat(list(per_query_metrics_by_run.values()), ignore_index=True))
    if rank_measure not in measures:
        raise DataError(f"retrieval leaderboard: rank_measure {rank_measure!r} is not among {measures}")
    samples = {system: language_samples(per_query_metrics_by_run[system], measures, n_bootstrap, seed)
               for system in systems}
    for system in systems[1:]:
        same_questions(samples[systems[0]], samples[system], (str(systems[0]), str(system)))
    langs = sorted(samples[systems[0]]) if systems else []
    groups = [[lang] for lang in langs] + ([langs] if len(langs) > 1 else [])
    tables = [leaderboard_group(samples, systems, group, measures, level, rank_measure, n_permutations, seed)
              for group in groups]
    columns = ["model", "lang", "rank", "rank_best", "rank_worst"] + [
        f"{m}{suffix}" for m in measures for suffix in ("", "_lower", "_upper")] + [
        "level", "n_questions", "n_without_relevant", "note"]
    return pd.concat(tables, ignore_index=True)[columns] if tables else pd.DataFrame(columns=columns)


def leaderboard_group(samples: dict[str, dict[str, LanguageSample]], systems: list[str], langs: list[str],
                      measures: list[str], level: float, rank_measure: str, n_permutations: int,
                      seed: int) -> pd.DataFrame:
    """The leaderboard rows of one language, or of the macro average over ``langs``."""
    rows = []
    for system in systems:
        row = {"model": str(system), "lang": langs[0] if len(langs) == 1 else ALL_LANGUAGES}
        for column, measure in enumerate(measures):
            estimates = [mean_interval(samples[system][lang].values[:, column],
                                       samples[system][lang].draws[:, column], level) for lang in langs]
            mean, low, high = estimates[0] if len(langs) == 1 else macro_interval(estimates)
            row |= {measure: mean, f"{measure}_lower": low, f"{measure}_upper": high}
        n = sum(len(samples[system][lang].query_ids) for lang in langs)
        without = sum(samples[system][lang].n_without_relevant for lang in langs)
        row |= {"level": level, "n_questions": n, "n_without_relevant": without,
                "note": note(n, without) if len(langs) == 1 else f"macro average over {len(langs)} languages"}
        rows.append(row)
    table = pd.DataFrame(rows)
    table["rank"] = rank_by(table[rank_measure]).astype("Int64").array
    column = measures.index(rank_measure)
    table["rank_best"], table["rank_worst"] = rank_ranges(samples, systems, langs, column, level, n_permutations,
                                                          seed)
    return table.sort_values(["rank", "model"], kind="stable")
