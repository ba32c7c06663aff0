"""The summary `make demo` prints last (python -m polyrag.show): where every system landed, yours
marked, the retrievers, the checks and the report's path."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from polyrag.csv_tables import read_full_table, write_table
from polyrag.show import main, summary


#: a leaderboard shaped as the demo's: 12 mocks, four Gemma systems and a user's system read from files
DEMO_LIKE = ["mock-perfect", "mock-e5", "mock-oracle", "gemma-270m-oracle", "mock-bm25", "mock-20", "mock-recall-83",
             "gemma-270m-sft", "mock-50", "mock-recall-50", "gemma-270m", "my-system", "mock-80", "gemma-270m-bm25",
             "mock-recall-17", "mock-closed-book", "mock-x", "mock-y"]


def write_leaderboard(folder, models, backend=None, judged=None, **detailed_columns):
    """leaderboard.csv and leaderboard_detailed.csv as rule leaderboard writes them: score falling by
    0.3 per rank from 2.2, an interval 0.45 below and 0.41 above, rank ranges 2 either side."""
    n = len(models)
    score = 2.2 - 0.3 * np.arange(n)
    short = pd.DataFrame({"rank": range(1, n + 1), "model": models, "score": score, "ci_low": score - 0.45,
                          "ci_high": score + 0.41, "rank_best": np.maximum(1, np.arange(1, n + 1) - 2),
                          "rank_worst": np.minimum(n, np.arange(3, n + 3)),
                          "judged": judged if judged is not None else True})
    folder.mkdir(parents=True, exist_ok=True)
    write_table(short, folder / "leaderboard.csv")
    backend = backend or ["mock" if m.startswith("mock") else "file" if m == "my-system" else "llama_cpp"
                          for m in models]
    write_table(short.assign(mean_rank=1.0, rank_en=range(1, n + 1), rank_de=range(n, 0, -1), backend=backend,
                             generator=models, **detailed_columns), folder / "leaderboard_detailed.csv")
    return short


def cells(line):
    """A leaderboard row's cells after the mark of your systems: rank, ranks, model, score, ..."""
    return line.lstrip("> ").split()


def leaderboard_rows(text):
    """The leaderboard block's lines after its header row."""
    block = text.split("Leaderboard (")[1].split("\n\n")[0].splitlines()
    start = next(k for k, line in enumerate(block) if line.split()[:2] == ["rank", "ranks"])
    return block[start + 1:]


def test_every_system_but_the_mocks_is_shown_with_integer_ranks_and_two_significant_digits(tmp_path):
    """18 systems, 14 of them mocks: each other system is a row of its own (today's 10 first rows
    left out gemma-270m, my-system and gemma-270m-bm25), and each run of neighbouring mocks is one line."""
    board = write_leaderboard(tmp_path, DEMO_LIKE)
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    rows = leaderboard_rows(text)
    own = {cells(line)[2]: cells(line) for line in rows if "mocks:" not in line}
    others = [m for m in DEMO_LIKE if not m.startswith("mock") or m == "mock-80"]  # mock-80: a run of one
    assert sorted(own) == sorted(others)
    gemma = board.set_index("model").loc["gemma-270m"]  # rank 11, score 2.2 - 3.0 = -0.8
    assert own["gemma-270m"] == ["11", "9-13", "gemma-270m", "-0.80", "[-1.2,", "-0.39]", "BT"]
    assert f"{gemma['ci_low']:.2g}" == "-1.2" and f"{gemma['ci_high']:.2g}" == "-0.39"
    assert own["mock-80"][:4] == ["13", "11-15", "mock-80", "-1.4"]
    folded = [line.split() for line in rows if "mocks:" in line]
    assert [line[:3] for line in folded] == [["1-3", "3", "mocks:"], ["5-7", "3", "mocks:"], ["9-10", "2", "mocks:"],
                                             ["15-18", "4", "mocks:"]]
    assert " ".join(folded[-1][3:]) == "mock-recall-17, mock-closed-book, mock-x, mock-y"
    assert "12 mocks (backend: mock) folded" in text and "rank_en" not in text
    assert text.endswith(f"open {tmp_path / 'report.html'} in a browser")


def test_a_few_mocks_are_not_folded(tmp_path):
    write_leaderboard(tmp_path, ["mock-0", "mock-20", "gemma", "mock-50", "mock-80"])
    rows = leaderboard_rows(summary(tmp_path / "leaderboard.csv", tmp_path / "report.html"))
    assert [cells(line)[2] for line in rows] == ["mock-0", "mock-20", "gemma", "mock-50", "mock-80"]


