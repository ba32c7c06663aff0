"""The surrogate judge: a regressor from answer features to Bradley-Terry logits (MIRAGE-BENCH).

Training rows are (judged model, bootstrap tournament): the model's features averaged over that
tournament's resampled arena questions, against its BT logit in that tournament. Every
configured model, judged or not, is then predicted from its features averaged over all arena
questions, and per tournament for an interval. Held-out evaluation leaves k judged models out,
trains on the others, and inserts the held-out models into the BT leaderboard by their predicted
logits, as a new model is added: Kendall tau of that ranking against the BT ranking, and R² of
those logits against the BT logits (over all judged models, so that the variance the errors are
measured against is the leaderboard's, not that of k models).
"""

from __future__ import annotations

import logging

import numpy as np
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

log = logging.getLogger(__name__)

ANSWERED = "answered"  # share of arena questions with a parsed answer: a missing answer is a loss


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


def feature_columns(features: dict[str, pd.DataFrame]) -> list[str]:
    """Feature columns present for every model, in the first model's order."""
    columns = [c for c in next(iter(features.values())).columns if c != "query_id"]
    for model, frame in features.items():
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            log.info("features %s not computed for %s: left out of the surrogate", absent, model)
            columns = [c for c in columns if c not in absent]
    return columns


def averaged(features: dict[str, pd.DataFrame], columns: list[str], weights: pd.Series) -> pd.DataFrame:
    """Features per model (rows) averaged over questions with these weights; null answers skipped
    per feature, and ``answered`` the weighted share of questions with any feature."""
    rows = {}
    for model, frame in features.items():
        absent = weights.index.difference(frame["query_id"])
        if len(absent):
            raise DataError(f"features of {model} lack arena questions {absent[:5].tolist()}")
        values = frame.set_index("query_id").reindex(weights.index)[columns]
        w = weights.to_numpy()[:, None]
        present = values.notna().to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (np.nan_to_num(values.to_numpy(float)) * w).sum(0) / (present * w).sum(0)
        answered = (present.any(axis=1) * weights.to_numpy()).sum() / weights.sum()
        rows[model] = {**dict(zip(columns, means)), ANSWERED: answered}
    return pd.DataFrame.from_dict(rows, orient="index")


def usable_columns(point: pd.DataFrame) -> list[str]:
    """Columns defined for every model over all arena questions; the others are logged and left out."""
    undefined = point.columns[point.isna().any()].tolist()
    for column in undefined:
        log.info("feature %s is null on every arena question of %s: left out of the surrogate",
                 column, point.index[point[column].isna()].tolist())
    return [c for c in point.columns if c not in undefined]


def filled(frame: pd.DataFrame, point: pd.DataFrame, models: list[str], columns: list[str]) -> np.ndarray:
    """One tournament's features of these models; a feature undefined in that tournament (all its
    sampled answers null) takes the model's value over all arena questions."""
    return frame.loc[models, columns].fillna(point.loc[models, columns]).to_numpy(float)


