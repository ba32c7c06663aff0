"""Style-controlled Bradley-Terry, as Chatbot Arena does it ("Does style influence Chatbot Arena
rankings?", LMSYS, 2024).

A judge may prefer longer answers, or answers with more citations or markup, whatever their
quality. The style-controlled fit explains each game by the two models' strengths and by the
difference in style of the two answers it compared:

    P(model_a's answer wins) = 1 / (1 + exp(-(logit_a - logit_b + sum_k coefficient_k * z_k)))

so a model's style-controlled logit is its strength once the judge's taste for style is
accounted for. The style of an answer (``answer_style``) is how it is presented, never what the
judge is asked to judge:

- ``length_tokens``: its length in tokens of the multilingual-e5 tokenizer (SentencePiece, so
  Chinese or Thai are counted as fairly as English), citation brackets removed;
- ``citations``: the context passages it cites;
- ``markdown_elements``: its markdown headers, list items and bold spans (FastChat's markup
  covariates, summed).

Whether the citations point to relevant passages is quality, which a RAG judge rewards: a
covariate for it would control away part of what is being ranked (the reference judge's
citation score is exactly one minus the share of non-relevant citations). It is reported
beside the fit instead, as each model's mean ``citation_precision`` (``STYLE_DIAGNOSTICS``).

Normalisation as Chatbot Arena's: every covariate is a count and its difference is taken as a
ratio, (a - b) / (a + b + 1), so 300 against 100 tokens weighs like 30 against 10. Each covariate
is then divided by its scale over the games, computed once on all games and kept in every
bootstrap tournament, so a coefficient is the change in log-odds per typical style difference.
One departure: Chatbot Arena also subtracts the mean difference, which is harmless there
because which model is "model_a" is random. Here ``model_a`` is the alphabetically first model
of the pair, so the mean difference is a property of the names and subtracting it would add a
spurious advantage for the first name. The scale is therefore the root mean square of the
differences over the valid games (the standard deviation of the differences taken in both
orientations).

The fit is the L2-penalised logistic regression of ``fit_logits`` with the covariate columns
added to its design matrix: the same penalty on logits and on coefficients (covariates are on a
common scale, and with a large arena it is negligible for both), ties as half a win each, and
logits centred by the penalty. With no style difference the fit is exactly ``fit_logits``'s.
Intervals come from bootstrap tournaments that resample questions with all their games, built
as in ``bradley_terry`` (t-corrected, and joint rank ranges). A model's style cannot be told
apart from its strength when its answers barely vary in style; the fit relies on the spread of
style within models.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from polyrag.answer_parsing import parse_citations, strip_citations
from polyrag.arena.bradley_terry import intervals_and_ranks, model_question_counts
from polyrag.arena.games import tally
from polyrag.errors import DataError
from polyrag.judge.play import shown_text
from polyrag.stats.bootstrap import bootstrap_interval, rank_by, tournament_counts
from polyrag.systems.passages import given_passages, split_by_relevance

log = logging.getLogger(__name__)

STYLE_COVARIATES = ["length_tokens", "citations", "markdown_elements"]  # counts, differenced as (a - b) / (a + b + 1)
STYLE_DIAGNOSTICS = ["citation_precision"]  # reported per model, never controlled for
MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s|^\s*(?:[-*+]|\d+[.)])\s|\*\*[^*\n]+\*\*|__[^_\n]+__", re.MULTILINE)
SHARE_A = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}


def answer_style(questions: pd.DataFrame, answers: pd.DataFrame,
                 count_tokens: Callable[[str], int] | None = None) -> pd.DataFrame:
    """``query_id`` + ``STYLE_COVARIATES`` + ``STYLE_DIAGNOSTICS`` for one model's answers
    (results/answers/{model}/{lang}) to the questions of results/data/{lang}; ``count_tokens``
    defaults to the e5 tokenizer. Citations are those of the passages the answer's system was
    given. ``citation_precision``: the share of its citations that point to a passage labelled
    relevant, among those judged for the question (an unjudged citation is left out); empty for an
    answer citing nothing judged or a question without relevance labels."""
    if count_tokens is None:
        from polyrag.text import e5_token_counter

        count_tokens = e5_token_counter()
    by_id = questions.set_index(questions["query_id"].astype(str))
    rows = []
    # pandas reads a missing answer as nan; shown_text wants None.
    for answer in answers.astype(object).where(answers.notna(), None).to_dict("records"):
        query_id = str(answer["query_id"])
        if query_id not in by_id.index:
            raise DataError(f"answer to question {query_id!r}: no such question in the question data")
        question = by_id.loc[query_id]
        given = given_passages(answer, question)
        docids = [p["docid"] for p in given]
        text = shown_text(answer)
        cited = parse_citations(text, docids)  # what the judge read, parsed answer or raw output
        relevant, non_relevant, _ = split_by_relevance(question, given, cited)
        judged = len(relevant) + len(non_relevant)
        rows.append({"query_id": query_id, "length_tokens": count_tokens(strip_citations(text, docids)),
                     "citations": len(cited), "markdown_elements": len(MARKDOWN.findall(text)),
                     "citation_precision": (len(relevant) / judged
                                            if judged and len(question["relevant_docids"]) else np.nan)})
    return pd.DataFrame(rows, columns=["query_id", *STYLE_COVARIATES, *STYLE_DIAGNOSTICS])


def matchups(games: pd.DataFrame) -> pd.DataFrame:
    """Valid games summed over orders: one row per (question, pair) with ``wins_a``/``wins_b``
    (ties as half a win each). Both orders compared the same two answers, so share a style."""
    valid = games[games["verdict"] != "invalid"]
    share = valid["verdict"].map(SHARE_A)
    summed = valid.assign(wins_a=share, wins_b=1.0 - share).groupby(
        ["query_id", "model_a", "model_b"], as_index=False)[["wins_a", "wins_b"]].sum()
    return summed


def style_differences(pairs: pd.DataFrame, style_by_model: dict[str, pd.DataFrame],
                      covariates: list[str] = STYLE_COVARIATES) -> pd.DataFrame:
    """Per row of ``pairs`` (``query_id, model_a, model_b``): model_a's answer's style minus
    model_b's, as ratios (see the module docstring), before scaling."""
    def side(column: str) -> pd.DataFrame:
        parts = [style.assign(query_id=style["query_id"].astype(str), **{column: model})
                 for model, style in style_by_model.items()]
        table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["query_id", column, *covariates])
        found = pairs[["query_id", column]].merge(table, on=["query_id", column], how="left", indicator=True)
        missing = found["_merge"] != "both"
        if missing.any():
            row = found[missing].iloc[0]
            raise DataError(f"no answer style for model {row[column]!r} on question {row['query_id']!r} "
                            f"(answers/{row[column]}/... in the results folder): every judged answer needs one")
        return found[covariates].astype(float)

    a, b = side("model_a"), side("model_b")
    return (a - b) / (a + b + 1.0)


