"""The human-label import refuses every malformed file with one message naming the file, the row
and what is wrong (issue 36, item 12), and the annotation CSV cannot run formulas in a spreadsheet
yet reads back exactly (item 14)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from polyrag.arena.human_labels import (KEY_COLUMNS, labelled_units, read_filled, read_key, write_key,
                                       write_tasks)
from polyrag.errors import DataError

UNIT = "u0123456789ab"


def refused(tmp_path, name: str, content, match: str):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    with pytest.raises(DataError, match=match) as caught:
        read_filled(str(path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def studio(*annotations, data=None):
    return [{"id": 7, "data": {"unit_id": UNIT} if data is None else data, "annotations": list(annotations)}]


def choice_result(value, name="preference"):
    return {"type": "choices", "from_name": name, "to_name": "question", "value": value}


def test_an_empty_csv_is_refused(tmp_path):
    refused(tmp_path, "filled.csv", "",
            r"filled.csv: the file is empty; the human labels need columns unit_id and label")


def test_a_header_without_the_label_column_is_refused_even_without_rows(tmp_path):
    refused(tmp_path, "filled.csv", "unit_id,verdict\n", r"filled.csv: the human labels need columns unit_id and label")


@pytest.mark.parametrize("name", ["filled.csv", "filled.jsonl", "filled.json"])
def test_a_latin1_file_is_refused_naming_the_line(tmp_path, name):
    text = {"filled.csv": f"unit_id,label\n{UNIT},left\n{UNIT},Tie – égal\n",
            "filled.jsonl": json.dumps({"unit_id": UNIT, "label": "left"}) + "\n"
            + json.dumps({"unit_id": UNIT, "label": "égal"}, ensure_ascii=False) + "\n",
            "filled.json": '[\n{"data": {"unit_id": "é"}}\n]'}[name]
    line = {"filled.csv": 3, "filled.jsonl": 2, "filled.json": 2}[name]
    refused(tmp_path, name, text.encode("latin-1", errors="replace"),
            rf"{name}: line {line}: not UTF-8 text \(byte 0x[0-9a-f]{{2}}\); save the file as UTF-8")


def test_a_utf8_file_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "filled.csv"
    path.write_bytes(f"unit_id,label\n{UNIT},left\n".encode("utf-8-sig"))
    assert read_filled(str(path))[["unit_id", "label"]].values.tolist() == [[UNIT, "left"]]


def test_a_jsonl_line_without_unit_id_is_refused(tmp_path):
    lines = [{"unit_id": UNIT, "label": "left"}, {"unit": "u1", "label": "right"}]
    refused(tmp_path, "filled.jsonl", "\n".join(map(json.dumps, lines)),
            r"filled.jsonl: line 2: no unit_id \(each line needs unit_id and label")


def test_a_jsonl_line_that_is_not_an_object_is_refused(tmp_path):
    refused(tmp_path, "filled.jsonl", json.dumps({"unit_id": UNIT, "label": "left"}) + '\n["u1", "right"]\n',
            r"filled.jsonl: line 2: a list, an object with unit_id and label expected")
    refused(tmp_path, "filled.jsonl", '"left"\n', r"filled.jsonl: line 1: a string, an object with unit_id")


def test_a_jsonl_unit_id_that_is_not_an_id_is_refused(tmp_path):
    refused(tmp_path, "filled.jsonl", json.dumps({"unit_id": None, "label": "left"}),
            r"filled.jsonl: line 1: unit_id is null, the unit's id \(text\) expected")


def test_a_label_studio_result_without_value_is_refused(tmp_path):
    result = {"type": "choices", "from_name": "preference"}
    refused(tmp_path, "export.json", studio({"result": [result]}),
            r"export.json: task 1 \(id 7\): annotation 1, result 1 has no value.choices")


def test_a_label_studio_result_with_empty_choices_is_refused(tmp_path):
    refused(tmp_path, "export.json", studio({"result": [choice_result({"choices": []})]}),
            r"export.json: task 1 \(id 7\): annotation 1, result 1 has 0 choices \[\]; choose exactly one of")


def test_a_label_studio_result_with_two_choices_is_refused_not_cut_to_the_first(tmp_path):
    refused(tmp_path, "export.json", studio({"result": [choice_result({"choices": ["Left better", "Tie"]})]}),
            r"export.json: task 1 \(id 7\): annotation 1, result 1 has 2 choices \['Left better', 'Tie'\]; "
            r"choose exactly one")


def test_two_choice_fields_in_one_annotation_are_named_as_such(tmp_path):
    message = refused(tmp_path, "export.json", studio({"result": [
        choice_result({"choices": ["Left better"]}), choice_result({"choices": ["Tie"]}, name="second")]}),
        r"export.json: task 1 \(id 7\): annotation 1 has 2 choice results \(preference, second\): "
        r"\['Left better', 'Tie'\]; keep one")
    assert "annotations" not in message


def test_two_annotations_of_one_task_are_refused(tmp_path):
    refused(tmp_path, "export.json", studio({"result": [choice_result({"choices": ["Left better"]})]},
                                            {"result": [choice_result({"choices": ["Tie"]})]}),
            r"export.json: task 1 \(id 7\): 2 annotations \(numbers \[1, 2\]\) choose \['Left better', 'Tie'\]; "
            r"keep one annotation per unit")


@pytest.mark.parametrize("data, match", [("u1", "data is a string"), (None, "no data"),
                                         ({"question": "q"}, "data has no unit_id")])
def test_a_label_studio_task_without_data_unit_id_is_refused(tmp_path, data, match):
    task = {"id": 7, "data": data, "annotations": []}
    refused(tmp_path, "export.json", [task],
            rf"export.json: task 1 \(id 7\): {match}; a Label Studio task needs data.unit_id")


def test_label_studio_annotations_null_is_an_unlabelled_task(tmp_path):
    path = tmp_path / "export.json"
    path.write_text(json.dumps([{"data": {"unit_id": UNIT}, "annotations": None}]))
    filled = read_filled(str(path))
    assert filled["unit_id"].tolist() == [UNIT] and filled["label"].isna().all()


@pytest.mark.parametrize("export, match", [
    ({"data": {"unit_id": UNIT}}, r"export.json: a Label Studio export is a JSON list of tasks, this file holds "
                                  r"an object"),
    (["u1"], r"export.json: task 1: the task is a string, an object with data.unit_id expected"),
    (studio("x"), r"task 1 \(id 7\): annotation 1 is a string, an object expected"),
    (studio({"result": {"type": "choices"}}), r"annotation 1: result is an object, a list expected"),
    (studio({"result": [choice_result({"choices": "Tie"})]}), r"annotation 1, result 1: value.choices is 'Tie'"),
    ([{"data": {"unit_id": UNIT}, "annotations": "Tie"}], r"task 1: annotations is a string, a list of"),
])
def test_other_malformed_label_studio_exports_are_refused(tmp_path, export, match):
    refused(tmp_path, "export.json", export, match)


def test_a_cancelled_annotation_does_not_count(tmp_path):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(studio({"was_cancelled": True, "result": [choice_result({"choices": ["Tie"]})]},
                                      {"result": [choice_result({"choices": ["Left better"]})]})))
    assert read_filled(str(path))["label"].tolist() == ["left"]


# --- item 14: formula injection in the task file ------------------------------------------------

INJECTED = ['=HYPERLINK("http://evil.example/","click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)",
            "\t=1+1", "\r=1+1", "'=already quoted", "-0.5", "plain answer"]


def tasks_frame() -> pd.DataFrame:
    rows = []
    for i, text in enumerate(INJECTED):
        rows.append({"unit_id": f"u{i:012x}", "question": "=question" if i == 0 else "q?", "passages": "-passage",
                     "answer_left": text, "answer_right": "@right", "label": ""})
    return pd.DataFrame(rows)


def test_the_task_csv_cannot_run_formulas_and_the_exports_stay_exact(tmp_path):
    tasks = tasks_frame()
    paths = [tmp_path / name for name in ("tasks.csv", "tasks.jsonl", "label_studio.json", "label_studio.xml")]
    write_tasks(tasks, *map(str, paths))
    raw = pd.read_csv(paths[0], dtype=str, keep_default_na=False)
    for column in ("question", "passages", "answer_left", "answer_right"):
        for cell in raw[column]:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or cell == "-0.5", (column, cell)
    assert raw.loc[0, "answer_left"] == "'" + INJECTED[0]
    assert raw.loc[6, "answer_left"] == "''=already quoted"  # so that the quote polyrag adds is the one stripped
    assert raw.loc[7, "answer_left"] == "-0.5" and raw.loc[8, "answer_left"] == "plain answer"
    jsonl = [json.loads(line) for line in paths[1].read_text(encoding="utf-8").splitlines()]
    assert [r["answer_left"] for r in jsonl] == INJECTED and jsonl[0]["question"] == "=question"
    studio_tasks = json.loads(paths[2].read_text(encoding="utf-8"))
    assert [t["data"]["answer_left"] for t in studio_tasks] == INJECTED


def test_the_filled_task_csv_reads_back_and_matches_the_units(tmp_path):
    tasks = tasks_frame()
    paths = [tmp_path / name for name in ("tasks.csv", "tasks.jsonl", "label_studio.json", "label_studio.xml")]
    write_tasks(tasks, *map(str, paths))
    filled = pd.read_csv(paths[0], dtype=str, keep_default_na=False)
    filled["label"] = ["left", "right", "tie", "Left better", "Right better", "Tie", "Can't judge", "left", ""]
    filled.to_csv(tmp_path / "filled.csv", index=False, lineterminator="\r\n")  # as a spreadsheet saves it
    read = read_filled(str(tmp_path / "filled.csv"))
    assert read["unit_id"].tolist() == tasks["unit_id"].tolist()
    assert read["label"].tolist()[:8] == ["left", "right", "tie", "left", "right", "tie", "cant_judge", "left"]
    assert pd.isna(read["label"].iloc[8])
    key = pd.DataFrame({"unit_id": tasks["unit_id"], "lang": "en", "query_id": [f"q{i}" for i in range(len(tasks))],
                        "model_a": "a", "model_b": "b", "model_left": "a", "model_right": "b",
                        "inclusion_probability": 1.0})
    labels, counts = labelled_units(read, key, "filled.csv")
    assert counts["labelled"] == 7 and counts["missing"] == 1 and counts["cant_judge"] == 1
    # the text columns of the CSV as polyrag wrote it read back exactly
    from polyrag.spreadsheet import from_spreadsheet
    assert from_spreadsheet(pd.read_csv(paths[0], dtype=str, keep_default_na=False)).equals(tasks)


def test_the_key_keeps_question_ids_exact_and_its_probabilities_numbers(tmp_path):
    key = pd.DataFrame({"unit_id": ["u1", "u2", "u3"], "lang": "en", "query_id": ["=cmd|x", "-7", "NA"],
                        "model_a": "a", "model_b": "b", "model_left": "a", "model_right": "b",
                        "inclusion_probability": [0.5, -0.25, 1.0]})[KEY_COLUMNS]
    write_key(key, str(tmp_path / "key.csv"))
    text = (tmp_path / "key.csv").read_text()
    assert "\"'=cmd|x\"" in text and ",\"-7\"," in text and ",-0.25\n" in text and "'-0.25" not in text
    again = read_key(str(tmp_path / "key.csv"))
    assert again.equals(key)
    assert again["inclusion_probability"].dtype == float
