"""MEMERAG Figure 2: balanced accuracy per language and evaluator with its 95% interval, hatched
where the best of its column is not significantly better (paired permutation test over
questions, Holm-adjusted over the column's pairs)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from polyrag.meta_eval.summary import worse_than_best
from polyrag.plots import matplotlib  # noqa: F401 - selects the Agg backend
from polyrag.plots.arena import save


def balanced_accuracy_bars(summary: pd.DataFrame, significance: pd.DataFrame, languages: list[str], path: str) -> None:
    tasks = sorted(summary["task"].unique())
    columns = [*languages, "all"]
    summary = summary.assign(worse_than_best=worse_than_best(summary, significance))
    systems = summary[["evaluator", "prompt"]].drop_duplicates().sort_values(["evaluator", "prompt"])
    names = [e if p == "-" else f"{e} ({p})" for e, p in systems.itertuples(index=False)]
    width = 0.8 / len(systems)
    colours = plt.get_cmap("tab10")
    fig, axes = plt.subplots(len(tasks), 1, figsize=(max(7, 1.2 * len(columns) * max(1, len(systems) / 3)),
                                                      3.6 * len(tasks)), squeeze=False)
    for ax, task in zip(axes[:, 0], tasks):
        for k, (evaluator, prompt) in enumerate(systems.itertuples(index=False)):
            rows = summary[(summary["task"] == task) & (summary["evaluator"] == evaluator)
                           & (summary["prompt"] == prompt)].set_index("lang").reindex(columns)
            x = np.arange(len(columns)) + (k - (len(systems) - 1) / 2) * width
            errors = np.vstack([rows["balanced_accuracy"] - rows["ci_low"], rows["ci_high"] - rows["balanced_accuracy"]])
            bars = ax.bar(x, rows["balanced_accuracy"], width, yerr=errors, capsize=2, color=colours(k % 10),
                          label=names[k])
            for bar, worse in zip(bars, rows["worse_than_best"]):
                if worse is False:  # best, or not significantly worse than the best (NaN: no bar)
                    bar.set_hatch("//")
        ax.set_xticks(np.arange(len(columns)), columns)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_ylabel("balanced accuracy")
        ax.set_title(task)
    axes[0, 0].legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.text(0.01, 0.0, "bars: 95% intervals (questions as clusters); hatched: not significantly worse than the best "
             "in its column (Holm-adjusted)", fontsize=8)
    save(fig, path)