def training_rows(per_tournament: list[pd.DataFrame], point: pd.DataFrame, bootstrap: pd.DataFrame,
                  models: list[str], columns: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X, y and the model of each row, one row per (model, tournament)."""
    logits = bootstrap.pivot(index="tournament", columns="model", values="logit")
    xs, ys, owners = [], [], []
    for tournament, frame in enumerate(per_tournament):
        xs.append(filled(frame, point, models, columns))
        ys.append(logits.loc[tournament, models].to_numpy(float))
        owners += models
    return np.vstack(xs), np.concatenate(ys), np.array(owners)


def surrogate(features: dict[str, pd.DataFrame], bt: pd.DataFrame, bootstrap: pd.DataFrame,
              tournaments: pd.DataFrame, arena_questions: list[str], regressor: str, params: dict,
              holdout: int, repeats: int, seed: int, n_jobs: int = 1) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """Predicted logits for every model, per-tournament predictions, metrics and model features.

    ``features``: every configured model's feature table; ``bt``, ``bootstrap``, ``tournaments``:
    the Bradley-Terry outputs of this judge and language."""
    judged = bt["model"].tolist()
    not_featured = [m for m in judged if m not in features]
    if not_featured:
        raise DataError(f"judged models {not_featured} have no features")
    columns = feature_columns(features)
    all_questions = pd.Series(1.0, index=pd.Index(arena_questions, name="query_id"))
    point = averaged(features, columns, all_questions)
    columns = usable_columns(point)
    if not columns:
        raise DataError("no feature is defined for every model on the arena questions")
    n_tournaments = int(bootstrap["tournament"].max()) + 1
    per_tournament = []
    for t in range(n_tournaments):
        drawn = tournaments[tournaments["tournament"] == t].set_index("query_id")["count"].astype(float)
        per_tournament.append(averaged(features, [c for c in columns if c != ANSWERED], drawn))
    X, y, owners = training_rows(per_tournament, point, bootstrap, judged, columns)

    fitted = make_regressor(regressor, params, seed, n_jobs).fit(X, y)
    models = list(features)
    predicted = fitted.predict(point.loc[models, columns].to_numpy(float))
    stacked = np.vstack([filled(frame, point, models, columns) for frame in per_tournament])
    per_tournament_predictions = fitted.predict(stacked).reshape(n_tournaments, len(models))  # one call: fast
    low, high = np.percentile(per_tournament_predictions, [2.5, 97.5], axis=0)
    table = pd.DataFrame({"model": models, "predicted_logit": predicted, "ci_low": low, "ci_high": high,
                          "judged": [m in judged for m in models]})
    table["rank"] = table["predicted_logit"].rank(ascending=False, method="min").astype(int)
    table = table.sort_values(["rank", "model"], ignore_index=True)
    samples = pd.DataFrame({"tournament": np.repeat(np.arange(n_tournaments), len(models)),
                            "model": np.tile(models, n_tournaments),
                            "predicted_logit": per_tournament_predictions.ravel()})

    metrics = {"regressor": regressor, "features": columns, "training_rows": int(len(y)),
               "judged_models": judged, "feature_importances": importances(fitted, X, y, columns, seed),
               **held_out_evaluation(X, y, owners, point.loc[judged, columns], bt, regressor, params,
                                     holdout, repeats, seed, n_jobs)}
    return table, samples, metrics, point.rename_axis("model").reset_index()


def importances(fitted, X: np.ndarray, y: np.ndarray, columns: list[str], seed: int) -> dict[str, float]:
    """Impurity importances of tree ensembles; permutation importances (R² drop) otherwise."""
    if hasattr(fitted, "feature_importances_"):
        values = fitted.feature_importances_
    else:
        values = permutation_importance(fitted, X, y, n_repeats=5, random_state=seed).importances_mean
    return {column: float(value) for column, value in zip(columns, values)}


def held_out_evaluation(X: np.ndarray, y: np.ndarray, owners: np.ndarray, point: pd.DataFrame,
                        bt: pd.DataFrame, regressor: str, params: dict, holdout: int, repeats: int,
                        seed: int, n_jobs: int) -> dict:
    """Repeated random leave-``holdout``-models-out: Kendall tau and R², mean and 95% interval."""
    judged = bt["model"].tolist()
    if len(judged) < holdout + 2:
        reason = f"{len(judged)} judged models: leaving {holdout} out needs at least {holdout + 2}"
        log.info("held-out evaluation skipped: %s", reason)
        return {"held_out": {"skipped": reason}}
    rng = np.random.default_rng(seed)
    true_logit = bt.set_index("model")["logit"]
    taus, r2s = [], []
    for _ in range(repeats):
        out = list(rng.choice(judged, size=holdout, replace=False))
        train = ~np.isin(owners, out)
        fitted = make_regressor(regressor, params, seed, n_jobs).fit(X[train], y[train])
        composite = true_logit.copy()
        composite[out] = fitted.predict(point.loc[out].to_numpy(float))
        taus.append(kendalltau(composite[judged], true_logit[judged]).statistic)
        r2s.append(r2_score(true_logit[judged], composite[judged]))

    def summary(values: list[float]) -> dict:
        return {"mean": float(np.mean(values)), "ci_low": float(np.percentile(values, 2.5)),
                "ci_high": float(np.percentile(values, 97.5))}

    return {"held_out": {"models_left_out": holdout, "repeats": repeats, "kendall_tau": summary(taus),
                         "r2": summary(r2s)}}
