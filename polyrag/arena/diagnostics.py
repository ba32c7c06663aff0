"""How a pairwise judge behaves: position consistency, agreement between judges, self-preference.

All of it is read from games tables (``polyrag.arena.games``): one row per (question, pair,
order), ``verdict`` in ``model_a``/``model_b``/``tie``/``invalid`` and ``shown_first`` naming the
answer the judge read first. A game is identified by ``GAME_KEY``.

- ``judge_diagnostics``: one judge in one language. The first-position win rate of
  ``position_bias`` plus invalid and tie rates and the position consistency: the share of
  (question, pair) whose two orders got the same verdict (same winner, or a tie both times),
  over those with a valid verdict in both orders, with a 95% Wilson interval clustered by
  question (the pairs of one question are not independent trials). Beside it,
  ``position_consistency_chance``: the most a judge that does not read the answers can reach
  with this judge's tie rate t, t**2 + (1 - t)**2 / 2. Such a judge cannot tell model_a's answer
  from model_b's, only first from second: picking the first answer with probability f and the
  second with g (f + g + t = 1) in both orders, it agrees with itself with probability
  2fg + t**2, largest at f = g. The baseline does not depend on which model is named model_a
  (the alphabetically first, unrelated to the verdicts), where the sum of squared verdict shares
  would rise with every lopsided pair. A judge that always picks the first answer scores 0.
- ``judge_agreement``: Cohen's kappa between two judges over the games both judged with a valid
  verdict (labels ``model_a``/``model_b``/``tie``), with a 95% interval from bootstrap
  tournaments that resample questions with all their games, t-corrected as the Bradley-Terry
  intervals are (``bootstrap_interval``) and clipped to [-1, 1].
- ``self_preference``: how much a judge favours a contestant of its own family, in BT logits,
  for judges that discriminate (``discrimination``).
  Logits from different judges are comparable only up to a shift (a BT fit sees differences
  only), so every judge is refitted on the same models (those with a valid game under every
  judge given) and the same questions (those with a valid game between them under every judge:
  a judge run on a subset of questions sets the subset), whose logits then have mean 0 under
  each judge (the L2 penalty centres them).
  The statistic is the contestant's logit under the judge minus the mean of its logits under
  the judges of other families (a second judge of the same family could share the bias and
  hide it). Its 95% percentile interval resamples questions jointly: tournament t draws the
  same questions for every judge, so what the judges share (a hard question) cancels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.arena.bradley_terry import fit_logits_batch
from polyrag.arena.games import position_bias, question_win_matrices
from polyrag.errors import DataError
from polyrag.stats.bootstrap import MIN_BOOTSTRAP_QUESTIONS, bootstrap_interval, tournament_counts
from polyrag.stats.clustered_intervals import clustered_wilson_interval

GAME_KEY = ["query_id", "model_a", "model_b", "shown_first"]
LABELS = ["model_a", "model_b", "tie"]  # valid verdicts, in the order of the confusion matrices


def unique_games(games: pd.DataFrame, name: str) -> pd.DataFrame:
    """``games`` checked to hold each (question, pair, order) at most once."""
    repeated = games.duplicated(GAME_KEY, keep=False)
    if repeated.any():
        row = games[repeated].iloc[0]
        raise DataError(f"{name}: game {dict(row[GAME_KEY])} appears {int(repeated.sum())} times among "
                        f"repeated games; each (question, pair, order) must be judged once")
    return games


def both_orders(games: pd.DataFrame) -> pd.DataFrame:
    """One row per (question, pair) with a valid verdict in both orders: ``verdict_a_first`` and
    ``verdict_b_first`` (the verdicts when model_a, respectively model_b, was shown first)."""
    valid = unique_games(games, "games")
    valid = valid[valid["verdict"] != "invalid"]
    order = np.where(valid["shown_first"] == valid["model_a"], "verdict_a_first", "verdict_b_first")
    wide = valid.assign(order=order).pivot(index=["query_id", "model_a", "model_b"], columns="order",
                                           values="verdict")
    wide = wide.reindex(columns=["verdict_a_first", "verdict_b_first"]).dropna()
    return wide.reset_index()


def judge_diagnostics(games: pd.DataFrame) -> dict:
    """``position_bias`` of these games (one judge, one language) with the rates and the position
    consistency described in the module docstring."""
    bias = position_bias(games)
    total, valid = len(games), int((games["verdict"] != "invalid").sum())
    pairs = both_orders(games)
    same = (pairs["verdict_a_first"] == pairs["verdict_b_first"]).to_numpy()
    consistent = int(same.sum())
    low, high = clustered_wilson_interval(same, pairs["query_id"].to_numpy())
    verdicts = pd.concat([pairs["verdict_a_first"], pairs["verdict_b_first"]])
    tie_rate = float((verdicts == "tie").mean()) if len(pairs) else np.nan
    chance = tie_rate**2 + (1 - tie_rate) ** 2 / 2
    return {**bias, "games": total, "valid_games": valid, "questions": games["query_id"].nunique(),
            "invalid_rate": bias["invalid"] / total if total else np.nan,
            "tie_rate": bias["ties"] / valid if valid else np.nan,
            "pairs_both_orders": len(pairs), "consistent_pairs": consistent,
            "position_consistency": consistent / len(pairs) if len(pairs) else np.nan,
            "position_consistency_ci_low": low, "position_consistency_ci_high": high,
            "position_consistency_chance": chance}


def kappa_from_confusion(confusion: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion matrices (``[..., i, j]``: games judge 1 labelled i and judge 2
    labelled j); nan where chance agreement is 1 (both judges always gave one same label)."""
    n = confusion.sum(axis=(-2, -1))
    observed = np.trace(confusion, axis1=-2, axis2=-1) / n
    chance = (confusion.sum(axis=-1) * confusion.sum(axis=-2)).sum(axis=-1) / n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def paired_verdicts(games_1: pd.DataFrame, games_2: pd.DataFrame) -> pd.DataFrame:
    """The games both judges judged: ``GAME_KEY``, ``verdict_1``, ``verdict_2``."""
    left = unique_games(games_1, "judge 1")[GAME_KEY + ["verdict"]].rename(columns={"verdict": "verdict_1"})
    right = unique_games(games_2, "judge 2")[GAME_KEY + ["verdict"]].rename(columns={"verdict": "verdict_2"})
    return left.merge(right, on=GAME_KEY, how="inner")


