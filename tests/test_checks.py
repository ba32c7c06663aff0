"""The known-truth checks (polyrag/checks.py) on small hand-made result tables: each passes where
the truth is recovered and fails where it is not, and the config names exactly the checks there are."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from polyrag.checks import CHECKS, COLUMNS, mock_tau, run_checks
from polyrag.config.checks import NEEDS, enabled_checks
from polyrag.csv_tables import read_full_table, write_table
from polyrag.show import summary

RATES = {"mock-0": 0.0, "mock-20": 0.2, "mock-50": 0.5}


def write(path, table: pd.DataFrame) -> str:
    if path.suffix == ".parquet":
        table.to_parquet(path)
    elif path.name.startswith("leaderboard"):  # written for people, rounded, with its full-precision twin
        write_table(table, path)
    else:
        table.to_csv(path, index=False)
    return str(path)


def one(name, files, expected, settings=None) -> list[dict]:
    return CHECKS[name].run(files, expected, settings or {})


def mock_tables(tmp_path, board_order, order_by_language):
    board = pd.DataFrame({"model": board_order, "rank": range(1, len(board_order) + 1), "score": 0.0})
    by_language = pd.DataFrame([{"model": model, "lang": lang, "rank": rank}
                                for lang, order in order_by_language.items() for rank, model in enumerate(order, 1)])
    return {"leaderboard": write(tmp_path / "leaderboard.csv", board),
            "by_language": write(tmp_path / "leaderboard_by_language.csv", by_language)}


def test_mock_order_passes_in_the_true_order_whatever_else_ranks_between(tmp_path):
    true = ["mock-0", "gemma", "mock-20", "mock-50"]  # a real model between the mocks changes nothing
    files = mock_tables(tmp_path, true, {"en": true, "NA": ["mock-0", "mock-20", "mock-50", "gemma"]})
    rows = one("mock_order", files, True, {"error_rates": RATES})
    assert [(r["subject"], r["passed"]) for r in rows] == [("leaderboard", True), ("every language", True)]
    assert rows[0]["observed"] == "tau 1.00" and "mock-0 < mock-20 < mock-50" in rows[0]["expected"]
    assert rows[1]["observed"] == "1.00 in 2 of 2 languages"  # a language named NA stays a language


def test_mock_order_fails_when_two_mocks_swap_on_the_leaderboard_or_in_one_language(tmp_path):
    files = mock_tables(tmp_path, ["mock-0", "mock-50", "mock-20"],
                        {"en": ["mock-0", "mock-20", "mock-50"], "hi": ["mock-20", "mock-0", "mock-50"]})
    board, languages = one("mock_order", files, True, {"error_rates": RATES})
    assert not board["passed"] and board["observed"] == "tau 0.33 (mock-0 < mock-50 < mock-20)"
    assert not languages["passed"] and languages["observed"] == "1.00 in 1 of 2 languages; hi: 0.33"


def test_checks_read_the_leaderboards_full_precision_twin(tmp_path):
    """The order checks read the Parquet twin write_table writes beside each leaderboard CSV, not
    the CSV for people: a CSV reordered by hand (as in a spreadsheet) changes no check, and the
    result is the one computed on the frame as written."""
    true = ["mock-0", "mock-20", "mock-50"]
    files = mock_tables(tmp_path, true, {"en": true})
    as_written = one("mock_order", files, True, {"error_rates": RATES})
    pd.DataFrame({"model": true[::-1], "rank": [1, 2, 3], "score": 0.0}).to_csv(files["leaderboard"], index=False)
    assert one("mock_order", files, True, {"error_rates": RATES}) == as_written
    assert [r["passed"] for r in as_written] == [True, True]


def test_mock_order_fails_on_a_tie_in_rank(tmp_path):
    files = mock_tables(tmp_path, ["mock-0", "mock-20", "mock-50"], {"en": ["mock-0", "mock-20", "mock-50"]})
    board = read_full_table(files["leaderboard"]).assign(rank=[1, 2, 2])
    write_table(board, files["leaderboard"])
    assert not one("mock_order", files, True, {"error_rates": RATES})[0]["passed"]


def mars_cells(tmp_path, covered: int, missed: int, not_estimable: int) -> dict:
    cells = ([{"true_score": 0.6, "ci_low": 0.5, "ci_high": 0.7, "estimable": True}] * covered
             + [{"true_score": 0.6, "ci_low": 0.65, "ci_high": 0.8, "estimable": True}] * missed
             + [{"true_score": 0.6, "ci_low": 0.0, "ci_high": 1.0, "estimable": False}] * not_estimable)
    table = pd.DataFrame(cells).assign(pair="en-en", metric="cr", accuracy=0.6)
    return {"mars_systems": write(tmp_path / "meta_eval_systems.csv", table)}


def test_mars_coverage_passes_at_the_threshold_over_the_estimable_cells(tmp_path):
    [result] = one("mars_coverage", mars_cells(tmp_path, covered=17, missed=3, not_estimable=0), 0.85)
    assert result["passed"] and result["observed"].startswith("0.85 (17 of 20 estimable cells")


def test_mars_coverage_fails_below_it_and_not_estimable_cells_do_not_lift_it(tmp_path):
    # 16 of 20 informative intervals cover: 0.80. Counting 20 uninformative [0, 1] intervals as
    # covering would make it 36 of 40 (0.90) and pass.
    [result] = one("mars_coverage", mars_cells(tmp_path, covered=16, missed=4, not_estimable=20), 0.85)
    assert not result["passed"]
    assert result["observed"] == "0.80 (16 of 20 estimable cells; 20 not estimable left out)"
    [result] = one("mars_coverage", mars_cells(tmp_path, covered=0, missed=0, not_estimable=5), 0.0)
    assert not result["passed"] and result["observed"] == "no estimable cell among 5"


def judge_games(tmp_path, judge: str, first_wins: bool | None) -> dict:
    """Two languages x 6 questions x 3 pairs, both orders. ``first_wins`` True: the answer shown
    first always wins; False: always the second; None: model_a always wins (no position bias)."""
    files = {}
    for lang in ("en", "de"):
        games = []
        for q in range(6):
            for a, b in (("m1", "m2"), ("m1", "m3"), ("m2", "m3")):
                for first in (a, b):
                    if first_wins is None:
                        verdict = "model_a"
                    else:
                        verdict = "model_a" if (first == a) == first_wins else "model_b"
                    games.append({"query_id": f"q{q}", "model_a": a, "model_b": b, "shown_first": first,
                                  "verdict": verdict})
        (tmp_path / judge / lang).mkdir(parents=True)
        files[lang] = [write(tmp_path / judge / lang / "games.parquet", pd.DataFrame(games))]
    return {"judge_games": {judge: files}}


@pytest.mark.parametrize("first_wins", [True, False])
def test_position_bias_is_detected_either_way(tmp_path, first_wins):
    [result] = one("position_bias", judge_games(tmp_path, "gemma-judge", first_wins), ["gemma-judge"])
    assert result["passed"] and result["subject"] == "gemma-judge"
    assert result["observed"].startswith(f"{float(first_wins):.2f} (95% CI") and "72 decisive games, 2 languages" in result["observed"]


def test_position_bias_fails_for_a_judge_that_reads_the_answers(tmp_path):
    [result] = one("position_bias", judge_games(tmp_path, "fair", None), ["fair"])
    assert not result["passed"] and result["observed"].startswith("0.50 (95% CI")


def gain_table(tmp_path, score, low, high) -> dict:
    table = pd.DataFrame({"lang": ["en", "all"], "questions": [10, 10], "games": 20, "student_wins": [12, 12],
                          "control_wins": [4, 4], "ties": [4, 4], "score": [score, score],
                          "score_ci_low": [0.0, low], "score_ci_high": [1.0, high]})
    return {"finetune_gain": write(tmp_path / "gain_over_control.csv", table)}


def test_finetune_gain_passes_when_the_interval_lies_above_one_half(tmp_path):
    settings = {"student": "sft", "control": "sft-base"}
    [result] = one("finetune_gain", gain_table(tmp_path, 0.7, 0.55, 0.85), True, settings)
    assert result["passed"] and result["subject"] == "sft vs sft-base"
    assert result["observed"] == "0.70 (95% CI 0.55-0.85; 12 wins, 4 losses, 4 ties)"


@pytest.mark.parametrize(("score", "low", "high"), [(0.7, 0.45, 0.95), (0.3, 0.15, 0.45), (0.7, float("nan"), 1.0)])
def test_finetune_gain_fails_when_its_interval_reaches_one_half_or_lies_below(tmp_path, score, low, high):
    [result] = one("finetune_gain", gain_table(tmp_path, score, low, high), True, {"student": "s", "control": "c"})
    assert not result["passed"]


def label_anchored_tables(tmp_path, ranges: dict[str, tuple], stand_in_logits: dict[str, dict[str, float]]) -> dict:
    """``ranges``: model -> (rank, rank_best, rank_worst), or None where not estimable."""
    detailed = pd.DataFrame([{"model": model, "rank": k + 1, "score": 0.0, **(
        {"label_anchored_logit": 0.0, "label_anchored_ci_low": -1.0, "label_anchored_ci_high": 1.0,
         "label_anchored_rank": r[0], "label_anchored_rank_best": r[1], "label_anchored_rank_worst": r[2],
         "label_anchored_note": None} if r else
        {"label_anchored_note": "preferred in all of its labels"})} for k, (model, r) in enumerate(ranges.items())])
    arenas = {}
    for lang, logits in stand_in_logits.items():
        table = pd.DataFrame({"model": list(logits), "logit": list(logits.values()), "ci_low": 0.0, "ci_high": 0.0})
        arenas[lang] = write(tmp_path / f"bt_{lang}.csv", table)
    return {"detailed": write(tmp_path / "leaderboard_detailed.csv", detailed), "stand_in_arena": arenas}


def test_label_anchored_agreement_passes_when_every_rank_range_holds_the_stand_ins_rank(tmp_path):
    # The stand-in ranks a > b > c > d (mean logit over en, hi); d is not estimable from the human
    # labels and is left out, so the others are ranked 1-3 among themselves.
    files = label_anchored_tables(tmp_path, {"a": (2, 1, 2), "b": (1, 1, 2), "c": (3, 3, 3), "d": None},
                                  {"en": {"a": 1.0, "b": 0.8, "c": -0.5, "d": -1.0}, "hi": {"a": 0.6, "b": 0.7, "c": -0.4, "d": 3.0}})
    [result] = one("label_anchored_agreement", files, True, {"stand_in": "reference"})
    assert result["passed"] and result["observed"] == "3 of 3 models (Kendall tau 0.33)"


def test_label_anchored_agreement_fails_when_the_stand_ins_rank_falls_outside_a_range(tmp_path):
    files = label_anchored_tables(tmp_path, {"a": (1, 1, 1), "b": (2, 2, 3), "c": (3, 2, 3)},
                                  {"en": {"a": 0.0, "b": 1.0, "c": -1.0}})
    [result] = one("label_anchored_agreement", files, True, {"stand_in": "reference"})
    assert not result["passed"]
    assert result["observed"].startswith("1 of 3 models") and "a: range 1-1, reference rank 2" in result["observed"]
    files = label_anchored_tables(tmp_path, {"a": (1, 1, 1), "b": None}, {"en": {"a": 0.0, "b": 1.0}})
    [result] = one("label_anchored_agreement", files, True, {"stand_in": "reference"})
    assert not result["passed"] and "nothing to compare" in result["observed"]


def test_run_checks_writes_one_row_per_subject_and_show_prints_pass_and_fail(tmp_path):
    files = {"mars_coverage": mars_cells(tmp_path, covered=9, missed=1, not_estimable=0),
             "finetune_gain": gain_table(tmp_path, 0.7, 0.45, 0.95)}
    table = run_checks({"finetune_gain": True, "mars_coverage": 0.85, "mock_order": False}, files,
                       {"finetune_gain": {"student": "sft", "control": "sft-base"}})
    assert list(table.columns) == COLUMNS and table["passed"].tolist() == [True, False]
    write_table(pd.DataFrame({"model": ["a"], "rank": [1], "score": [0.0], "ci_low": 0.0, "ci_high": 0.0}),
                tmp_path / "leaderboard.csv")
    table.to_csv(tmp_path / "checks.csv", index=False)
    lines = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html").splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("Checks ("))
    assert "1 of 2 passed" in lines[start]
    assert lines[start + 1].startswith("PASS  mars_coverage (pair x metric x mock): expected >= 0.85")
    assert lines[start + 2].startswith("FAIL  finetune_gain (sft vs sft-base): expected") and "; got 0.70" in lines[start + 2]
    assert lines[-1].startswith("Report: open")


def test_the_config_names_exactly_the_registered_checks_and_the_full_demo_turns_them_all_on(repo):
    schema = yaml.safe_load((repo / "schemas" / "config.schema.yaml").read_text())
    assert list(schema["properties"]["checks"]["properties"]) == list(CHECKS)
    full = yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text())
    assert list(enabled_checks(full)) == list(CHECKS)
    assert enabled_checks({"checks": {"mock_order": False, "mars_coverage": None, "position_bias": [],
                                      "finetune_gain": True}}) == {"finetune_gain": True}


def test_the_demo_turns_on_every_check_whose_stage_it_runs(repo, monkeypatch):
    """make demo leaves out fine-tuning and the Gemma judge (make demo-full has them): their checks
    are off, so not failed; every other check is on, and its config has what each needs."""
    from polyrag.config.checks import NEEDS
    from polyrag.config.validate import validate_config

    monkeypatch.chdir(repo)
    demo = validate_config(yaml.safe_load((repo / "config.yaml").read_text()), repo / "schemas" / "config.schema.yaml")
    on = enabled_checks(demo)
    assert [name for name in CHECKS if name not in on] == ["position_bias", "finetune_gain"]
    assert demo["finetune"] is None and NEEDS["finetune_gain"].lacks(demo, True) is not None
    assert not [name for name, judge in demo["judges"].items() if judge["backend"] not in ("reference", "recorded")]
    assert all(NEEDS[name].lacks(demo, expected) is None for name, expected in on.items())


def test_every_check_has_its_config_needs_under_the_same_name_in_the_same_order():
    assert list(NEEDS) == list(CHECKS)


def grounded_tables(tmp_path, board_order, found):
    """Answers of grounded mocks that were given a relevant passage for ``found[model]`` of 4 arena
    questions per language (and for every question outside the arena sample, which must not count)."""
    from polyrag.data.records import write_questions

    files = mock_tables(tmp_path, board_order, {"en": board_order, "de": board_order})
    files.update(answers={}, questions={})
    for lang in ("en", "de"):
        records = [{"query_id": f"q{i}", "query": "?", "relevant_docids": [f"r{i}"], "language": lang, "arena": i < 4,
                    "passages": [{"docid": f"r{i}", "title": "", "text": "yes"}, {"docid": f"n{i}", "title": "", "text": "no"}]}
                   for i in range(6)]
        write_questions(records, tmp_path / f"{lang}.parquet")
        files["questions"][lang] = str(tmp_path / f"{lang}.parquet")
        for model, count in found.items():
            # the question's own passages (docid and text): judged (polyrag.systems.passages.judged_docids)
            given = [[{"docid": f"r{i}", "title": "", "text": "yes"} if i < count or i >= 4
                      else {"docid": f"n{i}", "title": "", "text": "no"}] for i in range(6)]
            path = tmp_path / f"{model}-{lang}.parquet"
            pd.DataFrame({"query_id": [f"q{i}" for i in range(6)], "passages": given}).to_parquet(path)
            files["answers"].setdefault(model, {})[lang] = str(path)
    return files


def test_passage_order_reads_the_truth_from_the_answers_passages(tmp_path):
    found = {"oracle": 4, "recall-75": 3, "recall-25": 1, "closed": 0}
    files = grounded_tables(tmp_path, ["oracle", "mock-perfect", "recall-75", "recall-25", "closed"], found)
    board, languages = one("passage_order", files, True, {"grounded": sorted(found)})
    assert board["passed"] and languages["passed"] and languages["observed"] == "1.00 in 2 of 2 languages"
    assert "oracle (1.00) > recall-75 (0.75) > recall-25 (0.25) > closed (0.00)" in board["expected"]
    # the truth is what the answers were given: the run called 75 that found one question fails
    files = grounded_tables(tmp_path, ["oracle", "recall-75", "recall-25", "closed"], {**found, "recall-75": 1, "recall-25": 3})
    board, languages = one("passage_order", files, True, {"grounded": sorted(found)})
    assert not board["passed"] and not languages["passed"] and "recall-25 (0.75) > recall-75 (0.25)" in board["expected"]


def test_order_checks_let_systems_of_equal_truth_rank_either_way():
    ranks = pd.Series({"oracle": 1, "a": 2, "b": 3, "c": 4, "closed": 5})
    # a and b were given a relevant passage equally often: their order is no evidence either way
    truth = {"oracle": 0.0, "a": 0.25, "b": 0.25, "c": 0.5, "closed": 1.0}
    assert mock_tau(ranks, truth) == 1.0
    assert mock_tau(ranks[["b", "a", "oracle", "c", "closed"]].rename({"b": "a", "a": "b"}), truth) == 1.0
    # a tie in rank between systems of different truth is not in order; a swap is discordant
    assert mock_tau(pd.Series({"oracle": 1, "a": 2, "b": 2, "c": 2, "closed": 5}), truth) == pytest.approx(7 / 9)
    assert mock_tau(pd.Series({"oracle": 1, "a": 2, "b": 3, "c": 5, "closed": 4}), truth) == pytest.approx(7 / 9)
