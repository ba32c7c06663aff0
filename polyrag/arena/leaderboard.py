"""The overall leaderboard from the per-language arena tables of one judge.

Two tables: ``results/leaderboard.csv`` holds what a reader needs first (``SHORT_COLUMNS``:
rank, model, score with its 95% interval, the joint rank range, judged; under a budget also
games and share spent); ``results/leaderboard_detailed.csv`` holds every column below.

In each language, a judged model's arena logit is its Bradley-Terry logit; a model that was not
judged (``judged: false``) takes the surrogate's prediction, on the same scale. Per language,
models are ranked by that logit. A model that answers only some languages (``languages:``,
``polyrag.config.queries.model_languages``) has rows in those only: its ``rank_{lang}`` elsewhere
is empty (not applicable), and ``languages`` names the languages each model is ranked over.
Overall:

- ``score`` is the mean arena logit over the languages the model answers (every language for a
  model that answers all): a language it was not asked neither lowers nor raises it;
- ``ci_low``/``ci_high`` is the 95% interval of that mean from bootstrap tournaments (tournament
  t of every language together; languages are resampled independently), using the BT bootstrap
  for judged models and the surrogate's per-tournament predictions otherwise, built as in the
  Bradley-Terry table (``bradley_terry.intervals_and_ranks``, each model at the fewest questions
  it played in any language, ``model_questions``; a model that was not judged in a language
  counts that language's questions); a model's tournament t is the mean over its own languages,
  so its interval is that of its own score. For models ranked by the surrogate alone the interval
  reflects question sampling only, not the surrogate's own error (see ``surrogate_metrics.json``);
- ``rank`` orders models by ``score``, the quantity the interval belongs to;
  ``rank_best``..``rank_worst`` hold jointly for all models at 95% (simultaneous intervals of the
  differences with a bootstrap max-|t| critical value, stepdown: ``polyrag.stats.rank_ranges``),
  at the Welch-Satterthwaite degrees of freedom of the languages' pooled variance
  (``Clusters.pooled``: about 20 for 4 languages of 6 questions, not the 5 of one language). The
  two choices are measured in docs/intervals.md#joint-rank-ranges;
- ``mean_rank`` (the mean of the per-language ranks, MIRAGE-BENCH's summary) is reported beside
  it but does not order the table: it can disagree with the mean logit when a model wins some
  languages narrowly and loses others by far;
- ``rank_style_controlled`` (``with_style_controlled``) ranks the judged models by the same
  judge's style-controlled logits (``polyrag.arena.style_control``), beside ``rank``.

A surrogate prediction of a tree ensemble (``random_forest``, ``gradient_boosting``) is an
average of judged models' bootstrap logits, so it cannot leave their range: an unjudged model
better (worse) than every judged one is placed at most at the top (bottom) of the judged range.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.arena.bradley_terry import intervals_and_ranks
from polyrag.stats.bootstrap import rank_by
from polyrag.stats.rank_ranges import Clusters, rank_ranges

#: the label-anchored table's columns and their names in leaderboard_detailed.csv
#: What each model is as a system (``with_systems``), in the leaderboard's column order.
SYSTEM_COLUMNS = ["model", "generator", "passages", "retriever", "reranker", "top_k"]
LABEL_ANCHORED_COLUMNS = {"logit": "label_anchored_logit", "ci_low": "label_anchored_ci_low",
                          "ci_high": "label_anchored_ci_high", "rank": "label_anchored_rank",
                          "rank_best": "label_anchored_rank_best", "rank_worst": "label_anchored_rank_worst",
                          "note": "label_anchored_note"}
SHORT_COLUMNS = ["rank", "model", "score", "ci_low", "ci_high", "rank_best", "rank_worst", "judged", "languages",
                 "games", "share_spent"]


def language_table(lang: str, bt: pd.DataFrame, bootstrap: pd.DataFrame, surrogate: pd.DataFrame,
                   surrogate_samples: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One language: the long-form rows and the per-tournament arena logits (tournament x model)."""
    rows = surrogate[["model", "predicted_logit"]].rename(columns={"predicted_logit": "surrogate_logit"})
    rows = rows.merge(bt[["model", "logit", "ci_low", "ci_high"]].rename(
        columns={"logit": "bt_logit", "ci_low": "bt_ci_low", "ci_high": "bt_ci_high"}), on="model", how="left")
    rows["judged"] = rows["bt_logit"].notna()
    rows["arena_logit"] = rows["bt_logit"].where(rows["judged"], rows["surrogate_logit"])
    rows["rank"] = rank_by(rows["arena_logit"]).astype(int).to_numpy()
    rows.insert(1, "lang", lang)
    rows["n_questions"] = int(bt["n_questions"].iloc[0])  # the language's questions
    # the clusters of each model's interval: the questions it played (the surrogate predicts from all)
    played = bt.set_index("model")["model_questions" if "model_questions" in bt else "n_questions"]
    rows["model_questions"] = rows["model"].map(played).where(rows["judged"], rows["n_questions"]).astype(int)
    judged_samples = bootstrap.pivot(index="tournament", columns="model", values="logit")
    predicted_samples = surrogate_samples.pivot(index="tournament", columns="model", values="predicted_logit")
    samples = pd.DataFrame({model: judged_samples[model] if judged else predicted_samples[model]
                            for model, judged in zip(rows["model"], rows["judged"])})
    return rows.sort_values(["rank", "model"], ignore_index=True), samples