def judge_agreement(games_1: pd.DataFrame, games_2: pd.DataFrame, n_bootstrap: int,
                    rng: np.random.Generator) -> dict:
    """Cohen's kappa between two judges on the games both judged validly, with its bootstrap
    interval over questions, observed and chance agreement, and the game counts."""
    common = paired_verdicts(games_1, games_2)
    valid = common[(common["verdict_1"] != "invalid") & (common["verdict_2"] != "invalid")]
    result = {"games_common": len(common), "games_both_valid": len(valid)}
    if valid.empty:
        return {**result, **dict.fromkeys(["observed_agreement", "chance_agreement", "kappa", "kappa_ci_low",
                                           "kappa_ci_high"], np.nan)}
    questions = sorted(valid["query_id"].unique())
    q = valid["query_id"].map({query_id: k for k, query_id in enumerate(questions)}).to_numpy()
    label = {name: k for k, name in enumerate(LABELS)}
    per_question = np.zeros((len(questions), len(LABELS), len(LABELS)))
    np.add.at(per_question, (q, valid["verdict_1"].map(label).to_numpy(), valid["verdict_2"].map(label).to_numpy()), 1)
    confusion = per_question.sum(axis=0)
    n = confusion.sum()
    drawn = tournament_counts(len(questions), n_bootstrap, rng)
    samples = kappa_from_confusion(np.tensordot(drawn, per_question, axes=1))
    kappa = float(kappa_from_confusion(confusion))
    low, high = np.nan, np.nan
    if np.isfinite(samples).sum() > 1 and np.isfinite(kappa):
        # t-corrected like the BT intervals: the percentile interval covered 0.925 at 40 questions.
        low, high = bootstrap_interval(np.array([kappa]), samples[np.isfinite(samples)][:, None], len(questions))
        low, high = max(float(low[0]), -1.0), min(float(high[0]), 1.0)
    return {**result, "observed_agreement": np.trace(confusion) / n,
            "chance_agreement": (confusion.sum(axis=1) @ confusion.sum(axis=0)) / n**2,
            "kappa": kappa, "kappa_ci_low": low, "kappa_ci_high": high}


def agreement_table(games_by_judge: dict[str, pd.DataFrame], n_bootstrap: int, rng: np.random.Generator) -> pd.DataFrame:
    """``judge_agreement`` for every pair of judges (in the order given), one row per pair."""
    judges = list(games_by_judge)
    rows = [{"judge": first, "other_judge": second,
             **judge_agreement(games_by_judge[first], games_by_judge[second], n_bootstrap, rng)}
            for i, first in enumerate(judges) for second in judges[i + 1:]]
    return pd.DataFrame(rows)


def models_played_by_every_judge(games_by_judge: dict[str, pd.DataFrame], models: list[str]) -> list[str]:
    """The models (in the order given) with at least one valid game under every judge."""
    played = set(models)
    for games in games_by_judge.values():
        valid = games[games["verdict"] != "invalid"]
        played &= set(valid["model_a"]) | set(valid["model_b"])
    return [model for model in models if model in played]


def joint_win_matrices(games_by_judge: dict[str, pd.DataFrame], models: list[str]) -> tuple[list[str], np.ndarray]:
    """Questions with a valid game between ``models`` under every judge, and
    ``wins[judge, question, i, j]`` over those games. Every bootstrap tournament then gives every
    judge games to fit, and the judges are compared on the same questions."""
    among = {judge: games[games["model_a"].isin(models) & games["model_b"].isin(models)]
             for judge, games in games_by_judge.items()}
    questions = sorted(set.intersection(*(set(games.loc[games["verdict"] != "invalid", "query_id"])
                                          for games in among.values())))
    among = {judge: games[games["query_id"].isin(questions)] for judge, games in among.items()}
    position = {query_id: k for k, query_id in enumerate(questions)}
    wins = np.zeros((len(among), len(questions), len(models), len(models)))
    for k, games in enumerate(among.values()):
        judged, matrices = question_win_matrices(games, models)
        wins[k, [position[query_id] for query_id in judged]] = matrices
    return questions, wins


