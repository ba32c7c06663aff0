"""Bradley-Terry logits with bootstrap intervals over arena questions (MIRAGE-BENCH).

Every tournament, the point fit and each bootstrap alike, is fitted by the same estimator: the
logits that maximise the log-likelihood of the games minus ``regularization * sum(logit**2)`` (choix's
``opt_pairwise`` penalty, a Gaussian prior with variance ``1 / (2 * regularization)``), so a model that
wins or loses every game still gets a finite logit. It is the objective of an L2-regularised logistic
regression without intercept on the pairs (scikit-learn's with ``C = 1 / (2 * regularization)``), maximised
by Newton's method on the win matrices of all bootstrap tournaments at once (``fit_logits_batch``;
the tests check it against scikit-learn, choix and a direct maximum likelihood).
Logits are natural-log strengths with mean 0 (the penalty centres them):
P(i beats j) = 1 / (1 + exp(logit_j - logit_i)).

Intervals (:func:`intervals_and_ranks`). Questions are the sampling unit: every game of a question
shares its passages and answers, so bootstrap tournaments resample whole questions. The interval
of a model's logit is ``logit +- t(q-1) * sqrt(q / (q-1)) * sd``, where ``sd`` is the logit's
standard deviation over the tournaments and ``q`` the number of questions *that model* played
(``model_questions``: questions with at least one valid game of it; its clusters): the bootstrap
variance of a mean over q clusters is (q-1)/q of the unbiased one, and the t quantile carries the
uncertainty of a variance estimated from q clusters. A model that joined a budgeted arena late,
or whose verdicts were mostly invalid, has fewer clusters than the arena's Q questions; with the
arena's Q its interval covered 0.90-0.91 when it played 4 of 12 or 4 of 30 questions.
Percentile intervals of 200 tournaments covered 0.91 at 12 questions (MIRAGE-BENCH's method);
these cover 0.93-0.97 from 12 questions up (``benchmarks/bench_coverage.py``).

``rank_best``..``rank_worst`` hold jointly for every model at the same level: model i is surely
ahead of j when the simultaneous interval of logit_i - logit_j lies above 0, with the bootstrap
max-|t| critical value over all pairs, stepdown, t-corrected at the fewer of the two models'
questions (``polyrag.stats.rank_ranges``, the one home of every rank range), so that "rank 2-4"
is a 95% statement about all models at once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.arena.games import question_outcome_matrices, tally
from polyrag.errors import DataError
from polyrag.stats.bootstrap import MIN_BOOTSTRAP_QUESTIONS, bootstrap_interval, rank_by, tournament_counts
from polyrag.stats.rank_ranges import Clusters, rank_ranges


def fit_logits(wins: np.ndarray, regularization: float) -> np.ndarray:
    """Centred, L2-penalised BT logits from a win matrix (``wins[i, j]``: wins of i over j,
    fractional for ties)."""
    return fit_logits_batch(np.asarray(wins, float)[None], regularization)[0]


def fit_logits_batch(wins: np.ndarray, regularization: float, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """:func:`fit_logits` for a stack of win matrices (tournaments x models x models) at once: the
    same objective as scikit-learn's L2 logistic regression without intercept on the pairs
    (``C = 1 / (2 regularization)``), maximised by Newton's method with step halving, vectorised over
    tournaments (a bootstrap of 1,000 tournaments is one call instead of 1,000 fits). The
    objective is strictly concave (the penalty), so the maximum is unique."""
    wins = np.asarray(wins, float)
    games = wins + wins.transpose(0, 2, 1)
    theta = np.zeros(wins.shape[:2])
    eye = np.eye(wins.shape[1])

    def objective(theta: np.ndarray) -> np.ndarray:
        difference = theta[:, :, None] - theta[:, None, :]
        return -(wins * np.logaddexp(0.0, -difference)).sum(axis=(1, 2)) - regularization * (theta**2).sum(axis=1)

    current = objective(theta)
    for _ in range(max_iter):
        p = 1 / (1 + np.exp(theta[:, None, :] - theta[:, :, None]))  # p[b, i, j] = P(i beats j)
        gradient = (wins - games * p).sum(axis=2) - 2 * regularization * theta
        curvature = games * p * (1 - p)
        hessian = curvature - eye * (curvature.sum(axis=2)[:, :, None] + 2 * regularization)
        step = -np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        scale = np.ones(len(theta))
        for _ in range(30):  # halve the step where the objective would not improve
            candidate = theta + scale[:, None] * step
            value = objective(candidate)
            worse = value < current - 1e-12
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        theta, current = candidate, value
        if np.abs(scale[:, None] * step).max() < tol:
            break
    return theta - theta.mean(axis=1, keepdims=True)


#: ``arena.ties``: a tie is half a win each way (``half``), or its own outcome (``davidson``)
TIE_MODELS = ("half", "davidson")
#: log of Davidson's tie parameter where a tournament has no tie (its maximum is nu = 0)
NO_TIES_LOG_NU = -40.0


def fit_davidson_batch(decisive: np.ndarray, ties: np.ndarray, regularization: float, tol: float = 1e-10,
                       max_iter: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Davidson's (1970) tie model for a stack of tournaments (tournaments x models x models):
    ``P(i beats j) = pi_i / D``, ``P(tie) = nu sqrt(pi_i pi_j) / D``, ``D = pi_i + pi_j + nu
    sqrt(pi_i pi_j)``, ``pi = exp(logit)``; ``decisive[b, i, j]`` outright wins of i over j,
    ``ties[b, i, j]`` (symmetric) ties of i and j. Maximises the log-likelihood minus
    ``regularization * sum(logit**2)`` (the penalty of :func:`fit_logits`; the tie parameter
    ``log nu`` is not penalised) by Newton's method on (logits, log nu) with step halving,
    vectorised over tournaments. Returns the centred logits (tournaments x models) and ``log
    nu`` per tournament (``NO_TIES_LOG_NU`` where it has no tie: nu = 0, Bradley-Terry on the
    decisive games). P(i beats j | not a tie) is the Bradley-Terry probability of these logits."""
    decisive, ties = np.asarray(decisive, float), np.asarray(ties, float)
    batch, k = decisive.shape[:2]
    first, second = np.triu_indices(k, k=1)
    w_first, w_second, t = decisive[:, first, second], decisive[:, second, first], ties[:, first, second]
    n = w_first + w_second + t
    tied = t.sum(axis=1) > 0  # tournaments with a tie: log nu is fitted
    design = np.zeros((len(first), k))
    design[np.arange(len(first)), first], design[np.arange(len(first)), second] = 1.0, -1.0
    theta = np.zeros((batch, k))
    log_nu = np.where(tied, 0.0, NO_TIES_LOG_NU)

    def probabilities(theta, log_nu):
        half = (theta[:, first] - theta[:, second]) / 2
        terms = np.stack([half, -half, np.broadcast_to(log_nu[:, None], half.shape)])  # first, second, tie
        log_p = terms - np.logaddexp.reduce(terms, axis=0)
        return log_p, np.exp(log_p)

    def objective(theta, log_nu):
        log_p, _ = probabilities(theta, log_nu)
        return ((w_first * log_p[0] + w_second * log_p[1] + np.where(t > 0, t * log_p[2], 0.0)).sum(axis=1)
                - regularization * (theta**2).sum(axis=1))

    current = objective(theta, log_nu)
    for _ in range(max_iter):
        _, (p_first, p_second, p_tie) = probabilities(theta, log_nu)
        gap = p_first - p_second
        g_delta = (w_first - w_second) / 2 - n * gap / 2
        h_delta = -n / 4 * ((p_first + p_second) - gap**2)
        gradient = np.concatenate([g_delta @ design - 2 * regularization * theta,
                                   np.where(tied, (t - n * p_tie).sum(axis=1), 0.0)[:, None]], axis=1)
        hessian = np.zeros((batch, k + 1, k + 1))
        hessian[:, :k, :k] = np.einsum("pi,bp,pj->bij", design, h_delta, design) - 2 * regularization * np.eye(k)
        cross = np.where(tied[:, None], (n * gap * p_tie / 2) @ design, 0.0)
        hessian[:, :k, k], hessian[:, k, :k] = cross, cross
        hessian[:, k, k] = np.where(tied, -(n * p_tie * (1 - p_tie)).sum(axis=1), -1.0)
        step = -np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        scale = np.ones(batch)
        for _ in range(30):  # halve the step where the objective would not improve
            candidate_theta = theta + scale[:, None] * step[:, :k]
            candidate_nu = log_nu + scale * step[:, k]
            value = objective(candidate_theta, candidate_nu)
            worse = value < current - 1e-12
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        theta, log_nu, current = candidate_theta, candidate_nu, value
        if np.abs(scale[:, None] * step).max() < tol:
            break
    return theta - theta.mean(axis=1, keepdims=True), log_nu


