"""Arena figures: rank heatmap, BT intervals, feature lollipops, importances, surrogate vs BT.

Sizes grow with the number of models and languages so that 19 models by 18 languages stay
readable; unjudged models (ranked by the surrogate alone) are marked with ``*``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from polyrag.plots import matplotlib  # noqa: F401 - selects the Agg backend


def label(model: str, judged: bool) -> str:
    return model if judged else f"{model} *"


def model_colours(models: list[str]) -> dict[str, tuple]:
    palette = plt.get_cmap("tab20")
    return {model: palette(i % 20) for i, model in enumerate(models)}


def rank_heatmap(leaderboard: pd.DataFrame, languages: list[str], path: str) -> None:
    """Models (rows, by overall rank) by languages, each cell the model's rank there."""
    ranks = leaderboard[[f"rank_{lang}" for lang in languages]].to_numpy(float)
    n_models, n_langs = ranks.shape
    fig, ax = plt.subplots(figsize=(2.5 + 0.55 * n_langs, 1.2 + 0.38 * n_models))
    image = ax.imshow(ranks, cmap="viridis_r", aspect="auto", vmin=1, vmax=max(n_models, 2))
    for (row, col), value in np.ndenumerate(ranks):
        ax.text(col, row, f"{value:.0f}", ha="center", va="center", fontsize=8,
                color="black" if value < n_models / 2 else "white")
    ax.set_xticks(range(n_langs), languages)
    ax.set_yticks(range(n_models), [f"{r}. {label(m, j)}" for r, m, j in
                                    zip(leaderboard["rank"], leaderboard["model"], leaderboard["judged"])])
    ax.xaxis.tick_top()
    fig.colorbar(image, ax=ax, label="rank (1 = best)", shrink=0.6)
    save(fig, path)


def bt_logits(by_language: pd.DataFrame, languages: list[str], path: str) -> None:
    """Per language, judged models' BT logits with 95% intervals, best on top."""
    judged = by_language[by_language["judged"]]
    n_models = judged["model"].nunique()
    cols = min(len(languages), 3)
    rows = math.ceil(len(languages) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, (0.8 + 0.3 * n_models) * rows), squeeze=False)
    for ax, lang in zip(axes.flat, languages):
        table = judged[judged["lang"] == lang].sort_values("bt_logit")
        y = np.arange(len(table))
        ax.errorbar(table["bt_logit"], y, xerr=[table["bt_logit"] - table["bt_ci_low"],
                                                table["bt_ci_high"] - table["bt_logit"]],
                    fmt="o", capsize=3)
        ax.set_yticks(y, table["model"], fontsize=8)
        ax.axvline(0, color="grey", lw=0.5)
        ax.set_title(lang)
        ax.set_xlabel("Bradley-Terry logit")
    for ax in axes.flat[len(languages):]:
        ax.axis("off")
    save(fig, path)


def feature_lollipops(model_features: dict[str, pd.DataFrame], path: str) -> None:
    """One panel per feature: per language (rows) a line over the models' range, a dot per model."""
    languages = list(model_features)
    features = [c for c in next(iter(model_features.values())).columns if c != "model"]
    models = sorted(set().union(*(frame["model"] for frame in model_features.values())))
    colours = model_colours(models)
    cols = min(len(features), 4)
    rows = math.ceil(len(features) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, (0.8 + 0.28 * len(languages)) * rows), squeeze=False)
    for ax, feature in zip(axes.flat, features):
        for y, lang in enumerate(languages):
            values = model_features[lang].set_index("model")[feature] if feature in model_features[lang] else None
            if values is None or values.isna().all():
                continue
            ax.hlines(y, values.min(), values.max(), color="lightgrey", lw=2, zorder=1)
            ax.scatter(values, [y] * len(values), c=[colours[m] for m in values.index], s=18, zorder=2)
        ax.set_yticks(range(len(languages)), languages, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(feature, fontsize=9)
    for ax in axes.flat[len(features):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], marker="o", ls="", color=colours[m], label=m) for m in models]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(models), 5), fontsize=8,
               bbox_to_anchor=(0.5, -0.02 - 0.025 * math.ceil(len(models) / 5)))
    save(fig, path)


def importance_boxplot(importances: dict[str, dict[str, float]], path: str) -> None:
    """Surrogate feature importances, one box per feature over languages, most important on top."""
    table = pd.DataFrame(importances).T  # languages x features
    order = table.median().sort_values().index
    fig, ax = plt.subplots(figsize=(7, 1 + 0.35 * len(order)))
    ax.boxplot([table[f].dropna() for f in order], vert=False, tick_labels=order)
    ax.set_xlabel("feature importance")
    save(fig, path)


def surrogate_vs_bt(by_language: pd.DataFrame, path: str) -> None:
    """Surrogate-predicted against BT logits, one point per judged model and language."""
    judged = by_language[by_language["judged"]]
    models = sorted(judged["model"].unique())
    colours = model_colours(models)
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    for model in models:
        rows = judged[judged["model"] == model]
        ax.scatter(rows["bt_logit"], rows["surrogate_logit"], color=colours[model], label=model, s=20)
    low = min(judged["bt_logit"].min(), judged["surrogate_logit"].min())
    high = max(judged["bt_logit"].max(), judged["surrogate_logit"].max())
    ax.plot([low, high], [low, high], color="grey", lw=0.8)
    ax.set_xlabel("Bradley-Terry logit")
    ax.set_ylabel("surrogate-predicted logit")
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    save(fig, path)


def save(fig, path: str) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
