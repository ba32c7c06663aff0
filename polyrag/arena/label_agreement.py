"""How a judge agrees with the human labels on the labelled units of the label-anchored arena
(``label_agreement.csv``), beside what chance would give and where its errors lean."""

from __future__ import annotations

import numpy as np
import pandas as pd


def judge_label_agreement(units: pd.DataFrame, labels: pd.DataFrame, games: pd.DataFrame,
                          answer_length: dict[tuple[str, str], int]) -> pd.DataFrame:
    """How the judge agrees with the human labels on the labelled units, beside what chance would give.

    ``agreement``: the judge's decision (its unit value above, below or at 0.5) equals the
    label's; ``chance_agreement``: what a judge with the same marginal shares but no skill would get;
    ``kappa``: Cohen's; ``judge_{x}_label_{y}``: the confusion matrix (counts of units). Over the
    judge's single-order games that contradict a decisive human label:
    ``errors_first_shown`` (share where the judge picked the answer shown first; 0.5 without
    position bias) and ``errors_longer_answer`` (share where it picked the longer answer; 0.5
    without length bias). ``answer_length``: (model, query_id) -> characters."""
    merged = labels.merge(units[["unit_id", "judge_value"]], on="unit_id")

    def decision(value):
        return np.sign(np.asarray(value, float) - 0.5)

    judge, label = decision(merged["judge_value"]), decision(merged["label_value"])
    agreement = float((judge == label).mean())
    chance = float(sum((judge == k).mean() * (label == k).mean() for k in (-1, 0, 1)))
    rows = [("agreement", agreement, len(merged)), ("chance_agreement", chance, len(merged)),
            ("kappa", (agreement - chance) / (1 - chance) if chance < 1 else np.nan, len(merged))]
    names = {1: "model_a", 0: "tie", -1: "model_b"}  # the confusion matrix, as counts
    rows += [(f"judge_{names[j]}_label_{names[k]}", float(((judge == j) & (label == k)).sum()), len(merged))
             for j in (1, 0, -1) for k in (1, 0, -1)]
    decisive = merged[merged["label_value"] != 0.5]
    loser = dict(zip(zip(decisive["query_id"].astype(str), decisive["model_a"], decisive["model_b"]),
                     decisive["model_b"].where(decisive["label_value"] == 1.0, decisive["model_a"])))
    played = games[games["verdict"].isin(["model_a", "model_b"])].assign(query_id=games["query_id"].astype(str))
    picked = played["model_a"].where(played["verdict"] == "model_a", played["model_b"])
    other = played["model_b"].where(played["verdict"] == "model_a", played["model_a"])
    pair = [tuple(sorted(p)) for p in zip(played["model_a"], played["model_b"])]
    wrong = [loser.get((q, a, b)) == pick for q, (a, b), pick in zip(played["query_id"], pair, picked)]
    wrong = np.array(wrong, dtype=bool)
    first = (picked == played["shown_first"]).to_numpy()[wrong]
    longer = np.array([answer_length.get((m, q), 0) > answer_length.get((o, q), 0)
                       for m, o, q in zip(picked[wrong], other[wrong], played["query_id"][wrong])], dtype=bool)
    rows += [("errors_first_shown", float(first.mean()) if len(first) else np.nan, int(wrong.sum())),
             ("errors_longer_answer", float(longer.mean()) if len(longer) else np.nan, int(wrong.sum()))]
    return pd.DataFrame(rows, columns=["metric", "value", "n"])


def agreement_over_languages(units: pd.DataFrame, labels: pd.DataFrame, games: dict[str, pd.DataFrame],
                             answers: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """:func:`judge_label_agreement` over one language or several pooled (``games``: language ->
    its games; ``answers``: (language, model) -> its answers file). Question ids are unique within
    a language only, so each is read with its language."""
    def in_language(frame: pd.DataFrame, lang) -> pd.DataFrame:
        return frame.assign(query_id=lang + "/" + frame["query_id"].astype(str))

    length = {}
    for (lang, model), frame in answers.items():
        keyed = in_language(frame, lang)
        length.update(zip(zip([model] * len(keyed), keyed["query_id"]), keyed["answer"].fillna("").str.len()))
    pooled_games = pd.concat([in_language(frame, lang) for lang, frame in games.items()], ignore_index=True)
    return judge_label_agreement(in_language(units, units["lang"]), in_language(labels, labels["lang"]),
                                pooled_games, length)
