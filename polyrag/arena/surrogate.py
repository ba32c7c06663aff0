"""The surrogate judge: a regressor from answer features to Bradley-Terry logits (MIRAGE-BENCH).

Training rows are (judged model, bootstrap tournament): the model's features averaged over that
tournament's resampled arena questions, against its BT logit in that tournament. Every
configured model, judged or not, is then predicted from its features averaged over all arena
questions, and per tournament for an interval.

Features that need a citation (``support_*``, ``reranker_score``) are null for an answer that
cites nothing, and are averaged over the answers that cite; ``cited_share`` (share of arena
questions answered with at least one citation) stands beside them, so that a model citing once
and well is not read as a model citing always and well. ``answered`` (share of arena questions
with a parsed answer) does the same for answers that are missing altogether. A feature that is
undefined for some model is left out for every model, with a warning naming both.

Held-out evaluation leaves k judged models out, trains on the others and predicts the left-out
models, ``repeats`` times. Two measures, each beside the score of a no-skill constant predictor
(every left-out model at the mean BT logit of the training models):

- ``held_out_r2``: R² of the predictions against the left-out models' BT logits, pooled over
  repeats (MIRAGE-BENCH's measure, Algorithm 1 / Table 3); the constant predictor scores <= 0;
- ``kendall_tau`` and ``r2`` of the whole leaderboard with the left-out models inserted by
  their predictions among the others' true logits, as a new model is added. Most of that ranking
  is true by construction, so even the constant predictor scores high (about 0.9 with 19 models
  and 2 left out): read these only against their baseline.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import sklearn
import pandas as pd
from scipy.stats import kendalltau
from sklearn.base import RegressorMixin
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

from polyrag.errors import DataError
from polyrag.stats.bootstrap import rank_by

log = logging.getLogger(__name__)

ANSWERED = "answered"  # share of arena questions with a parsed answer: a missing answer is a loss
CITED_SHARE = "cited_share"  # share of arena questions answered with at least one citation
NEEDS_CITATION = ("support_entailment", "support_neutral", "reranker_score")  # null when nothing is cited
TREE_ENSEMBLES = ("random_forest", "gradient_boosting")  # predictions stay within the training logits
#: Columns of a feature table that describe the measurement, not the answer: the share of an
#: answer's citations nobody judged (polyrag.features.deterministic) says how far the relevance
#: labels reach, which no judge sees.
NOT_FEATURES = ("unjudged_citations",)


def make_regressor(name: str, params: dict, seed: int, n_jobs: int = 1) -> RegressorMixin:
    """The configured regressor, seeded; scale-sensitive ones standardise their inputs."""
    if name == "random_forest":
        return RandomForestRegressor(**{"random_state": seed, "n_jobs": n_jobs, **params})
    if name == "gradient_boosting":
        return GradientBoostingRegressor(**{"random_state": seed, **params})
    if name == "linear":
        return make_pipeline(StandardScaler(), LinearRegression(**params))
    if name == "mlp":
        return make_pipeline(StandardScaler(), MLPRegressor(**{"random_state": seed, "max_iter": 2000, **params}))
    if name == "svr":
        return make_pipeline(StandardScaler(), SVR(**params))
    raise ValueError(f"unknown regressor {name!r}")


def fit_regressor(name: str, params: dict, seed: int, n_jobs: int, X: np.ndarray, y: np.ndarray) -> RegressorMixin:
    """The regressor fitted on ``n_jobs`` threads, set to predict on one: a random forest's
    ``predict`` on several threads adds the trees' outputs in the order the threads finish, so its
    last bits would change from run to run (one config, one result)."""
    fitted = make_regressor(name, params, seed, n_jobs).fit(X, y)
    if "n_jobs" in fitted.get_params():
        fitted.set_params(n_jobs=1)
    return fitted


def feature_columns(features: dict[str, pd.DataFrame], left_out: dict[str, str]) -> list[str]:
    """Feature columns present for every model, in the first model's order (``NOT_FEATURES`` never);
    the others are recorded in ``left_out`` with the reason."""
    columns = [c for c in next(iter(features.values())).columns if c != "query_id" and c not in NOT_FEATURES]
    for model, frame in features.items():
        absent = [c for c in columns if c not in frame.columns]
        for column in absent:
            left_out[column] = f"not computed for {model}"
            log.warning("feature %s is not computed for %s: left out of the surrogate for every model", column, model)
        columns = [c for c in columns if c not in absent]
    return columns


def averaged(features: dict[str, pd.DataFrame], columns: list[str], weights: pd.Series,
             aligned: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Features per model (rows) averaged over questions with these weights, null answers skipped
    per feature; ``answered``: the weighted share of questions with any feature; ``cited_share``
    (when a feature that needs a citation is among ``columns``): the weighted share of questions
    whose answer has one of those features, that is cites something. ``aligned``: each model's
    ``columns`` already indexed by a superset of the questions (``aligned_values``), so that 200
    tournaments look them up by position rather than reindexing every model's table 200 times."""
    needs_citation = [c for c in columns if c in NEEDS_CITATION]
    cited_positions = [columns.index(c) for c in needs_citation]
    rows = []
    for model, frame in features.items():
        table = aligned[model] if aligned is not None else aligned_values({model: frame}, columns, weights.index)[model]
        positions = table.index.get_indexer(weights.index)
        if (positions < 0).any():
            raise DataError(f"features of {model} lack arena questions {weights.index[positions < 0][:5].tolist()}")
        values = table.to_numpy(float)
        # the rows in the layout pandas gives the whole table (column-major for one block): numpy
        # sums a column-major array pairwise, a row-major one row by row, and the sums differ in
        # their last bits, which a tree's split can see
        array = values[positions]
        if values.flags.f_contiguous:
            array = np.asfortranarray(array)
        w = weights.to_numpy()
        present = ~np.isnan(array)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (np.nan_to_num(array) * w[:, None]).sum(0) / (present * w[:, None]).sum(0)
        row = [*means, (present.any(axis=1) * w).sum() / w.sum()]
        if needs_citation:
            row.append((present[:, cited_positions].any(axis=1) * w).sum() / w.sum())
        rows.append(row)
    # one array for the table (building it from a dict per model was half the time of 200 tournaments)
    return pd.DataFrame(np.array(rows, dtype=float).reshape(len(rows), -1), index=list(features),
                        columns=[*columns, ANSWERED, *([CITED_SHARE] if needs_citation else [])])


