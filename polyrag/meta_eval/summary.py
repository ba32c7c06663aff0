"""The meta-evaluation tables: summary.csv, significance.csv and fine_grained.csv.

A language whose labels of a task hold one class only (e.g. no ``Unrelated`` sentence) has no
balanced accuracy: its row reports the classes present, the sentences per class and each
class's recall with a Clopper-Pearson interval, and leaves ``balanced_accuracy`` empty; the
``all`` column leaves that language out and names it (``languages_left_out``), so it always
averages two classes per language. Each case is logged as a warning.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from polyrag.errors import DataError
from polyrag.meta_eval.statistics import (balanced_accuracy, balanced_accuracy_interval, clustered_se, group_ids,
                                          group_keys, holm, paired_permutation_test, question_ids, recall_interval,
                                          se_note)

KEYS = ["lang", "query_id", "sentence_id"]
SYSTEM = ["evaluator", "prompt", "task"]
CLASSES = {1: "positive", 0: "negative"}  # faithfulness: Supported / Not Supported; relevance: relevant / Unrelated

log = logging.getLogger("polyrag")


def outcomes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Whether each row has a prediction, and whether it is right (a missing one is wrong)."""
    prediction = frame["prediction"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    answered = ~np.isnan(prediction)
    return answered, answered & (prediction == frame["label"].to_numpy())


def one_class_languages(predictions: pd.DataFrame) -> dict[str, list[str]]:
    """Per task, the languages whose labels hold a single class."""
    classes = predictions.groupby(["task", "lang"])["label"].nunique()
    return {task: sorted(classes[task].index[classes[task] < 2]) for task in classes.index.unique("task")}


def warn_one_class(left_out: dict[str, list[str]], predictions: pd.DataFrame) -> None:
    """One warning per task and language, however many evaluators scored it."""
    sentences = predictions[["task", *KEYS, "label"]].drop_duplicates()
    for task, languages in left_out.items():
        for lang in languages:
            labels = sentences.loc[(sentences["task"] == task) & (sentences["lang"] == lang), "label"]
            log.warning("%s %s: every label is %s (%d sentences): no balanced accuracy for this language, and "
                        "the 'all' column leaves it out", task, lang, CLASSES[int(labels.iloc[0])], labels.size)


def columns(predictions: pd.DataFrame, left_out: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """Each language alone, then the languages with both classes together (``all``)."""
    languages = sorted(predictions["lang"].unique())
    return ([(lang, predictions[predictions["lang"] == lang]) for lang in languages]
            + [("all", predictions[~predictions["lang"].isin(left_out)])])


def defined_balanced_accuracy(correct: np.ndarray, labels: np.ndarray, langs: np.ndarray) -> float:
    """Balanced accuracy when every language present has sentences of both classes, else NaN
    (with one class it would be that class's recall under another name)."""
    if len(labels) == 0 or pd.Series(labels).groupby(langs).nunique().min() < len(CLASSES):
        return np.nan
    return float(balanced_accuracy(correct, group_ids(labels, langs)))


def class_columns(labels: np.ndarray, correct: np.ndarray) -> dict:
    """The classes present, sentences per class and each class's recall with its 95% interval."""
    row = {"classes_present": ",".join(name for value, name in CLASSES.items() if (labels == value).any())}
    for value, name in CLASSES.items():
        members = labels == value
        total, hits = int(members.sum()), int(correct[members].sum())
        low, high = recall_interval(hits, total)
        row |= {f"n_{name}": total, f"recall_{name}": hits / total if total else np.nan,
                f"recall_{name}_ci_low": low, f"recall_{name}_ci_high": high}
    return row


def summarise(predictions: pd.DataFrame) -> pd.DataFrame:
    """Balanced accuracy per evaluator, prompt, task and language (missing predictions wrong, and
    excluded), with its question-clustered standard error and 95% interval and per-class recalls.
    ``se`` is left empty (NaN) where some class's recall is 0 or 1 or rests on a handful of
    effective sentences, since it then leaves that class's uncertainty out; ``se_note`` says which
    class, and the interval, built for small counts, is the statement."""
    left_out = one_class_languages(predictions)
    warn_one_class(left_out, predictions)
    rows = []
    for (evaluator, prompt, task), frame in predictions.groupby(SYSTEM, sort=True):
        for lang, part in columns(frame, left_out[task]):
            labels, langs = part["label"].to_numpy(), part["lang"].to_numpy()
            clusters = question_ids(langs, part["query_id"].astype(str).to_numpy())
            answered, correct = outcomes(part)
            score = defined_balanced_accuracy(correct, labels, langs)
            groups = group_ids(labels, langs)
            low, high, se, note = np.nan, np.nan, np.nan, ""
            if not np.isnan(score):
                low, high = balanced_accuracy_interval(correct, groups, clusters, langs)
                note = se_note(correct, groups, clusters, langs, group_names(labels, langs))
                se = np.nan if note else clustered_se(correct, groups, clusters, langs)
            rows.append({
                "evaluator": evaluator, "prompt": prompt, "task": task, "lang": lang, "balanced_accuracy": score,
                "se": se, "ci_low": low, "ci_high": high,
                "n": len(part), "n_questions": int(clusters.max() + 1) if len(part) else 0,
                "n_missing": int((~answered).sum()),
                "balanced_accuracy_excluding_missing": defined_balanced_accuracy(
                    correct[answered], labels[answered], langs[answered]),
                **class_columns(labels, correct),
                "languages_left_out": ",".join(left_out[task]) if lang == "all" else "",
                "se_note": note,
            })
    return pd.DataFrame(rows)


def group_names(labels: np.ndarray, langs: np.ndarray) -> list[str]:
    """The name of each (language, class) group, in the order of ``statistics.group_ids``."""
    return [f"{lang} {CLASSES[int(label)]}" for lang, label in group_keys(labels, langs)[1]]


def paired_outcomes(part: pd.DataFrame, where: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """One row per labelled sentence with each evaluator's correctness as a column, the
    (language, class) group and the question (cluster) of each row. Every evaluator must have
    scored the same sentences: a paired test over padded or unmatched rows would compare invented
    outcomes."""
    duplicated = part[part.duplicated(SYSTEM + KEYS, keep=False)]
    if not duplicated.empty:
        raise DataError(f"{where}: {duplicated.iloc[0][['evaluator', *KEYS]].to_dict()} has more than one prediction")
    sentences = part[KEYS + ["label"]].drop_duplicates()
    if sentences[KEYS].duplicated().any():
        raise DataError(f"{where}: sentence {sentences[sentences[KEYS].duplicated()].iloc[0][KEYS].to_dict()} "
                        "has different labels in different evaluators' files")
    coverage = part.groupby(["evaluator", "prompt"]).size()
    if (coverage != len(sentences)).any():
        raise DataError(f"{where}: evaluators scored different sentences ({coverage.to_dict()} of {len(sentences)})")
    correct = part.assign(correct=outcomes(part)[1]).pivot(index=KEYS, columns=["evaluator", "prompt"],
                                                           values="correct")
    labels = sentences.set_index(KEYS)["label"].reindex(correct.index).to_numpy()
    langs = correct.index.get_level_values("lang").to_numpy()
    clusters = question_ids(langs, correct.index.get_level_values("query_id").astype(str).to_numpy())
    return correct, group_ids(labels, langs), clusters


def best_first(column: pd.DataFrame) -> pd.DataFrame:
    """Summary rows by balanced accuracy, highest first (ties by name, so the order is fixed)."""
    return column.sort_values(["balanced_accuracy", "evaluator", "prompt"], ascending=[False, True, True])


def significance(predictions: pd.DataFrame, summary: pd.DataFrame, n_permutations: int, rng: np.random.Generator,
                 alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of evaluators (and prompts) in each column (task, language): the difference in
    balanced accuracy (``evaluator`` minus ``vs_evaluator``, the better one first, as in
    summary.csv), the sentences and questions compared, a paired permutation test's p-value
    (whole questions swapped) and its Holm adjustment over the column's pairs (``p_holm``), so that
    the chance of any false ``significant`` in a column is at most ``alpha``. Comparing each
    evaluator with the observed best instead would choose the reference from the same data and
    leave the family uncorrected. Columns without a balanced accuracy (one class) are left out."""
    left_out = one_class_languages(predictions)
    rows = []
    for (task, lang), column in summary.dropna(subset=["balanced_accuracy"]).groupby(["task", "lang"], sort=True):
        part = predictions[predictions["task"] == task]
        part = part[part["lang"] == lang] if lang != "all" else part[~part["lang"].isin(left_out[task])]
        correct, groups, clusters = paired_outcomes(part, f"{task} {lang}")
        ordered = best_first(column)
        systems = list(zip(ordered["evaluator"], ordered["prompt"]))
        family = []
        for i, better in enumerate(systems):
            for worse in systems[i + 1:]:
                difference, p_value = paired_permutation_test(correct[better].to_numpy(bool),
                                                              correct[worse].to_numpy(bool), groups, clusters,
                                                              n_permutations, rng)
                family.append({"task": task, "lang": lang, "evaluator": better[0], "prompt": better[1],
                               "vs_evaluator": worse[0], "vs_prompt": worse[1], "difference": difference,
                               "n": len(correct), "n_questions": int(clusters.max() + 1), "p_value": p_value})
        if family:
            adjusted = holm([row["p_value"] for row in family])
            for row, p_holm in zip(family, adjusted):
                row |= {"p_holm": float(p_holm), "significant": bool(p_holm < alpha)}
        rows += family
    return pd.DataFrame(rows, columns=["task", "lang", "evaluator", "prompt", "vs_evaluator", "vs_prompt", "difference",
                                       "n", "n_questions", "p_value", "p_holm", "significant"])


def worse_than_best(summary: pd.DataFrame, significance: pd.DataFrame) -> pd.Series:
    """Per summary row, whether the best evaluator of its column is significantly better (Holm);
    False for the best itself."""
    best = best_first(summary).groupby(["task", "lang"]).head(1)[["task", "lang", "evaluator", "prompt"]]
    beaten = significance[significance["significant"].astype(bool)].merge(best, on=["task", "lang", "evaluator", "prompt"])
    keys = set(zip(beaten["task"], beaten["lang"], beaten["vs_evaluator"], beaten["vs_prompt"]))
    return pd.Series([key in keys for key in zip(summary["task"], summary["lang"], summary["evaluator"],
                                                 summary["prompt"])], index=summary.index)


def fine_grained(predictions: pd.DataFrame) -> pd.DataFrame:
    """Faithfulness accuracy per fine-grained label (MEMERAG's error taxonomy), missing as wrong."""
    faithful = predictions[predictions["task"] == "faithfulness"].copy()
    faithful["correct"] = outcomes(faithful)[1]
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
    table = faithfulness[["evaluator", "prompt", "lang", "balanced_accuracy", "se", "ci_low", "ci_high", "n",
                          "n_missing"]].rename(
        columns={"evaluator": "judge"})
    table.insert(1, "roles", table["judge"].map(lambda judge: ", ".join(roles[judge])))
    return table.reset_index(drop=True)