def discrimination(games: pd.DataFrame) -> dict:
    """Whether a judge reads the answers: its position consistency's interval lies above the most
    a judge blind to the answers reaches with its tie rate (``judge_diagnostics``). A judge that
    answers by position, or at random, gives every model about the same logit; a gap between its
    logits and another judge's then measures the other judge, not favouritism."""
    result = judge_diagnostics(games)
    return {"position_consistency": result["position_consistency"],
            "position_consistency_ci_low": result["position_consistency_ci_low"],
            "position_consistency_chance": result["position_consistency_chance"],
            "discriminates": bool(result["position_consistency_ci_low"] > result["position_consistency_chance"])}


def self_preference(games_by_judge: dict[str, pd.DataFrame], models: list[str], model_family: dict[str, str],
                    judge_family: dict[str, str], regularization: float, n_bootstrap: int,
                    rng: np.random.Generator) -> pd.DataFrame:
    """One row per (judge, contestant of the judge's family): ``self_preference`` (the
    contestant's logit under the judge minus its mean logit under the judges of other families)
    with its 95% bootstrap interval (t-corrected, as the Bradley-Terry intervals), both logits, the
    other judges and the models compared.

    Only judges that discriminate (``discrimination``, on the compared models and questions)
    take part: a judge that does not gets no self-preference, and such a judge of another family
    is left out of the comparison; ``note`` says why a row is empty. Below
    ``MIN_BOOTSTRAP_QUESTIONS`` questions the gap is shown without an interval (a question
    bootstrap has too few distinct resamples). A judge or model without a family takes no part;
    a contestant without a discriminating judge of another family gets nan. Pass real judges
    only: a panel contains its members."""
    judges = list(games_by_judge)
    compared = models_played_by_every_judge(games_by_judge, models)
    if len(compared) < 2:
        raise DataError(f"self-preference needs two models with a valid game under every judge of "
                        f"{judges}; these have {compared}")
    questions, wins = joint_win_matrices(games_by_judge, compared)
    if not questions:
        raise DataError(f"self-preference needs a question with valid games under every judge of {judges}")
    judged = {judge: discrimination(games[games["model_a"].isin(compared) & games["model_b"].isin(compared)
                                          & games["query_id"].isin(questions)])
              for judge, games in games_by_judge.items()}
    logits = fit_logits_batch(wins.sum(axis=1), regularization)  # judge x model
    drawn = tournament_counts(len(questions), n_bootstrap, rng)
    samples = np.stack([fit_logits_batch(np.tensordot(drawn, judge_wins, axes=1), regularization) for judge_wins in wins],
                       axis=1)  # tournament x judge x model
    rows = []
    for j, judge in enumerate(judges):
        family = judge_family.get(judge)
        for m, model in enumerate(compared):
            if family is None or model_family.get(model) != family:
                continue
            others = [k for k, other in enumerate(judges)
                      if k != j and judge_family.get(other) != family and judged[other]["discriminates"]]
            row = {"judge": judge, "model": model, "family": family, **judged[judge],
                   "other_judges": ",".join(judges[k] for k in others) or "none",
                   "models_compared": len(compared), "questions_compared": len(questions), "logit": logits[j, m],
                   **dict.fromkeys(["logit_other_judges", "self_preference", "ci_low", "ci_high"], np.nan), "note": ""}
            if not judged[judge]["discriminates"]:
                row["note"] = (f"{judge} does not discriminate: position consistency "
                               f"{judged[judge]['position_consistency']:.2f} (95% lower bound "
                               f"{judged[judge]['position_consistency_ci_low']:.2f}) is not above a guesser's "
                               f"{judged[judge]['position_consistency_chance']:.2f}")
            elif not others:
                row["note"] = "no judge of another family that discriminates"
            else:
                row.update(logit_other_judges=logits[others, m].mean(),
                           self_preference=logits[j, m] - logits[others, m].mean())
                if len(questions) >= MIN_BOOTSTRAP_QUESTIONS:
                    gap = samples[:, j, m] - samples[:, others, m].mean(axis=1)
                    low, high = bootstrap_interval(np.array([row["self_preference"]]), gap[:, None], len(questions))
                    row["ci_low"], row["ci_high"] = low[0], high[0]
                else:
                    row["note"] = f"{len(questions)} questions compared: no interval below {MIN_BOOTSTRAP_QUESTIONS}"
            rows.append(row)
    columns = ["judge", "model", "family", "self_preference", "ci_low", "ci_high", "logit", "logit_other_judges",
               "other_judges", "models_compared", "questions_compared", "discriminates", "position_consistency",
               "position_consistency_ci_low", "position_consistency_chance", "note"]
    return pd.DataFrame(rows, columns=columns)
