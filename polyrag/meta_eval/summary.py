"""The meta-evaluation tables: summary.csv, significance.csv and fine_grained.csv."""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.meta_eval.statistics import balanced_accuracy, bootstrap_se, group_ids, paired_permutation_test

KEYS = ["lang", "query_id", "sentence_id"]
SYSTEM = ["evaluator", "prompt", "task"]


def columns(predictions: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Each language alone, then all languages together (``all``)."""
    languages = sorted(predictions["lang"].unique())
    return [(lang, predictions[predictions["lang"] == lang]) for lang in languages] + [("all", predictions)]


def summarise(predictions: pd.DataFrame, n_bootstrap: int, rng: np.random.Generator) -> pd.DataFrame:
    """Balanced accuracy per evaluator, prompt, task and language (missing predictions wrong, and
    excluded), with bootstrap standard errors."""
    rows = []
    for (evaluator, prompt, task), frame in predictions.groupby(SYSTEM, sort=True):
        for lang, part in columns(frame):
            labels, langs = part["label"].to_numpy(), part["lang"].to_numpy()
            groups = group_ids(labels, langs)
            answered = part["prediction"].notna().to_numpy()
            correct = answered & (part["prediction"].to_numpy() == labels)
            rows.append({
                "evaluator": evaluator, "prompt": prompt, "task": task, "lang": lang,
                "balanced_accuracy": float(balanced_accuracy(correct, groups)),
                "se": bootstrap_se(correct, groups, langs, n_bootstrap, rng),
                "n": len(part), "n_missing": int((~answered).sum()),
                "balanced_accuracy_excluding_missing": (
                    float(balanced_accuracy(correct[answered], group_ids(labels[answered], langs[answered])))
                    if answered.any() else np.nan),
            })
    return pd.DataFrame(rows)


def significance(predictions: pd.DataFrame, summary: pd.DataFrame, n_permutations: int,
                 rng: np.random.Generator) -> pd.DataFrame:
    """Each evaluator (and prompt) against the best of its column (task, language): the
    difference in balanced accuracy and a paired permutation test's p-value."""
    rows = []
    for (task, lang), column in summary.groupby(["task", "lang"], sort=True):
        best = column.sort_values("balanced_accuracy", ascending=False).iloc[0]
        part = predictions[predictions["task"] == task]
        if lang != "all":
            part = part[part["lang"] == lang]
        wide = part.pivot_table(index=KEYS + ["label"], columns=["evaluator", "prompt"], values="prediction",
                                aggfunc="first", dropna=False).reset_index()
        labels, langs = wide["label"].to_numpy(), wide["lang"].to_numpy()
        groups = group_ids(labels, langs)

        def correct(evaluator: str, prompt: str) -> np.ndarray:
            values = wide[(evaluator, prompt)].to_numpy()
            return ~pd.isna(values) & (values == labels)

        reference = correct(best["evaluator"], best["prompt"])
        for _, other in column.iterrows():
            is_best = (other["evaluator"], other["prompt"]) == (best["evaluator"], best["prompt"])
            difference, p_value = (0.0, 1.0) if is_best else paired_permutation_test(
                reference, correct(other["evaluator"], other["prompt"]), groups, n_permutations, rng)
            rows.append({"task": task, "lang": lang, "evaluator": other["evaluator"], "prompt": other["prompt"],
                         "best_evaluator": best["evaluator"], "best_prompt": best["prompt"],
                         "difference": difference, "p_value": p_value, "is_best": is_best,
                         "significantly_worse": (not is_best) and p_value < 0.05})
    return pd.DataFrame(rows)


def fine_grained(predictions: pd.DataFrame) -> pd.DataFrame:
    """Faithfulness accuracy per fine-grained label (MEMERAG's error taxonomy), missing as wrong."""
    faithful = predictions[predictions["task"] == "faithfulness"].copy()
    faithful["correct"] = faithful["prediction"].notna() & (faithful["prediction"] == faithful["label"])
    faithful["fine_grained_factuality"] = faithful["fine_grained_factuality"].fillna("(none)")
    table = (faithful.groupby(["evaluator", "prompt", "lang", "fine_grained_factuality"])["correct"]
             .agg(accuracy="mean", n="size").reset_index())
    overall = (faithful.groupby(["evaluator", "prompt", "fine_grained_factuality"])["correct"]
               .agg(accuracy="mean", n="size").reset_index().assign(lang="all"))
    return pd.concat([table, overall], ignore_index=True)


def judge_credibility(summary: pd.DataFrame, roles: dict[str, list[str]]) -> pd.DataFrame:
    """The MEMERAG faithfulness balanced accuracy of each judge the workflow uses (pairwise
    judging, LLM features), per prompt and language, where that judge has been meta-evaluated."""
    faithfulness = summary[(summary["task"] == "faithfulness") & summary["evaluator"].isin(roles)]
    table = faithfulness[["evaluator", "prompt", "lang", "balanced_accuracy", "se", "n", "n_missing"]].rename(
        columns={"evaluator": "judge"})
    table.insert(1, "roles", table["judge"].map(lambda judge: ", ".join(roles[judge])))
    return table.reset_index(drop=True)