def model_question_counts(games: pd.DataFrame, models: list[str]) -> np.ndarray:
    """Per model, the questions on which it has at least one valid game: the clusters its logit
    rests on (fewer than the arena's when it joined late, was judged on a subset of questions, or
    most of its verdicts are invalid)."""
    valid = games[games["verdict"] != "invalid"]
    played = pd.concat([valid[["query_id", "model_a"]].set_axis(["query_id", "model"], axis=1),
                        valid[["query_id", "model_b"]].set_axis(["query_id", "model"], axis=1)])
    return played.groupby("model")["query_id"].nunique().reindex(models, fill_value=0).to_numpy(int)


def few_questions_warnings(table: pd.DataFrame, judge: str, lang: str) -> list[str]:
    """One message per model of a Bradley-Terry table (``model``, ``model_questions``) that played
    on fewer than ``MIN_BOOTSTRAP_QUESTIONS`` questions: its interval rests on that many clusters."""
    thin = table[table["model_questions"] < MIN_BOOTSTRAP_QUESTIONS]
    return [f"judge {judge} in {lang}: {row.model} has games on only {row.model_questions} questions: its interval "
            f"and rank range (question bootstrap, {row.model_questions} clusters) are not reliable below "
            f"{MIN_BOOTSTRAP_QUESTIONS}" for row in thin.itertuples()]