def test_your_systems_are_marked_with_their_rank_range_ranks_per_language_and_retrieval(tmp_path):
    """Yours: a system read from files (backend file), and the systems a later --configfile adds;
    the command takes a results folder of any name."""
    results = tmp_path / "my-results"
    retrieval = {"retrieval_nDCG@10": [0.5 if m == "gemma-270m-bm25" else None for m in DEMO_LIKE],
                 "retrieval_nDCG@10_lower": 0.41, "retrieval_nDCG@10_upper": 0.6}
    write_leaderboard(results, DEMO_LIKE, **retrieval)
    (tmp_path / "mine.yaml").write_text("systems:\n  gemma-270m-bm25: {generator: gemma-270m, retriever: bm25, "
                                       "top_k: 3}\n  not-run-yet: {generator: gemma-270m, retriever: e5, top_k: 3}\n")
    (tmp_path / "base.yaml").write_text("models:\n  gemma-270m: {backend: llama_cpp}\n")
    text = main([str(results), "--configfile", str(tmp_path / "base.yaml"), str(tmp_path / "mine.yaml")])
    marked = [cells(line)[2] for line in leaderboard_rows(text) if line.startswith(">")]
    assert marked == ["my-system", "gemma-270m-bm25"]
    yours = text.split("Your systems:\n")[1].split("\n\n")[0].splitlines()
    assert yours == [
        "gemma-270m-bm25: rank 14 of 18 (95% rank range 12-16); score -1.7 [-2.1, -1.3] (a Bradley-Terry logit); "
        "by language: en 14, de 5; its retriever's nDCG@10 0.50 [0.41, 0.60]",
        "my-system: rank 12 of 18 (95% rank range 10-14); score -1.1 [-1.5, -0.69] (a Bradley-Terry logit); "
        "by language: en 12, de 7",
        "not-run-yet: not on the leaderboard (has the run that adds it finished?)"]
    # the report: not built yet, and the command that builds it with the run's config files
    assert (f"snakemake --configfile {tmp_path / 'base.yaml'} {tmp_path / 'mine.yaml'} --report "
            f"{results / 'report.html'}") in text
    assert text.endswith(f"Report: open {results / 'report.html'} in a browser")


def test_scores_are_shown_from_the_full_precision_twin_not_the_rounded_csv(tmp_path):
    """A retriever's nDCG@10 of 0.13496 is 0.1350 in the CSV for people, which prints 0.14 at two
    digits; the summary reads the Parquet twin and prints 0.13, as the value rounds."""
    retrieval = {"retrieval_nDCG@10": [0.13496 if m == "my-system" else None for m in DEMO_LIKE[:12]],
                 "retrieval_nDCG@10_lower": 0.1, "retrieval_nDCG@10_upper": 0.16}
    write_leaderboard(tmp_path, DEMO_LIKE[:12], **retrieval)
    assert "0.135," in (tmp_path / "leaderboard_detailed.csv").read_text()  # the hazard
    mine = next(line for line in summary(tmp_path / "leaderboard.csv", tmp_path / "report.html").splitlines()
                if line.startswith("my-system: "))
    assert mine.endswith("its retriever's nDCG@10 0.13 [0.10, 0.16]")


def test_the_report_is_named_stale_when_it_is_older_than_the_leaderboard(tmp_path):
    write_leaderboard(tmp_path, ["a", "b"])
    report = tmp_path / "report.html"
    report.write_text("<html></html>")
    os.utime(report, (1, 1))
    assert f"The report is older than {tmp_path / 'leaderboard.csv'}" in main([str(tmp_path)])
    os.utime(report, None)
    assert "The report" not in main([str(tmp_path / "leaderboard.csv"), str(report)])  # the older form still works


def test_a_missing_leaderboard_is_named_with_what_to_do(tmp_path):
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "nowhere")])
    assert str(stop.value).startswith(f"{tmp_path / 'nowhere' / 'leaderboard.csv'}: no leaderboard here; run the")


def test_each_score_says_whether_it_is_a_bradley_terry_logit_or_the_surrogates_prediction(tmp_path):
    """An unjudged model's score is the surrogate judge's prediction (polyrag.arena.leaderboard);
    today's header called every score a Bradley-Terry logit. Per language where that file exists."""
    write_leaderboard(tmp_path, ["a", "b", "c"], judged=[True, False, False])
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    assert "scores are Bradley-Terry logits" not in text
    assert [line.split()[-1] for line in leaderboard_rows(text)] == ["BT", "surrogate", "surrogate"]
    write_table(pd.DataFrame({"model": ["a", "a", "b", "b", "c", "c"], "lang": ["en", "de"] * 3,
                              "judged": [True, True, True, False, False, False]}),
                tmp_path / "leaderboard_by_language.csv")
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    assert [" ".join(cells(line)[6:]) for line in leaderboard_rows(text)] == [
        "BT", "BT in 1 of 2 languages", "surrogate"]