def fit_style_controlled(model_design: np.ndarray, covariates: np.ndarray, wins_a: np.ndarray, wins_b: np.ndarray,
                         regularization: float) -> tuple[np.ndarray, np.ndarray]:
    """Centred logits and covariate coefficients of the L2-penalised BT logistic regression on
    ``[model_design | covariates]`` (rows: matchups; model columns +1 for model_a, -1 for model_b)."""
    design = np.hstack([model_design, covariates])
    X = np.vstack([design, design])
    y = np.r_[np.ones(len(design)), np.zeros(len(design))]
    regression = LogisticRegression(C=1 / (2 * regularization), fit_intercept=False, solver="newton-cholesky", tol=1e-10,
                                    max_iter=1000)
    params = regression.fit(X, y, sample_weight=np.r_[wins_a, wins_b]).coef_[0]
    logits = params[:model_design.shape[1]]
    return logits - logits.mean(), params[model_design.shape[1]:]


def style_controlled_bt(games: pd.DataFrame, style_by_model: dict[str, pd.DataFrame], models: list[str],
                        regularization: float, n_bootstrap: int, rng: np.random.Generator,
                        covariates: list[str] = STYLE_COVARIATES) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Style-controlled leaderboard of one judge and language.

    Returns ``(table, coefficients, bootstrap)``: ``table`` has ``model, logit, ci_low, ci_high,
    rank, rank_best, rank_worst, n_questions, model_questions`` (the questions the model played,
    its intervals' clusters), ``citation_precision`` (the mean over the model's answers in
    ``style_by_model`` that cite, a diagnostic); ``coefficients`` has ``covariate,
    coefficient, ci_low, ci_high, scale`` (``coefficient / scale``: log-odds per unit of the
    ratio difference; a covariate that never differs has nan); ``bootstrap`` has ``tournament,
    model, logit``."""
    counts = tally(games, models)
    unplayed = counts.loc[counts["games"] == 0, "model"].tolist()
    if unplayed:
        raise DataError(f"no valid game for {unplayed}: every verdict of their pairs is invalid or missing")
    pairs = matchups(games[games["model_a"].isin(models) & games["model_b"].isin(models)])
    differences = style_differences(pairs, style_by_model, covariates)
    games_per_pair = pairs["wins_a"].to_numpy() + pairs["wins_b"].to_numpy()  # 1 or 2 valid orders
    scale = np.sqrt((differences ** 2).mul(games_per_pair, axis=0).sum() / games_per_pair.sum())
    used = [covariate for covariate in covariates if scale[covariate] > 0]
    if len(used) < len(covariates):
        log.warning("style covariates %s never differ between the answers of a game: left out of the fit",
                    [c for c in covariates if c not in used])
    z = (differences[used] / scale[used]).to_numpy()
    index = {model: i for i, model in enumerate(models)}
    model_design = np.zeros((len(pairs), len(models)))
    model_design[np.arange(len(pairs)), pairs["model_a"].map(index).to_numpy()] = 1.0
    model_design[np.arange(len(pairs)), pairs["model_b"].map(index).to_numpy()] = -1.0
    wins_a, wins_b = pairs["wins_a"].to_numpy(), pairs["wins_b"].to_numpy()
    logit, coefficient = fit_style_controlled(model_design, z, wins_a, wins_b, regularization)

    questions = sorted(games["query_id"].unique())
    question = pairs["query_id"].map({query_id: k for k, query_id in enumerate(questions)}).to_numpy()
    drawn = tournament_counts(len(questions), n_bootstrap, rng)
    fits = [fit_style_controlled(model_design, z, wins_a * counts_q[question], wins_b * counts_q[question], regularization)
            for counts_q in drawn]
    logit_samples = np.array([fit[0] for fit in fits])
    coefficient_samples = np.array([fit[1] for fit in fits]).reshape(n_bootstrap, len(used))
    played = model_question_counts(games, models)  # each model's clusters, as in bradley_terry
    low, high, best, worst = intervals_and_ranks(logit, logit_samples, played)
    table = pd.DataFrame({"model": models, "logit": logit, "ci_low": low, "ci_high": high,
                          "rank": rank_by(logit).astype(int).to_numpy(), "rank_best": best, "rank_worst": worst,
                          "n_questions": len(questions), "model_questions": played,
                          "citation_precision": [style_by_model[model]["citation_precision"].mean() for model in models]}
                         ).sort_values(["rank", "model"], ignore_index=True)
    coefficient_low, coefficient_high = bootstrap_interval(coefficient, coefficient_samples, len(questions))
    fitted = pd.DataFrame({"covariate": used, "coefficient": coefficient, "ci_low": coefficient_low,
                           "ci_high": coefficient_high})
    coefficients = pd.DataFrame({"covariate": covariates, "scale": scale[covariates].to_numpy()}).merge(
        fitted, on="covariate", how="left")[["covariate", "coefficient", "ci_low", "ci_high", "scale"]]
    bootstrap = pd.DataFrame({"tournament": np.repeat(np.arange(n_bootstrap), len(models)),
                              "model": np.tile(models, n_bootstrap), "logit": logit_samples.ravel()})
    return table, coefficients, bootstrap


def style_controlled_ranks(per_language: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """The overall style-controlled ranking from ``{lang: (table, bootstrap)}`` of
    ``style_controlled_bt``, built as ``leaderboard.leaderboard`` builds ``rank`` from the BT
    logits: ``score_style_controlled`` is the mean logit over languages, its interval the
    percentiles of the per-tournament mean, ``rank_style_controlled`` orders by the score. Every
    judged model is ranked over the languages it was judged in: each language's table holds the
    judge's contestants that answer it, so a model that answers some languages (``languages:``) is
    ranked over those, as on the leaderboard. Models ranked by the surrogate are not (it predicts
    raw BT logits, not style-controlled ones); merge it onto the leaderboard with ``how="left"``."""
    tables = [table.set_index("model") for table, _ in per_language.values()]
    models = sorted(set().union(*(table.index for table in tables)))
    # languages x models, NaN where a model was not judged: means over each model's own languages
    logits = np.array([table["logit"].reindex(models).to_numpy(float) for table in tables])
    score = np.nanmean(logits, axis=0)
    samples = np.nanmean([bootstrap.pivot(index="tournament", columns="model", values="logit").reindex(columns=models)
                          .to_numpy() for _, bootstrap in per_language.values()], axis=0)
    played = np.nanmin([table["model_questions" if "model_questions" in table else "n_questions"].reindex(models)
                        .to_numpy(float) for table in tables], axis=0).astype(int)  # each model's fewest questions
    low, high = bootstrap_interval(score, samples, played)
    return pd.DataFrame({"model": models, "score_style_controlled": score, "ci_low_style_controlled": low,
                         "ci_high_style_controlled": high,
                         "rank_style_controlled": rank_by(score).astype(int).to_numpy()})