def intervals_and_ranks(point: np.ndarray, samples: np.ndarray, n_questions,
                        confidence: float = 0.95, method: str = "max-t stepdown") -> tuple[np.ndarray, ...]:
    """``(low, high, rank_best, rank_worst)`` of each model from its point estimate and bootstrap
    tournaments (``samples``: tournaments x models) over ``n_questions`` clusters: one count for
    every model, or each model's own (``model_question_counts``; a pair takes the fewer of its
    two), or :class:`~polyrag.stats.rank_ranges.Clusters` (the leaderboard's pooled languages).
    The rank ranges are :func:`polyrag.stats.rank_ranges.rank_ranges`'s (``method``). A model
    whose samples do not vary (a single model) gets a zero-width interval."""
    clusters = (n_questions if isinstance(n_questions, Clusters)
                else Clusters.of_counts(n_questions, len(point)))
    half = clusters.critical(1 - confidence) * samples.std(axis=0, ddof=1)
    best, worst = rank_ranges(point, samples, clusters, confidence, method)
    return point - half, point + half, best, worst


def bradley_terry(games: pd.DataFrame, models: list[str], regularization: float, n_bootstrap: int,
                  rng: np.random.Generator, ties: str = "half") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The leaderboard of one judge and language, the bootstrap logits, and the tournaments.

    Returns ``(table, bootstrap, tournaments)``: ``table`` has ``model, logit, ci_low, ci_high,
    rank, rank_best, rank_worst, n_questions`` (the arena's questions), ``model_questions`` (the
    questions the model played: its intervals' clusters) and the game counts; ``bootstrap`` has
    ``tournament, model, logit``; ``tournaments`` has ``tournament, query_id, count`` (the
    resampled questions, which the surrogate averages features over). ``ties`` (``arena.ties``):
    ``half``, a tie is half a win each way; ``davidson``, Davidson's tie model
    (:func:`fit_davidson_batch`), whose table adds ``tie_parameter`` (nu) with its interval
    ``tie_parameter_ci_low``/``_ci_high`` (t-corrected over the arena's questions, on log nu)."""
    if ties not in TIE_MODELS:
        raise ValueError(f"arena.ties {ties!r} is not one of {list(TIE_MODELS)}")
    counts = tally(games, models)
    unplayed = counts.loc[counts["games"] == 0, "model"].tolist()
    if unplayed:
        raise DataError(f"no valid game for {unplayed}: every verdict of their pairs is invalid or missing")
    questions, decisive, tied = question_outcome_matrices(games, models)
    counts_drawn = tournament_counts(len(questions), n_bootstrap, rng)
    if ties == "davidson":
        (logit,), (log_nu,) = fit_davidson_batch(decisive.sum(axis=0)[None], tied.sum(axis=0)[None], regularization)
        samples, log_nu_samples = fit_davidson_batch(np.tensordot(counts_drawn, decisive, axes=1),
                                                     np.tensordot(counts_drawn, tied, axes=1), regularization)
    else:
        wins = decisive + tied / 2
        logit = fit_logits(wins.sum(axis=0), regularization)
        samples = fit_logits_batch(np.tensordot(counts_drawn, wins, axes=1), regularization)
    played = model_question_counts(games, models)
    low, high, best, worst = intervals_and_ranks(logit, samples, played)
    table = pd.DataFrame({"model": models, "logit": logit, "ci_low": low, "ci_high": high,
                          "rank": rank_by(logit).astype(int).to_numpy(),
                          "rank_best": best, "rank_worst": worst, "n_questions": len(questions),
                          "model_questions": played})
    if ties == "davidson":
        low_nu, high_nu = bootstrap_interval(np.array([log_nu]), log_nu_samples[:, None], len(questions))
        table["tie_parameter"] = np.exp(log_nu)
        table["tie_parameter_ci_low"], table["tie_parameter_ci_high"] = np.exp(low_nu[0]), np.exp(high_nu[0])
    table = table.merge(counts, on="model").sort_values(["rank", "model"], ignore_index=True)
    bootstrap = pd.DataFrame({"tournament": np.repeat(np.arange(n_bootstrap), len(models)),
                              "model": np.tile(models, n_bootstrap), "logit": samples.ravel()})
    tournament, question = np.nonzero(counts_drawn)
    drawn = pd.DataFrame({"tournament": tournament, "query_id": np.array(questions)[question],
                          "count": counts_drawn[tournament, question]})
    return table, bootstrap, drawn