def test_summary_adds_the_label_anchored_ranking_where_human_labels_exist(tmp_path):
    from polyrag.arena.leaderboard import short_leaderboard, with_label_anchored
    table = pd.DataFrame({"model": ["a", "b", "c"], "rank": [1, 2, 3], "score": [1.0, 0.0, -1.0], "ci_low": -2.0,
                          "ci_high": 2.0, "rank_best": 1, "rank_worst": 3, "judged": True})
    anchored = pd.DataFrame({"model": ["b", "a"], "scope": "all", "logit": [0.4, -0.4], "ci_low": [0.1, -0.7],
                             "ci_high": [0.7, -0.1], "rank": [1, 2], "rank_best": [1, 2], "rank_worst": [1, 2],
                             "n_labels": 120})
    detailed = with_label_anchored(table, anchored, "cite-check")
    assert detailed["label_anchored_by"].iloc[0] == "cite-check + 120 human labels (all labelled languages)"
    assert detailed["label_anchored_rank"].tolist()[:2] == [2, 1] and pd.isna(detailed["label_anchored_rank"].iloc[2])
    assert set(short_leaderboard(detailed).columns) == set(table.columns)  # the short table stays the judge's
    write_table(short_leaderboard(detailed), tmp_path / "leaderboard.csv")
    write_table(detailed, tmp_path / "leaderboard_detailed.csv")
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    anchored_part = text.split("Label-anchored ranking (cite-check + 120 human labels")[1].splitlines()
    assert [line.split()[1] for line in anchored_part[2:4]] == ["b", "a"] and "  c " not in "\n".join(anchored_part[2:5])
    # ranks as integers, although the column holds an empty rank for c
    assert [line.split()[:2] for line in anchored_part[2:4]] == [["1", "b"], ["2", "a"]]
    assert anchored_part[2].split()[-2:] == ["1", "1"]


def write_retrieval(folder, questions: int, languages=("en", "de")):
    """The retrieval leaderboard of two runs: bm25 scores 1 on every question, e5 0.5 on every
    other one (a mean of 0.75)."""
    from polyrag.retrieval.metrics import retrieval_leaderboard

    rows = []
    for lang in languages:
        for q in range(questions):
            for run, value in (("bm25", 1.0), ("e5", 0.5 if q % 2 else 1.0)):
                rows += [{"run": run, "lang": lang, "query_id": f"{lang}{q}", "measure": measure, "value": value,
                          "has_relevant": True, "in_run": True} for measure in ("nDCG@10", "Recall@5")]
    per_query = pd.DataFrame(rows)
    board = retrieval_leaderboard({run: t.drop(columns="run") for run, t in per_query.groupby("run")}, n_bootstrap=200)
    (folder / "retrieval").mkdir()
    write_table(board, folder / "retrieval" / "leaderboard.csv")
    write_leaderboard(folder, ["a"])
    return board


def retrieval_lines(text):
    """The retrieval block: its wrapped heading as one line, then the table's lines and the notes."""
    lines = text.split("Retrieval (")[1].split("\n\n")[0].splitlines()
    start = next(k for k, line in enumerate(lines) if line.split()[:2] == ["rank", "retriever"])
    return [" ".join(lines[:start])] + lines[start:]


def test_summary_adds_the_retrievers_over_all_languages_with_their_intervals(tmp_path):
    board = write_retrieval(tmp_path, 12)
    block = retrieval_lines(summary(tmp_path / "leaderboard.csv", tmp_path / "report.html"))
    assert "macro average over the 2 languages de, en, then nDCG@10 in each language; 95% intervals" in block[0]
    assert "rank range from a max-|t| stepdown over every two runs' difference" in block[0]  # not from the intervals
    all_rows = board[board["lang"] == "all"].set_index("model")
    bm25, e5 = block[2].split(), block[3].split()
    assert bm25[:3] == ["1", "bm25", "1-1"] and e5[:3] == ["2", "e5", "2-2"]
    low, high = all_rows.loc["e5", ["nDCG@10_lower", "nDCG@10_upper"]]
    assert " ".join(e5[3:6]) == f"0.75 [{low:.2g}, {high:.2g}]"
    assert not any(line.startswith("note") for line in block)  # 12 questions a language: nothing to flag


def test_the_retrieval_block_shows_each_language_and_the_few_questions_note(tmp_path):
    """6 questions a language (the demo's): each language's row says its interval rests on few
    questions; today's block printed only the macro row and dropped that note."""
    board = write_retrieval(tmp_path, 6, languages=("de", "en", "hi"))
    block = retrieval_lines(summary(tmp_path / "leaderboard.csv", tmp_path / "report.html"))
    assert block[1].split()[-3:] == ["de", "en", "hi"]  # one nDCG@10 column per language
    e5 = board[board["model"] == "e5"].set_index("lang")["nDCG@10"]
    assert block[3].split()[-3:] == [f"{e5[lang]:#.2g}" for lang in ("de", "en", "hi")] == ["0.75"] * 3
    assert block[4:] == ["note, de, en, hi: only 6 questions: the interval rests on few questions"]
    assert (board.loc[board["lang"] != "all", "note"] == "only 6 questions: the interval rests on few questions").all()