def aligned_values(features: dict[str, pd.DataFrame], columns: list[str], questions: pd.Index) -> dict[str, pd.DataFrame]:
    """Each model's ``columns`` on ``questions``, in their order; stops naming questions a model lacks."""
    aligned = {}
    for model, frame in features.items():
        absent = questions.difference(frame["query_id"])
        if len(absent):
            raise DataError(f"features of {model} lack arena questions {absent[:5].tolist()}")
        aligned[model] = frame.set_index("query_id").reindex(questions)[columns]
    return aligned


def usable_columns(point: pd.DataFrame, left_out: dict[str, str]) -> list[str]:
    """Columns defined for every model over all arena questions; the others are left out for
    every model, with a warning and the reason recorded in ``left_out``."""
    usable = []
    for column in point.columns:
        undefined = point.index[point[column].isna()].tolist()
        if not undefined:
            usable.append(column)
            continue
        why = "no answer of theirs cites anything" if column in NEEDS_CITATION else "null on every arena question"
        left_out[column] = f"undefined for {undefined}: {why}"
        log.warning("feature %s is undefined for %s (%s): left out of the surrogate for every model",
                    column, undefined, why)
    return usable


def tournament_features(per_tournament: list[pd.DataFrame], point: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Every model's ``columns`` in every tournament, shaped (tournament, model, column) with models
    in ``point``'s order; a feature undefined in a tournament (all its sampled answers null) takes
    the model's value over all arena questions. One array for all tournaments: looking up and
    filling 200 tables with pandas, twice, was most of a rerun's CPU once the held-out evaluation
    is stored."""
    for frame in per_tournament:  # ``averaged`` gives every tournament point's rows and columns
        if not (frame.index.equals(point.index) and frame.columns.equals(point.columns)):
            raise ValueError("a tournament's features are not laid out as the features over all questions")
    positions = point.columns.get_indexer(columns)
    values = np.stack([frame.to_numpy(float)[:, positions] for frame in per_tournament])
    return np.where(np.isnan(values), point.to_numpy(float)[:, positions], values)


def training_rows(features: np.ndarray, point: pd.DataFrame, bootstrap: pd.DataFrame,
                  models: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X, y and the model of each row, one row per (tournament, model), tournament by tournament;
    ``features``: ``tournament_features`` (models in ``point``'s order)."""
    n_tournaments = len(features)
    logits = bootstrap.pivot(index="tournament", columns="model", values="logit")
    X = column_major(features[:, point.index.get_indexer(models), :])
    y = logits.loc[list(range(n_tournaments)), models].to_numpy(float).ravel()
    return X, y, np.array(models * n_tournaments)


def column_major(features: np.ndarray) -> np.ndarray:
    """(tournament, model, column) as rows of (tournament, model), column-major: the layout the
    rows had when stacked from pandas tables, which a regressor's sums (scaling, least squares)
    see in their last bits."""
    return np.asfortranarray(features.reshape(-1, features.shape[2]))


class HeldOutStore:
    """The held-out evaluations already computed, one JSON file each under ``folder``, named by a
    hash of everything the evaluation reads: the training rows and their models, the judged
    models' features and BT logits, the regressor and its settings, the seed and scikit-learn's
    version. Adding a model that is not judged changes none of these, so its surrogate job reads
    the evaluation (50 refits, ~98% of the job) instead of repeating it; a new judged model changes
    every BT logit, and the evaluation runs again."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    @staticmethod
    def key(*parts) -> str:
        digest = hashlib.sha256(sklearn.__version__.encode())
        for part in parts:
            data = np.ascontiguousarray(part).tobytes() if isinstance(part, np.ndarray) else json.dumps(part, sort_keys=True).encode()
            digest.update(len(data).to_bytes(8, "little") + data)
        return digest.hexdigest()

    def get(self, key: str) -> dict | None:
        path = self.folder / f"{key}.json"
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, value: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.folder / f"{key}.{os.getpid()}.partial"
        partial.write_text(json.dumps(value))
        os.replace(partial, self.folder / f"{key}.json")


def surrogate_store(cache_dir: str | Path) -> HeldOutStore:
    return HeldOutStore(Path(cache_dir) / "surrogate_held_out")


def surrogate(features: dict[str, pd.DataFrame], bt: pd.DataFrame, bootstrap: pd.DataFrame,
              tournaments: pd.DataFrame, arena_questions: list[str], regressor: str, params: dict,
              holdout: int, repeats: int, seed: int, n_jobs: int = 1,
              store: HeldOutStore | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """Predicted logits for every model, per-tournament predictions, metrics and model features.

    ``features``: every configured model's feature table; ``bt``, ``bootstrap``, ``tournaments``:
    the Bradley-Terry outputs of this judge and language; ``store``: held-out evaluations already
    computed (``HeldOutStore``), read instead of refitting when nothing they depend on changed."""
    judged = bt["model"].tolist()
    not_featured = [m for m in judged if m not in features]
    if not_featured:
        raise DataError(f"judged models {not_featured} have no features")
    left_out: dict[str, str] = {}
    measured = feature_columns(features, left_out)
    all_questions = pd.Series(1.0, index=pd.Index(arena_questions, name="query_id"))
    aligned = aligned_values(features, measured, all_questions.index)
    point = averaged(features, measured, all_questions, aligned)
    columns = usable_columns(point, left_out)
    if not columns:
        raise DataError("no feature is defined for every model on the arena questions")
    n_tournaments = int(bootstrap["tournament"].max()) + 1
    per_tournament = []
    for t in range(n_tournaments):
        drawn = tournaments[tournaments["tournament"] == t].set_index("query_id")["count"].astype(float)
        per_tournament.append(averaged(features, measured, drawn, aligned))
    by_tournament = tournament_features(per_tournament, point, columns)
    X, y, owners = training_rows(by_tournament, point, bootstrap, judged)

    fitted = fit_regressor(regressor, params, seed, n_jobs, X, y)
    models = point.index.tolist()  # every configured model, in the order of ``features``
    predicted = fitted.predict(point.loc[models, columns].to_numpy(float))
    stacked = column_major(by_tournament)
    per_tournament_predictions = fitted.predict(stacked).reshape(n_tournaments, len(models))  # one call: fast
    low, high = np.percentile(per_tournament_predictions, [2.5, 97.5], axis=0)
    table = pd.DataFrame({"model": models, "predicted_logit": predicted, "ci_low": low, "ci_high": high,
                          "judged": [m in judged for m in models]})
    table["rank"] = rank_by(table["predicted_logit"]).astype(int).to_numpy()
    table = table.sort_values(["rank", "model"], ignore_index=True)
    if regressor in TREE_ENSEMBLES:
        warn_at_the_edge(table)
    samples = pd.DataFrame({"tournament": np.repeat(np.arange(n_tournaments), len(models)),
                            "model": np.tile(models, n_tournaments),
                            "predicted_logit": per_tournament_predictions.ravel()})

    judged_point = point.loc[judged, columns]
    key = HeldOutStore.key(X, y, owners.astype(str), judged_point.to_numpy(float), judged, columns,
                           bt.set_index("model").loc[judged, "logit"].to_numpy(float), regressor, params, holdout,
                           repeats, seed)
    held_out = store.get(key) if store is not None else None
    if held_out is None:
        held_out = held_out_evaluation(X, y, owners, judged_point, bt, regressor, params, holdout, repeats, seed, n_jobs)
        if store is not None:
            store.put(key, held_out)
    else:
        log.info("held-out evaluation read from %s: the judged models, their features and logits are unchanged",
                 store.folder / f"{key}.json")
    metrics = {"regressor": regressor, "features": columns, "features_left_out": left_out, "training_rows": int(len(y)),
               "judged_models": judged, "feature_importances": importances(fitted, X, y, columns, seed), **held_out}
    return table, samples, metrics, point.rename_axis("model").reset_index()


def importances(fitted, X: np.ndarray, y: np.ndarray, columns: list[str], seed: int) -> dict[str, float]:
    """Impurity importances of tree ensembles; permutation importances (R² drop) otherwise."""
    if hasattr(fitted, "feature_importances_"):
        values = fitted.feature_importances_
    else:
        values = permutation_importance(fitted, X, y, n_repeats=5, random_state=seed).importances_mean
    return {column: float(value) for column, value in zip(columns, values)}


def warn_at_the_edge(table: pd.DataFrame) -> None:
    """A tree ensemble cannot predict beyond the judged models' logits: say so for an unjudged
    model predicted at the top or the bottom of the judged range."""
    judged = table.loc[table["judged"], "predicted_logit"]
    for row in table[~table["judged"]].itertuples():
        if row.predicted_logit >= judged.max() or row.predicted_logit <= judged.min():
            log.warning("%s (not judged) is predicted at the edge of the judged models' range (%.3f): a tree "
                        "ensemble cannot place it beyond, so it may be better or worse than its logit says",
                        row.model, row.predicted_logit)


def interval(values: list[float]) -> dict:
    return {"mean": float(np.mean(values)), "ci_low": float(np.percentile(values, 2.5)),
            "ci_high": float(np.percentile(values, 97.5))}


def held_out_evaluation(X: np.ndarray, y: np.ndarray, owners: np.ndarray, point: pd.DataFrame,
                        bt: pd.DataFrame, regressor: str, params: dict, holdout: int, repeats: int,
                        seed: int, n_jobs: int) -> dict:
    """Repeated random leave-``holdout``-models-out, each score beside a constant predictor's
    (every left-out model at the training models' mean logit): R² over the left-out models'
    logits pooled over repeats, and Kendall tau and R² of the leaderboard with the left-out
    models inserted, mean and 95% interval over repeats."""
    judged = bt["model"].tolist()
    if len(judged) < holdout + 2:
        reason = f"{len(judged)} judged models: leaving {holdout} out needs at least {holdout + 2}"
        log.info("held-out evaluation skipped: %s", reason)
        return {"held_out": {"skipped": reason}}
    rng = np.random.default_rng(seed)
    true_logit = bt.set_index("model")["logit"]
    predictors = ("surrogate", "constant")
    taus, r2s = {p: [] for p in predictors}, {p: [] for p in predictors}
    left_out_true, left_out_guess = [], {p: [] for p in predictors}
    for _ in range(repeats):
        out = list(rng.choice(judged, size=holdout, replace=False))
        train = ~np.isin(owners, out)
        fitted = fit_regressor(regressor, params, seed, n_jobs, X[train], y[train])
        guesses = {"surrogate": fitted.predict(point.loc[out].to_numpy(float)),
                   "constant": np.full(holdout, true_logit.drop(out).mean())}
        left_out_true.extend(true_logit[out])
        for predictor, guess in guesses.items():
            composite = true_logit.copy()
            composite[out] = guess
            taus[predictor].append(kendalltau(composite[judged], true_logit[judged]).statistic)
            r2s[predictor].append(r2_score(true_logit[judged], composite[judged]))
            left_out_guess[predictor].extend(guess)

    held_out_r2 = {p: float(r2_score(left_out_true, left_out_guess[p])) for p in predictors}
    log.info("held-out R² %.3f (constant predictor %.3f); leaderboard with the left-out models inserted: "
             "Kendall tau %.3f (constant %.3f), R² %.3f (constant %.3f)", held_out_r2["surrogate"],
             held_out_r2["constant"], np.mean(taus["surrogate"]), np.mean(taus["constant"]),
             np.mean(r2s["surrogate"]), np.mean(r2s["constant"]))
    return {"held_out": {
        "models_left_out": holdout, "repeats": repeats,
        "held_out_r2": {"value": held_out_r2["surrogate"], "constant_baseline": held_out_r2["constant"],
                        "predictions": len(left_out_true)},
        "kendall_tau": {**interval(taus["surrogate"]), "constant_baseline": interval(taus["constant"])},
        "r2": {**interval(r2s["surrogate"]), "constant_baseline": interval(r2s["constant"])}}}
