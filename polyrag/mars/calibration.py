"""The human calibration set that PPI rectifies the judges with (PPI's labelled data only: the
judges choose their epoch on held-out synthetic questions, ``judges.early_stopping_split``).

Sources:
- ``gold``: XQuAD triples with MARS negatives (labels known by construction, a stand-in for
  human labels that the mock-system meta-evaluation also uses);
- ``memerag``: MEMERAG's expert labels; an answer is faithful when every sentence is
  ``Supported`` and relevant when no sentence is ``Unrelated to the question`` (an answer with a
  ``Challenging to determine`` sentence and no unsupported one has no faithfulness label);
- ``tsv``: the user's own file in the ARES/MARS schema.

Each language pair keeps at most ``max_size`` labelled rows (a seeded sample).
"""

from __future__ import annotations

import logging

import pandas as pd

from polyrag.csv_tables import read_text_table
from polyrag.errors import DataError
from polyrag.mars.labels import COLUMNS, LABEL_COLUMNS, TEXT_COLUMNS, parse_label
from polyrag.mars.negatives import with_negatives
from polyrag.seeds import rng_for

log = logging.getLogger(__name__)

# Seed keys from when this was called the reference set: kept, so the same config draws the same rows.
CAP_SEED_KEY, NEGATIVES_SEED_KEY = "reference-cap", "reference"


def cap_per_pair(table: pd.DataFrame, max_size: int, seed: int) -> pd.DataFrame:
    parts = []
    for (doc_lang, qa_lang), rows in table.groupby(["doc_lang", "qa_lang"], sort=True):
        if len(rows) > max_size:
            keep = rng_for(seed, "mars", CAP_SEED_KEY, doc_lang, qa_lang).choice(len(rows), max_size, replace=False)
            rows = rows.iloc[sorted(keep)]
        parts.append(rows)
    return pd.concat(parts, ignore_index=True)


def without_evaluated_questions(table: pd.DataFrame, evaluated: set[str], source: str) -> pd.DataFrame:
    """PPI needs the calibration set apart from the answers it corrects: rows asking a question the
    workflow evaluates are dropped (and counted in the log)."""
    overlap = table["Query"].str.strip().isin(evaluated)
    if overlap.any():
        log.warning("%s: %d rows ask a question the workflow evaluates; left out", source, int(overlap.sum()))
    return table[~overlap].reset_index(drop=True)


def require_labels(table: pd.DataFrame, metrics: list[str], source: str) -> None:
    """Stop naming the label column a needed metric has no labels in."""
    for metric in metrics:
        column = LABEL_COLUMNS[metric]
        if column not in table.columns or table[column].notna().sum() == 0:
            raise DataError(f"{source}: the calibration set has no {column} labels, which metric {metric!r} needs "
                            "(drop it from mars.metrics or use a calibration set that labels it)")


def calibration_from_gold(gold_by_pair: dict[str, pd.DataFrame], seed: int) -> pd.DataFrame:
    parts = []
    for pair, gold in sorted(gold_by_pair.items()):
        rows = gold[gold["role"] == "calibration"].reset_index(drop=True)
        if len(rows) < 2:
            raise DataError(f"XQuAD pair {pair}: {len(rows)} calibration questions left after the exclusions")
        pool = gold.loc[gold["role"] != "few_shot", "Document"].unique().tolist()
        table, dropped = with_negatives(rows, rng_for(seed, "mars", NEGATIVES_SEED_KEY, pair), passage_pool=pool)
        log.info("XQuAD pair %s: %d calibration questions; LC negatives dropped (and their positives' LC labels): %s",
                 pair, len(rows), dropped)
        parts.append(table)
    return pd.concat(parts, ignore_index=True)


def calibration_from_tsv(path: str) -> pd.DataFrame:
    try:
        table = read_text_table(path, sep="\t")
    except (OSError, pd.errors.ParserError) as error:
        raise DataError(f"{path}: cannot read the calibration TSV ({error})") from None
    missing = [c for c in (*TEXT_COLUMNS, "doc_lang", "qa_lang") if c not in table.columns]
    if missing:
        raise DataError(f"{path}: calibration TSV has no column {missing[0]!r}")
    out = table[[*TEXT_COLUMNS, "doc_lang", "qa_lang"]].copy()
    for column in LABEL_COLUMNS.values():
        if column in table.columns:
            out[column] = [parse_label(v, f"{path}: row {i + 2} {column}") for i, v in enumerate(table[column])]
        else:
            out[column] = None
        out[column] = out[column].astype("float64")
    return out[COLUMNS]


def calibration_from_memerag(sentences: pd.DataFrame) -> pd.DataFrame:
    """One row per MEMERAG answer: its sentences joined, the passages joined, answer-level labels."""
    rows = []
    for (lang, query_id), group in sentences.groupby(["lang", "query_id"], sort=True):
        faithful = group["faithful"]
        if (faithful == 0).any():
            af = 0.0
        elif faithful.isna().any():
            af = None  # a Challenging sentence and no unsupported one: undetermined
        else:
            af = 1.0
        rows.append({
            "Query": group["query"].iloc[0], "Document": "\n\n".join(group["context"].iloc[0]),
            "Answer": " ".join(group.sort_values("sentence_id")["sentence"]),
            LABEL_COLUMNS["cr"]: None, LABEL_COLUMNS["ar"]: float((group["relevant"] == 1).all()),
            LABEL_COLUMNS["af"]: af, LABEL_COLUMNS["lc"]: None, "doc_lang": lang, "qa_lang": lang,
        })
    table = pd.DataFrame(rows)
    for column in LABEL_COLUMNS.values():
        table[column] = table[column].astype("float64")
    return table[COLUMNS]
