"""Human labels for the label-anchored arena: a seeded sample of units, the annotation files, and
the import of what annotators filled in.

The round trip, per language:

1. ``sample_units``: a uniform random sample of the judge's units (a count or a share), each with
   its left/right order drawn at random; the key (which model is left) stays in ``key.csv``.
2. ``task_rows`` -> ``tasks.csv`` / ``tasks.jsonl`` (columns ``unit_id, question, passages,
   answer_left, answer_right, label``) and ``label_studio.json`` + ``label_studio.xml`` (choices
   Left better / Right better / Tie / Can't judge). No model name is in a task.
3. ``read_filled`` reads a filled file in any of those forms (a Label Studio JSON export too);
   ``labelled_units`` joins it to the key: ``label_value`` 1 / 0.5 / 0 for the unit's model_a.
   "Can't judge" and unlabelled units are counted and reported, never dropped silently; an unknown
   ``unit_id``, a repeated one or an unknown label is refused, naming the file and row.
"""

from __future__ import annotations

import io
import json
import logging
from math import floor as floor_count
from pathlib import Path

import numpy as np
import pandas as pd

from polyrag.arena.active import active_inclusion_probabilities
from polyrag.errors import DataError
from polyrag.seeds import rng_for
from polyrag.spreadsheet import from_spreadsheet, write_csv_for_people
from polyrag.systems.passages import given_passages, passages_shown_to_compare

log = logging.getLogger(__name__)

LABELS = ("left", "right", "tie", "cant_judge")
#: Label Studio's choice names, in the order of ``LABELS``
CHOICES = ("Left better", "Right better", "Tie", "Can't judge")
TASK_COLUMNS = ["unit_id", "question", "passages", "answer_left", "answer_right", "label"]
KEY_COLUMNS = ["unit_id", "lang", "query_id", "model_a", "model_b", "model_left", "model_right",
               "inclusion_probability"]

LABEL_STUDIO_CONFIG = """<View>
  <Header value="Question"/>
  <Text name="question" value="$question"/>
  <Header value="Passages"/>
  <Text name="passages" value="$passages"/>
  <Header value="Left answer"/>
  <Text name="answer_left" value="$answer_left"/>
  <Header value="Right answer"/>
  <Text name="answer_right" value="$answer_right"/>
  <Choices name="preference" toName="question" choice="single" required="true">
    <Choice value="Left better"/>
    <Choice value="Right better"/>
    <Choice value="Tie"/>
    <Choice value="Can't judge"/>
  </Choices>
</View>
"""


def sample_units(units: pd.DataFrame, lang: str, seed: int, count: int | None = None, share: float | None = None,
                 design: str = "uniform", floor: float = 0.5) -> pd.DataFrame:
    """The key of a random sample of ``units`` (``polyrag.arena.units.judge_units``): ``uniform``
    draws exactly ``count`` units; ``active`` labels each unit independently with its
    ``inclusion_probability`` (``polyrag.arena.active.active_inclusion_probabilities``:
    ``count`` labels expected, more where the judge is unsure, a ``floor`` share uniform)."""
    population = units.sort_values("unit_id", ignore_index=True)
    size = count if count is not None else floor_count(share * len(population))
    if size > len(population):
        raise DataError(f"arena.human_labels.sample: {size} units asked in {lang!r}, which has {len(population)}")
    # The stream's name is part of the seed: renaming it would draw other units for the same seed.
    rng = rng_for(seed, "gold-sample", lang)
    if design == "active":
        probability = active_inclusion_probabilities(population["judge_value"].to_numpy(float), size, floor)
        chosen = population.assign(inclusion_probability=probability)[rng.random(len(population)) < probability]
        chosen = chosen.reset_index(drop=True)
    else:
        chosen = population.iloc[np.sort(rng.choice(len(population), size, replace=False))].reset_index(drop=True)
        chosen["inclusion_probability"] = size / len(population)
    swap = rng.random(len(chosen)) < 0.5
    chosen["model_left"] = np.where(swap, chosen["model_b"], chosen["model_a"])
    chosen["model_right"] = np.where(swap, chosen["model_a"], chosen["model_b"])
    return chosen[KEY_COLUMNS]


KEY_TEXT_COLUMNS = [column for column in KEY_COLUMNS if column != "inclusion_probability"]


def write_key(key: pd.DataFrame, path: str) -> None:
    """``key.csv``: a person may open it to unblind the sample, and question ids come from the data
    (untrusted): a text cell a spreadsheet would run as a formula gets a quote (``read_key`` strips it)."""
    write_csv_for_people(key, path, KEY_TEXT_COLUMNS)