def leaderboard(per_language: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(leaderboard, by_language)`` from ``{lang: (rows, samples)}`` of ``language_table``."""
    by_language = pd.concat([rows for rows, _ in per_language.values()], ignore_index=True)
    languages = list(per_language)
    ranks = by_language.pivot(index="model", columns="lang", values="rank")[languages]
    logits = by_language.pivot(index="model", columns="lang", values="arena_logit")[languages]
    models = ranks.index
    # A model's cells exist in the languages it answers only (NaN elsewhere): its score and each of
    # its tournaments are means over those.
    samples = np.nanmean([per_language[lang][1].reindex(columns=models).to_numpy() for lang in languages], axis=0)
    score = logits.mean(axis=1, skipna=True).to_numpy()
    ranked_on = logits.notna().apply(lambda row: ",".join(lang for lang in languages if row[lang]), axis=1)
    played = by_language.pivot(index="model", columns="lang", values="model_questions")[languages].reindex(models)
    # The score's interval at the fewest questions of a language: at the pooled (Welch-Satterthwaite)
    # degrees of freedom it covered 0.932 at 4 x 6 questions, where the penalised fits' bias, the
    # same in every language, does not shrink as the pooled variance does; the rank ranges at the
    # pooled ones covered 1.000 and are narrower (docs/intervals.md#joint-rank-ranges).
    low, high, _, _ = intervals_and_ranks(score, samples, played.min(axis=1).to_numpy(int))
    variances = np.array([per_language[lang][1].reindex(columns=models).to_numpy().var(axis=0, ddof=1)
                          for lang in languages])  # NaN where a model does not answer the language
    best, worst = rank_ranges(score, samples, Clusters.pooled(variances, played.to_numpy(float).T))
    table = pd.DataFrame({"model": models, "rank": rank_by(score).astype(int).to_numpy(),
                          "rank_best": best, "rank_worst": worst, "mean_rank": ranks.mean(axis=1).to_numpy(),
                          "score": score, "ci_low": low, "ci_high": high,
                          "judged": by_language.groupby("model")["judged"].all().reindex(models).to_numpy(),
                          "languages": ranked_on.to_numpy()})
    for lang in languages:
        table[f"rank_{lang}"] = ranks[lang].astype("Int64").array  # empty where the model does not answer
    table = table.sort_values(["rank", "model"], ignore_index=True)
    columns = ["model", "lang", "judged", "bt_logit", "bt_ci_low", "bt_ci_high", "surrogate_logit", "arena_logit", "rank",
               "n_questions", "model_questions"]
    return table, by_language[columns]


def short_leaderboard(detailed: pd.DataFrame) -> pd.DataFrame:
    """The columns of ``SHORT_COLUMNS`` the detailed table has (games and share spent: under a budget)."""
    return detailed[[column for column in SHORT_COLUMNS if column in detailed.columns]]


def with_mars_scores(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Add ``mars_languages`` (the languages MARS scored, which may be fewer than the arena's) and
    ``mars_{metric}`` with ``_ci_low``/``_ci_high``: each model's PPI score over those languages
    (the ``all`` rows of results/mars/scores/{model}.csv). A score left empty (not estimable:
    ``polyrag.mars.estimates``) has an empty interval here too: the scores file keeps its bound."""
    pooled = scores[scores["lang"] == "all"].copy()
    pooled.loc[pooled["score"].isna(), ["ci_low", "ci_high"]] = np.nan
    scored = scores[scores["lang"] != "all"].groupby("model")["lang"].agg(lambda langs: ",".join(sorted(set(langs))))
    wide = {"mars_languages": scored}
    for metric, rows in pooled.groupby("metric", sort=False):
        rows = rows.set_index("model")
        for column, suffix in (("score", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
            wide[f"mars_{metric}{suffix}"] = rows[column]
    return table.merge(pd.DataFrame(wide), left_on="model", right_index=True, how="left")


def with_style_controlled(table: pd.DataFrame, style_ranks: pd.DataFrame) -> pd.DataFrame:
    """``rank_style_controlled`` next to ``rank`` and the style-controlled score with its interval
    after ``ci_high``, from ``style_control.style_controlled_ranks`` (empty for unjudged models)."""
    merged = table.merge(style_ranks, on="model", how="left")
    merged["rank_style_controlled"] = merged["rank_style_controlled"].astype("Int64")
    style = ["score_style_controlled", "ci_low_style_controlled", "ci_high_style_controlled"]
    columns = list(table.columns)
    columns.insert(columns.index("rank") + 1, "rank_style_controlled")
    for offset, column in enumerate(style, start=1):
        columns.insert(columns.index("ci_high") + offset, column)
    return merged[columns]


def with_budget(table: pd.DataFrame, by_language: pd.DataFrame, bradley_terry: dict[str, pd.DataFrame],
                records: dict[str, dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Under a judging budget: ``games`` (valid judge verdicts in the model's pairs, from each
    language's Bradley-Terry table) and ``share_spent`` (of the exhaustive design, from each
    language's last round record, ``polyrag.arena.rounds.round_record``). Per language in
    ``by_language``; in ``table`` the games summed and the share averaged over languages."""
    games = pd.concat([bt[["model", "games"]].assign(lang=lang) for lang, bt in bradley_terry.items()])
    share = pd.Series({lang: record["share_spent"] for lang, record in records.items()}, name="share_spent")
    by_language = by_language.merge(games, on=["model", "lang"], how="left")
    by_language["games"] = by_language["games"].astype("Int64")  # unjudged models: no games
    by_language = by_language.merge(share, left_on="lang", right_index=True, how="left")
    totals = games.groupby("model")["games"].sum()
    table = table.assign(games=table["model"].map(totals).astype("Int64"), share_spent=share.mean())
    return table, by_language


def with_systems(table: pd.DataFrame, components: dict[str, dict[str, str]], features: pd.DataFrame) -> pd.DataFrame:
    """What each model is as a system (``generator``, ``passages``: ``config.queries.system_components``)
    and ``unjudged_citations``: the mean over its answers that cite something of the share of their
    citations naming a passage nobody judged for the question (``features.deterministic``; left out
    of the citation features, never counted as non-relevant). Null where no answer cites anything."""
    systems = pd.DataFrame.from_dict(components, orient="index").rename_axis("model").reset_index()
    # in this order whatever the order of the entries' keys
    systems = systems[[c for c in SYSTEM_COLUMNS if c in systems] + [c for c in systems if c not in SYSTEM_COLUMNS]]
    if "top_k" in systems:
        systems["top_k"] = systems["top_k"].astype("Int64")  # empty for a system no retriever feeds
    unjudged = features.groupby("model")["unjudged_citations"].mean().rename("unjudged_citations")
    return table.merge(systems, on="model", how="left").merge(unjudged, left_on="model", right_index=True, how="left")


def with_retrieval(table: pd.DataFrame, retrieval: pd.DataFrame, runs: dict[str, str],
                   measures: tuple[str, ...] = ("nDCG@10", "Recall@5")) -> pd.DataFrame:
    """Beside each retrieved system (``runs``: model -> the name of the run it reads) the measures of
    its run over all languages (the retrieval leaderboard's ``all`` row, or its one language's), as
    ``retrieval_{measure}`` with ``_lower``/``_upper``; empty for other systems."""
    languages = retrieval["lang"].unique()
    overall = retrieval[retrieval["lang"] == ("all" if len(languages) > 1 else languages[0])].set_index("model")
    columns = [f"{m}{suffix}" for m in measures for suffix in ("", "_lower", "_upper")]
    values = overall.reindex([runs.get(model, "") for model in table["model"]])[columns]
    return pd.concat([table, values.set_axis(table.index).add_prefix("retrieval_")], axis=1)


def with_label_anchored(table: pd.DataFrame, anchored: pd.DataFrame, judge: str) -> pd.DataFrame:
    """``label_anchored_*``: each model's logit, interval and joint rank-set anchored on human labels
    (``polyrag.arena.label_anchored``; empty for models the anchored judge does not judge, and for
    models whose label-anchored logit is not estimable, which ``label_anchored_note`` explains), and
    ``label_anchored_by``, which judge and how many labels over which languages."""
    scope = anchored["scope"].iloc[0]
    languages = "all labelled languages" if scope == "all" else scope
    by = f"{judge} + {int(anchored['n_labels'].iloc[0])} human labels ({languages})"
    columns = anchored.reindex(columns=["model", *LABEL_ANCHORED_COLUMNS]).rename(columns=LABEL_ANCHORED_COLUMNS)
    merged = table.merge(columns, on="model", how="left")
    for column in ("label_anchored_rank", "label_anchored_rank_best", "label_anchored_rank_worst"):
        merged[column] = merged[column].astype("Int64")
    return merged.assign(label_anchored_by=by)