def test_summary_says_whether_the_retriever_or_the_generator_moves_the_ranking(tmp_path):
    """The component-effects summary the rule writes (results/arena/{judge}/components.json) is printed
    as the report says it: here generators 1.6 logits apart, passages 0.6, on 300 questions."""
    import json

    import numpy as np

    from polyrag.arena.components import component_effects
    from tests.helpers.arena import simulate_clustered_games

    cells = {f"{g}-{p}": (p, g) for g in ("g0", "g1", "g2") for p in ("bm25@3", "oracle")}
    strength = {"g0": 0.8, "g1": 0.0, "g2": -0.8, "bm25@3": -0.3, "oracle": 0.3}
    rng = np.random.default_rng(2)
    games = simulate_clustered_games({s: strength[p] + strength[g] for s, (p, g) in cells.items()}, 300, rng)
    _, fitted = component_effects(games, cells, 0.01, 100, rng)
    (tmp_path / "arena" / "reference").mkdir(parents=True)
    (tmp_path / "arena" / "reference" / "components.json").write_text(
        json.dumps({"judge": "reference", "languages": ["en"], **fitted}))
    write_table(pd.DataFrame({"model": ["a"], "rank": [1], "score": [0.0], "ci_low": -1.0, "ci_high": 1.0,
                              "judged": True}), tmp_path / "leaderboard.csv")
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    block = text.split("Retriever or generator? (")[1]
    assert "components.json):\nThe generator moves the ranking more than the passages (95%)" in block
    assert "Judge reference, 300 questions in en" in block


def test_a_system_that_answers_some_languages_is_shown_ranked_over_those(tmp_path):
    """The leaderboard's languages column (a system with languages: [en]) is shown as "ranked on",
    and your system's sentence says which languages it was ranked over and which it was not asked."""
    models = ["mock-0", "my-system", "gemma-270m", "mock-50"]
    languages = ["en,de", "en", "en,de", "en,de"]
    write_leaderboard(tmp_path, models, languages=languages)
    detailed = read_full_table(tmp_path / "leaderboard_detailed.csv")
    detailed.loc[detailed["model"] == "my-system", "rank_de"] = None  # not asked: no rank in German
    write_table(detailed, tmp_path / "leaderboard_detailed.csv")
    text = summary(tmp_path / "leaderboard.csv", tmp_path / "report.html")
    rows = {cells(line)[2]: cells(line) for line in leaderboard_rows(text)}
    assert rows["my-system"][-1] == "en" and rows["mock-0"][-1] == "en,de"
    assert "ranked on: the languages a model answers" in " ".join(text.split())
    yours = text.split("Your systems:\n")[1].split("\n\n")[0]
    assert yours == ("my-system: rank 2 of 4 (95% rank range 1-4); score 1.9 [1.5, 2.3] (a Bradley-Terry logit); "
                     "by language: en 2; ranked over en only, the languages it answers (not asked de)")
    # a run whose systems all answer every language shows no such column
    write_leaderboard(tmp_path / "full", models, languages="en,de")
    assert "ranked on" not in summary(tmp_path / "full" / "leaderboard.csv", tmp_path / "report.html")


def test_without_a_folder_the_results_dir_of_the_config_files_is_read(tmp_path, monkeypatch):
    """``--configfile`` alone: the folder the last file naming results_dir names (as Snakemake layers
    them), relative to the working directory, not the demo's results/; a folder given still wins."""
    write_leaderboard(tmp_path / "results", ["demo-a", "demo-b"])
    write_leaderboard(tmp_path / "results-mine", ["mine-a", "mine-b"])
    (tmp_path / "base.yaml").write_text("results_dir: results-other\nmodels: {}\n")
    (tmp_path / "mine.yaml").write_text("results_dir: results-mine/\n")
    monkeypatch.chdir(tmp_path)
    text = main(["--configfile", "base.yaml", "mine.yaml"])
    assert [cells(line)[2] for line in leaderboard_rows(text)] == ["mine-a", "mine-b"]
    assert text.endswith(f"Report: open {tmp_path / 'results-mine' / 'report.html'} in a browser")
    assert [cells(line)[2] for line in leaderboard_rows(main(["results", "--configfile", "base.yaml", "mine.yaml"]))] \
        == ["demo-a", "demo-b"]
    with pytest.raises(SystemExit) as stop:
        main(["--configfile", "base.yaml"])
    assert str(stop.value).startswith("results-other/leaderboard.csv: no leaderboard here")