def read_key(path: str) -> pd.DataFrame:
    """``key.csv`` as ``write_key`` wrote it: ids and model names as text (a numeric-looking
    question id stays text), ``inclusion_probability`` as a number."""
    key = pd.read_csv(path, dtype={column: str for column in KEY_TEXT_COLUMNS}, keep_default_na=False)
    return from_spreadsheet(key, KEY_TEXT_COLUMNS)


#: Who was given a passage, in the annotator's words (the left answer is the first).
GIVEN_TO = {"first": "the left answer only", "second": "the right answer only", "both": "both answers"}


def passages_text(passages) -> str:
    """Passages as an annotator reads them; a passage with ``given`` (answers given different
    passages) says which answer was given it."""
    def heading(p) -> str:
        given = f" (given to {GIVEN_TO[p['given']]})" if "given" in p else ""
        return f"[{p['docid']}]{given} {p['title']}" if p.get("title") else f"[{p['docid']}]{given}"

    return "\n\n".join(f"{heading(p)}\n{p['text']}" if p.get("title") else f"{heading(p)} {p['text']}"
                       for p in passages)


def unit_passages(left: dict, right: dict, record) -> str:
    """The passages of one unit: those both answers were given (as the question's were always
    shown), or their union with each passage naming the answer that was given it."""
    left_given, right_given = given_passages(left, record), given_passages(right, record)
    union = passages_shown_to_compare(left_given, right_given)
    if union is None and left_given:
        return passages_text(left_given)
    return passages_text(union) if union else "(no passages: both answers were written without any)"


