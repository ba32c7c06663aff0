"""Names read back from polyrag's CSV tables stay as written: a model named NA, 080 or 10."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml

from polyrag.arena.human_labels import KEY_COLUMNS, read_key
from polyrag.csv_tables import full_precision_path, read_full_table, read_table, read_text_table, write_table
from polyrag.show import main, summary

from tests.helpers.workflow import snakemake, tiny_config

NAMES = ["NA", "080", "10", "None", "nan"]


def test_name_columns_stay_text_and_numbers_stay_numbers(tmp_path):
    path = tmp_path / "bradley_terry.csv"
    pd.DataFrame({"model": NAMES, "judge": ["null"] * 5, "lang": ["nan"] * 5, "query_id": ["007"] * 5,
                  "logit": [1.5, np.nan, -0.5, 0.0, 2.0], "rank": [1, 2, 3, 4, 5],
                  "family": ["NA", None, "gemma", "", "1"], "note": [None, "NA", None, None, None]}
                 ).to_csv(path, index=False)
    assert pd.read_csv(path)["model"].isna().sum() == 3  # the hazard: NA, None and nan are missing
    table = read_table(path)
    assert table["model"].tolist() == NAMES
    assert (table["judge"] == "null").all() and (table["lang"] == "nan").all() and (table["query_id"] == "007").all()
    assert table["logit"].dtype == float and table["logit"].isna().tolist() == [False, True, False, False, False]
    assert table["rank"].dtype == np.int64
    # An empty name cell is a missing name; "NA" in a text column that is no name is missing as before.
    assert table["family"].tolist()[0] == "NA" and table["family"].isna().tolist() == [False, True, False, True, False]
    assert table["note"].isna().all()
    tsv = tmp_path / "few_shot.tsv"
    tsv.write_text("Query\tAnswer\tdoc_lang\nNA\t\t080\n")
    assert read_text_table(tsv, sep="\t").iloc[0].tolist() == ["NA", "", "080"]


def test_readers_keep_model_names(tmp_path):
    leaderboard = tmp_path / "leaderboard.csv"
    write_table(pd.DataFrame({"rank": [1, 2, 3], "model": ["080", "NA", "10"], "score": [1.0, 0.0, -1.0],
                              "ci_low": [0.5, -0.5, -1.5], "ci_high": [1.5, 0.5, -0.5], "judged": [True] * 3}),
                leaderboard)
    text = summary(leaderboard, tmp_path / "report.html")
    assert " 080 " in text and " NA " in text and "nan" not in text.lower().replace("report", "")
    key = tmp_path / "key.csv"
    pd.DataFrame([["u1", "de", "0042", "080", "NA", "NA", "080", 0.25]], columns=KEY_COLUMNS).to_csv(key, index=False)
    row = read_key(key).iloc[0]
    assert (row["query_id"], row["model_a"], row["model_b"], row["inclusion_probability"]) == ("0042", "080", "NA", 0.25)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_models_named_like_numbers_and_missing_values_reach_the_leaderboard(repo, tmp_path):
    """The arena end to end with models NA, 080 and 10 (mock systems, a reference judge on
    citations and language: no embeddings): every table keeps the names."""
    models = {name: {"backend": "mock", "error_rate": rate} for name, rate in (("NA", 0.0), ("080", 0.5), ("10", 0.8))}
    judges = {"cite": {"backend": "reference", "weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}}}
    config = tiny_config(repo, tmp_path, languages=("en", "de"), features={"embedding_similarity": False},
                         judges=judges, **models)
    config["arena"] = {"judge": "cite", "bootstrap": 20, "surrogate": {"holdout_repeats": 2, "holdout_models": 1}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))  # '10' quoted: unquoted YAML reads a number
    result = snakemake(repo, tmp_path, "--cores", "2", "results/leaderboard.csv", "results/judges.html")
    assert result.returncode == 0, result.stderr[-3000:]
    names = set(models)
    leaderboard = read_table(tmp_path / "results" / "leaderboard.csv")
    assert set(leaderboard["model"]) == names
    for lang in ("en", "de"):
        arena = tmp_path / "results" / "arena" / "cite" / lang
        assert set(read_table(arena / "surrogate.csv")["model"]) == names
        assert set(pd.read_csv(arena / "bradley_terry.csv", dtype=str, keep_default_na=False)["model"]) == names
    assert all(f">{name}<" in (tmp_path / "results" / "judges.html").read_text() for name in names)
    # the summary make demo prints, on this run's tables: each mock a row of its own (three are not
    # folded), its score a Bradley-Terry logit in both languages (leaderboard_by_language.csv)
    assert (read_table(tmp_path / "results" / "leaderboard_detailed.csv")["backend"] == "mock").all()
    text = main([str(tmp_path / "results")])
    block = text.split("Leaderboard (")[1].split("\n\n")[0].splitlines()[-3:]
    assert sorted(line.split()[2] for line in block) == sorted(names) and all(line.endswith("  BT") for line in block)
    ranks = leaderboard.set_index("model")["rank"]
    assert [line.split()[0] for line in block] == [str(ranks[line.split()[2]]) for line in block]  # integers
    assert "Your systems: none marked" in text
    # the tables for people carry 4 significant digits a number (they carried 16-17)
    for name in ("leaderboard.csv", "leaderboard_detailed.csv", "leaderboard_by_language.csv"):
        cells = [cell for line in (tmp_path / "results" / name).read_text().splitlines()[1:] for cell in line.split(",")]
        numbers = [cell for cell in cells if re.fullmatch(r"-?[0-9.]+(e[-+][0-9]+)?", cell) and "." in cell]
        assert numbers and all(len(re.sub(r"e.*|[-.]|^[0.]+", "", cell.lstrip("-0."))) <= 4 for cell in numbers), name


def test_tables_for_people_carry_four_significant_digits(tmp_path):
    """leaderboard_detailed.csv carried 16-17 digits a float; written with write_table each float
    has 4 significant digits (read back within half a unit of the 4th digit), names and integers
    stay as they are, and a missing value is an empty cell."""
    values = [0.123456789, -1.23456789, 12345.6789, 0.95, 1.0, 0.0, 2.5e-07, np.nan]
    table = pd.DataFrame({"model": ["NA", "080"] + [f"m{k}" for k in range(6)], "score": values,
                          "rank": pd.array([1, 2, 3, 4, 5, 6, 7, None], dtype="Int64")})
    write_table(table, tmp_path / "board.csv")
    lines = (tmp_path / "board.csv").read_text().splitlines()
    assert [line.split(",")[1] for line in lines[1:]] == [
        "0.1235", "-1.235", "12346", "0.95", "1", "0", "2.500e-07", ""]
    back = read_table(tmp_path / "board.csv")
    assert list(back["model"]) == list(table["model"]) and back["rank"].tolist()[:7] == [1, 2, 3, 4, 5, 6, 7]
    finite = np.isfinite(values)
    scale = 10.0 ** (np.floor(np.log10(np.abs(np.where(np.array(values) == 0, 1, values)))) - 3)
    assert np.all(np.abs(back["score"].to_numpy()[finite] - np.array(values)[finite]) <= scale[finite] / 2)
    assert np.isnan(back["score"].iloc[-1])


def test_the_full_precision_twin_keeps_what_rounding_ties(tmp_path):
    """Two scores 0.75124 and 0.75116 both read 0.7512 from the CSV for people (a tie: equal ranks
    from a comparison), and a bound 0.50004 reads 0.5, onto the value it is compared with. The
    same call writes the Parquet twin, read back exactly: the frame as computed, names as text."""
    table = pd.DataFrame({"model": ["NA", "080", "10"], "score": [0.75124, 0.75116, 0.5],
                          "ci_low": [0.50004, 0.4, 0.1], "judged": [True, False, True],
                          "rank": pd.array([1, 2, None], dtype="Int64")})
    path = tmp_path / "leaderboard.csv"
    write_table(table, path)
    rounded = read_table(path)
    assert rounded["score"][0] == rounded["score"][1] and rounded["ci_low"][0] == 0.5  # the hazard
    assert full_precision_path(path) == tmp_path / "leaderboard.parquet"
    for name in (path, full_precision_path(path)):  # by the CSV's name or the twin's own
        exact = read_full_table(name)
        pd.testing.assert_frame_equal(exact, table)
        assert exact["score"][0] > exact["score"][1] and exact["ci_low"][0] > 0.5
    full_precision_path(path).unlink()
    with pytest.raises(FileNotFoundError, match=r"leaderboard\.parquet: the full-precision twin of .*leaderboard\.csv "
                                                r"is missing; rerun the workflow"):
        read_full_table(path)