def task_rows(key: pd.DataFrame, questions: pd.DataFrame, answers: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The annotation task of every sampled unit (``answers``: model -> its answers file), with the
    passages each answer was given."""
    by_query = questions.assign(query_id=questions["query_id"].astype(str)).set_index("query_id")
    rows_by_id = {model: frame.assign(query_id=frame["query_id"].astype(str)).set_index("query_id", drop=False)
                  for model, frame in answers.items()}

    def answer_row(model: str, query_id: str) -> dict:
        frame = rows_by_id[model]
        return frame.loc[query_id].to_dict() if query_id in frame.index else {"query_id": query_id, "answer": None}

    def shown(model: str, query_id: str) -> str:
        # an answer that could not be parsed is shown as such: it is part of the comparison
        answer = answer_row(model, query_id)["answer"]
        return "(no answer)" if answer is None or pd.isna(answer) or not str(answer).strip() else str(answer)

    rows = []
    for unit in key.itertuples(index=False):
        record = by_query.loc[unit.query_id]
        passages = unit_passages(answer_row(unit.model_left, unit.query_id), answer_row(unit.model_right, unit.query_id),
                                 record)
        rows.append({"unit_id": unit.unit_id, "question": record["query"],
                     "passages": passages,
                     "answer_left": shown(unit.model_left, unit.query_id),
                     "answer_right": shown(unit.model_right, unit.query_id),
                     "label": ""})
    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def write_tasks(tasks: pd.DataFrame, csv_path: str, jsonl_path: str, label_studio_path: str,
                label_studio_config_path: str) -> None:
    """The annotation files. Answers, questions and passages are untrusted text: in the CSV, which
    people open in a spreadsheet, a cell that would run as a formula gets a leading quote
    (``polyrag.spreadsheet``; ``read_filled`` strips it); the JSONL and Label Studio files keep the
    text exact."""
    write_csv_for_people(tasks, csv_path)
    with open(jsonl_path, "w", encoding="utf-8") as handle:
        for record in tasks.to_dict(orient="records"):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    data = tasks.drop(columns="label").to_dict(orient="records")
    Path(label_studio_path).write_text(json.dumps([{"data": record} for record in data], ensure_ascii=False,
                                                  indent=1), encoding="utf-8")
    Path(label_studio_config_path).write_text(LABEL_STUDIO_CONFIG, encoding="utf-8")


def normalised_label(value, where: str) -> str | None:
    """One of ``LABELS`` from an annotator's cell (a label or a Label Studio choice); None if empty."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
        return None
    text = str(value).strip()
    if text in CHOICES:
        return LABELS[CHOICES.index(text)]
    lowered = text.lower().replace("'", "").replace(" ", "_").replace("-", "_")
    if lowered in LABELS:
        return lowered
    raise DataError(f"{where}: label {text!r} is not one of {list(LABELS)} or {list(CHOICES)}")


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _studio_choice(task: dict, where: str):
    """The one choice of a Label Studio task (None if it has none), refusing what is ambiguous."""
    annotations = task.get("annotations", [])
    if annotations is None:
        annotations = []
    if not isinstance(annotations, list):
        raise DataError(f"{where}: annotations is {_kind(annotations)}, a list of annotations expected")
    chosen = []  # (annotation number, the choices of one result)
    for a_number, annotation in enumerate(annotations, 1):
        if not isinstance(annotation, dict):
            raise DataError(f"{where}: annotation {a_number} is {_kind(annotation)}, an object expected")
        if annotation.get("was_cancelled"):
            continue
        results = annotation.get("result", [])
        if results is None:
            results = []
        if not isinstance(results, list):
            raise DataError(f"{where}: annotation {a_number}: result is {_kind(results)}, a list expected")
        own = []
        for r_number, result in enumerate(results, 1):
            if not isinstance(result, dict):
                raise DataError(f"{where}: annotation {a_number}, result {r_number} is {_kind(result)}, "
                                "an object expected")
            if result.get("type") != "choices":
                continue
            value = result.get("value")
            if not isinstance(value, dict) or "choices" not in value:
                raise DataError(f"{where}: annotation {a_number}, result {r_number} has no value.choices")
            choices = value["choices"]
            if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
                raise DataError(f"{where}: annotation {a_number}, result {r_number}: value.choices is "
                                f"{choices!r}, a list of one choice expected")
            if len(choices) != 1:
                raise DataError(f"{where}: annotation {a_number}, result {r_number} has {len(choices)} choices "
                                f"{choices}; choose exactly one of {list(CHOICES)}")
            own.append((r_number, choices[0]))
        if len(own) > 1:
            fields = ", ".join(str(result.get("from_name", "?")) for result in results
                               if isinstance(result, dict) and result.get("type") == "choices")
            raise DataError(f"{where}: annotation {a_number} has {len(own)} choice results ({fields}): "
                            f"{[choice for _, choice in own]}; keep one")
        chosen += [(a_number, choice) for _, choice in own]
    if len(chosen) > 1:
        raise DataError(f"{where}: {len(chosen)} annotations (numbers {[n for n, _ in chosen]}) choose "
                        f"{[choice for _, choice in chosen]}; keep one annotation per unit")
    return chosen[0][1] if chosen else None


def label_studio_rows(records, path: str) -> list[dict]:
    """``unit_id, label, where`` of every task of a Label Studio JSON export (a list of tasks)."""
    if not isinstance(records, list):
        raise DataError(f"{path}: a Label Studio export is a JSON list of tasks, this file holds {_kind(records)}")
    rows = []
    for number, task in enumerate(records, 1):
        where = f"{path}: task {number}"
        if not isinstance(task, dict):
            raise DataError(f"{where}: the task is {_kind(task)}, an object with data.unit_id expected")
        if "id" in task and isinstance(task["id"], (int, str)):
            where += f" (id {task['id']})"
        data = task.get("data")
        if not isinstance(data, dict) or "unit_id" not in data:
            shown = "no data" if data is None else f"data is {_kind(data)}" if not isinstance(data, dict) else \
                "data has no unit_id"
            raise DataError(f"{where}: {shown}; a Label Studio task needs data.unit_id")
        rows.append({"unit_id": data["unit_id"], "label": _studio_choice(task, where), "where": where})
    return rows


def _text(path: str) -> str:
    """The file as text: UTF-8 (a byte-order mark allowed); otherwise one message naming the line."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise DataError(f"{path}: line {line}: not UTF-8 text (byte 0x{raw[error.start]:02x}); save the file as "
                        "UTF-8") from None


def _jsonl_records(path: str) -> list[dict]:
    records = []
    for i, line in enumerate(_text(path).splitlines()):
        if not line.strip():
            continue
        where = f"{path}: line {i + 1}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{where}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise DataError(f"{where}: {_kind(record)}, an object with unit_id and label expected")
        missing = [name for name in ("unit_id", "label") if name not in record]
        if missing:
            raise DataError(f"{where}: no {' and no '.join(missing)} (each line needs unit_id and label, "
                            "null for a unit not labelled)")
        records.append({**record, "where": where})
    return records


def _csv_records(path: str) -> list[dict]:
    try:
        frame = pd.read_csv(io.StringIO(_text(path)), dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty; the human labels need columns unit_id and label") from None
    if not {"unit_id", "label"} <= set(frame.columns):
        raise DataError(f"{path}: the human labels need columns unit_id and label (found {list(frame.columns)})")
    # tasks.csv as polyrag wrote it: cells a spreadsheet would run as formulas carry a quote
    frame = from_spreadsheet(frame)
    return [{**row, "where": f"{path}: row {i + 2}"} for i, row in enumerate(frame.to_dict("records"))]


def read_filled(path: str) -> pd.DataFrame:
    """``unit_id, label`` (one of ``LABELS`` or None) from a filled CSV, JSONL or Label Studio export;
    a file that cannot be read is refused with one message naming the file and row."""
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".csv":
            records = _csv_records(path)
        elif suffix == ".jsonl":
            records = _jsonl_records(path)
        elif suffix == ".json":
            records = label_studio_rows(json.loads(_text(path)), path)
        else:
            raise DataError(f"{path}: human labels must be .csv, .jsonl or a Label Studio export (.json)")
    except (OSError, json.JSONDecodeError, pd.errors.ParserError) as error:
        raise DataError(f"{path}: cannot read the human labels ({error})") from None
    rows = []
    for r in records:
        unit = r["unit_id"]
        if not isinstance(unit, (str, int)) or isinstance(unit, bool):
            raise DataError(f"{r['where']}: unit_id is {_kind(unit)}, the unit's id (text) expected")
        rows.append({"unit_id": str(unit), "label": normalised_label(r.get("label"), r["where"]), "where": r["where"]})
    return pd.DataFrame(rows, columns=["unit_id", "label", "where"])


def labelled_units(filled: pd.DataFrame, key: pd.DataFrame, path: str) -> tuple[pd.DataFrame, dict]:
    """The labelled units (``unit_id, lang, query_id, model_a, model_b, label_value``: 1 / 0.5 / 0 for
    model_a) and the counts
    (``sampled, labelled, ties, cant_judge, missing``), with a warning for every unit not labelled."""
    known = set(key["unit_id"])
    unknown = filled[~filled["unit_id"].isin(known)]
    if len(unknown):
        row = unknown.iloc[0]
        raise DataError(f"{row['where']}: unit_id {row['unit_id']!r} is not in the sample (key.csv)")
    repeated = filled[filled["unit_id"].duplicated()]
    if len(repeated):
        row = repeated.iloc[0]
        raise DataError(f"{row['where']}: unit_id {row['unit_id']!r} is labelled twice")
    merged = key.merge(filled[["unit_id", "label"]], on="unit_id", how="left")
    left_is_a = merged["model_left"] == merged["model_a"]
    left_value = merged["label"].map({"left": 1.0, "right": 0.0, "tie": 0.5})
    merged["label_value"] = left_value.where(left_is_a, 1.0 - left_value)
    counts = {"sampled": len(key), "labelled": int(merged["label_value"].notna().sum()),
              "ties": int((merged["label"] == "tie").sum()), "cant_judge": int((merged["label"] == "cant_judge").sum()),
              "missing": int(merged["label"].isna().sum())}
    if counts["cant_judge"] or counts["missing"]:
        log.warning("%s: of %d sampled units, %d were judged can't judge and %d have no label: the label-anchored "
                    "fit uses the %d labelled ones, a random sample only if those are missing at random",
                    path, counts["sampled"], counts["cant_judge"], counts["missing"], counts["labelled"])
    labelled = merged[merged["label_value"].notna()]
    columns = ["unit_id", "lang", "query_id", "model_a", "model_b", "label_value", "inclusion_probability"]
    return labelled[columns].reset_index(drop=True), counts


def stand_in_labels(key: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    """The filled task file a stand-in labeller would return: the verdict of a judge's game shown
    in the task's order (left first), ``cant_judge`` where that game is invalid or absent. The
    demo plays the person with the ``reference`` judge this way (docs/human_labels.md)."""
    shown = games.assign(query_id=games["query_id"].astype(str))
    winner = shown["model_a"].where(shown["verdict"] == "model_a", shown["model_b"])
    shown = shown.assign(winner=winner.where(shown["verdict"].isin(["model_a", "model_b"])))
    index = shown.set_index(["query_id", "shown_first", "model_a", "model_b"])
    rows = []
    for unit in key.itertuples(index=False):
        game = None
        for model_a, model_b in ((unit.model_a, unit.model_b), (unit.model_b, unit.model_a)):
            match = (unit.query_id, unit.model_left, model_a, model_b)
            if match in index.index:
                game = index.loc[match]
                game = game.iloc[0] if isinstance(game, pd.DataFrame) else game
        if game is None or game["verdict"] == "invalid":
            label = "cant_judge"
        elif game["verdict"] == "tie":
            label = "tie"
        else:
            label = "left" if game["winner"] == unit.model_left else "right"
        rows.append({"unit_id": unit.unit_id, "label": label})
    return pd.DataFrame(rows, columns=["unit_id", "label"])
