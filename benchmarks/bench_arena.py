"""Bradley-Terry with bootstrap tournaments, timed, side by side with mirage-bench 0.0.4.

Verdicts are simulated from a known BT model: ``--models`` models (default 19) with true logits
spread evenly over [-``--spread``, ``--spread``] (default 2) in a shuffled order, ``--questions``
questions (default 100), every pair (171 for 19 models) judged in both orders on every question
(34,200 games). A game is a tie with probability ``--tie-prob`` (default 0.1), else model a
wins with probability ``1 / (1 + exp(s_b - s_a))``. Everything is drawn from a seeded numpy
generator (``--seed``).

polyrag's side is what rule ``bradley_terry`` runs: the games are written as judgments files
(``{model_a}__{model_b}.parquet``), read with ``read_games`` ("load s") and fitted by
``bradley_terry()`` ("fit s": the point fit and ``--bootstrap`` tournaments, default 200, with
the config's default regularisation).

With ``--mirage-python`` (``make bench-arena`` passes ``.venv-mirage-bench/bin/python``), the
same verdicts, as a local Hugging Face dataset in the reference's schema (``model_A`` shown
first, verdict ``A``/``B``/``Tie``), are fitted by ``simulate_tournament`` of the reference
package in its own environment (``mirage_bench_bt_reference.py``): ``LLMJudge`` loads them
("load s"), then one fit on all questions (``num_matches=-1``) and ``--bootstrap`` tournaments
resampling every question ("fit s"). Times are taken inside that process around the calls, so
its interpreter start-up is excluded; its import time is printed apart. The reference drops
ties (they count half a win here, which pulls logits towards 0), so its logits are wider; the
tables compare rankings: Kendall tau with polyrag's point ranking, whether the order is
identical, and Spearman rho and Kendall tau with the true strengths, for the point fits and the
medians of the tournaments.

A second scenario (point fits only) makes the strongest model win every game, which the
reference's unregularised I-LSR cannot fit: it shows what each side returns then.

    .venv/bin/python benchmarks/bench_arena.py [--models 19] [--questions 100] [--bootstrap 200]
        [--mirage-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.stats import kendalltau, spearmanr

from polyrag.arena.bradley_terry import bradley_terry, fit_logits
from polyrag.arena.games import read_games, win_matrix
from polyrag.config.queries import model_pairs
from polyrag.seeds import rng_for

REPO = Path(__file__).resolve().parent.parent
REFERENCE_LANGUAGE = "xx"  # the dataset config name the reference's loader asks for


def default_regularization() -> float:
    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    return schema["properties"]["arena"]["properties"]["regularization"]["default"]


def exhaustive_games(truth: pd.Series, n_questions: int, tie_prob: float, rng: np.random.Generator) -> pd.DataFrame:
    """Games in the judgments schema: every sorted pair of ``truth``'s models on every question in
    both orders, won with the Bradley-Terry probability of the true logits, tied with ``tie_prob``."""
    pairs = model_pairs(list(truth.index))
    a = np.repeat([p[0] for p in pairs], 2 * n_questions)
    b = np.repeat([p[1] for p in pairs], 2 * n_questions)
    query = np.tile(np.repeat([f"q{k:04d}" for k in range(n_questions)], 2), len(pairs))
    shown_first = np.where(np.tile([True, False], len(pairs) * n_questions), a, b)
    p_a = 1.0 / (1.0 + np.exp(truth[b].to_numpy() - truth[a].to_numpy()))
    a_wins = rng.random(len(a)) < p_a
    tie = rng.random(len(a)) < tie_prob
    verdict = np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))
    return pd.DataFrame({"query_id": query, "model_a": a, "model_b": b, "shown_first": shown_first,
                         "verdict": verdict})


def simulate(n_models: int, n_questions: int, spread: float, tie_prob: float, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    """Games (one row per question, pair and order) and the true logits."""
    rng = rng_for(seed, "bench_arena")
    models = [f"model-{i:02d}" for i in range(n_models)]
    truth = pd.Series(rng.permutation(np.linspace(-spread, spread, n_models)), index=models)
    return exhaustive_games(truth, n_questions, tie_prob, rng), truth


def undefeated(games: pd.DataFrame, model: str) -> pd.DataFrame:
    """The same games, except that ``model`` wins every one of its games."""
    games = games.copy()
    games.loc[games["model_a"] == model, "verdict"] = "model_a"
    games.loc[games["model_b"] == model, "verdict"] = "model_b"
    return games


def write_judgments(games: pd.DataFrame, folder: Path) -> list[Path]:
    """One judgments file per pair, as rule ``judge`` writes them."""
    folder.mkdir(parents=True)
    paths = []
    for (a, b), frame in games.groupby(["model_a", "model_b"]):
        paths.append(folder / f"{a}__{b}.parquet")
        frame.assign(raw_output="").to_parquet(paths[-1], index=False)
    return paths


def write_reference_dataset(games: pd.DataFrame, folder: Path) -> None:
    """The games as a local Hugging Face dataset in the reference's schema (config ``xx``, split
    ``dev``): ``model_A`` is the model shown first, the verdict ``A``, ``B`` or ``Tie``."""
    first_is_a = (games["shown_first"] == games["model_a"]).to_numpy()
    winner = games["verdict"].map({"model_a": "a", "model_b": "b", "tie": "tie"}).to_numpy()
    verdict = np.where(winner == "tie", "Tie", np.where((winner == "a") == first_is_a, "A", "B"))
    rows = pd.DataFrame({"query_id": games["query_id"],
                         "model_A": np.where(first_is_a, games["model_a"], games["model_b"]),
                         "model_B": np.where(first_is_a, games["model_b"], games["model_a"]),
                         "verdict": verdict})
    (folder / REFERENCE_LANGUAGE).mkdir(parents=True)
    rows.to_parquet(folder / REFERENCE_LANGUAGE / "dev.parquet", index=False)
    (folder / "README.md").write_text(
        f"---\nconfigs:\n- config_name: {REFERENCE_LANGUAGE}\n  data_files:\n  - split: dev\n"
        f"    path: {REFERENCE_LANGUAGE}/dev.parquet\n---\n")


def run_polyrag(games: pd.DataFrame, models: list[str], folder: Path, regularization: float, n_bootstrap: int,
                seed: int) -> dict:
    paths = write_judgments(games, folder)
    start = time.perf_counter()
    read = read_games(paths)
    load = time.perf_counter() - start
    start = time.perf_counter()
    table, bootstrap, _ = bradley_terry(read, models, regularization, n_bootstrap, rng_for(seed, "bootstrap", "bench", "xx"))
    fit = time.perf_counter() - start
    point = table.set_index("model")["logit"].reindex(models)
    median = bootstrap.groupby("model")["logit"].median().reindex(models)
    width = (table["ci_high"] - table["ci_low"]).mean()
    return {"load": load, "fit": fit, "point": point, "median": median, "width": width}


def run_reference(python: str, runs: list[dict], models: list[str], seed: int) -> dict:
    """Fit every run with mirage-bench 0.0.4 in its own interpreter."""
    with tempfile.TemporaryDirectory() as tmp:
        specs = []
        for run in runs:
            folder = Path(tmp) / run["name"]
            write_reference_dataset(run["games"], folder)
            specs.append({"name": run["name"], "dataset": str(folder), "tournaments": run["tournaments"]})
        source, target = Path(tmp) / "in.json", Path(tmp) / "out.json"
        source.write_text(json.dumps({"models": models, "seed": seed, "runs": specs}))
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": str(seed)}
        script = REPO / "benchmarks" / "reference" / "mirage_bench_bt_reference.py"
        done = subprocess.run([python, str(script), str(source), str(target)],
                              capture_output=True, text=True, env=env)
        if done.returncode:
            raise SystemExit(f"mirage-bench reference run failed:\n{done.stderr[-3000:]}")
        return json.loads(target.read_text())


def agreement(label: str, logits: pd.Series, ours: pd.Series, truth: pd.Series) -> dict:
    """Rank agreement of one set of logits with polyrag's point fit and with the true strengths."""
    known = logits.notna()
    order = lambda s: list(s.sort_values(ascending=False).index)  # noqa: E731
    return {"ranking": label, "finite": f"{known.sum()}/{len(logits)}",
            "tau vs polyrag": kendalltau(logits[known], ours[known]).statistic,
            "identical": order(logits) == order(ours) if known.all() else False,
            "max |dlogit|": (logits - ours).abs().max(),
            "rho vs truth": spearmanr(logits[known], truth[known]).statistic,
            "tau vs truth": kendalltau(logits[known], truth[known]).statistic}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=19)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--spread", type=float, default=2.0, help="true logits over [-spread, spread]")
    parser.add_argument("--tie-prob", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--mirage-python", help="interpreter of an environment with mirage-bench 0.0.4")
    args = parser.parse_args()
    regularization = default_regularization()
    games, truth = simulate(args.models, args.questions, args.spread, args.tie_prob, args.seed)
    models = list(truth.index)
    best = truth.idxmax()
    swept = undefeated(games, best)
    with tempfile.TemporaryDirectory() as tmp:
        ours = run_polyrag(games, models, Path(tmp) / "judgments", regularization, args.bootstrap, args.seed)
    ours_swept = pd.Series(fit_logits(win_matrix(swept, models), regularization), index=models)
    n_pairs = len(model_pairs(models))
    print(f"\nBradley-Terry on {len(games)} simulated games: {args.models} models, {args.questions} questions, "
          f"{n_pairs} pairs in both orders, {(games['verdict'] == 'tie').mean():.0%} ties; "
          f"point fit + {args.bootstrap} bootstrap tournaments (one process)")
    timing = [{"implementation": "polyrag (read_games, bradley_terry)", "load s": ours["load"], "fit s": ours["fit"],
               "speed ratio": 1.0, "mean 95% CI width": ours["width"]}]
    rows = [agreement("polyrag point fit", ours["point"], ours["point"], truth),
            agreement(f"polyrag median of {args.bootstrap} tournaments", ours["median"], ours["point"], truth)]
    swept_rows = [{"implementation": "polyrag", **agreement("point fit", ours_swept, ours_swept, truth),
                   f"logit of {best}": ours_swept[best], "notes": f"L2-penalised ML, regularization={regularization}"}]
    notes = []
    if args.mirage_python:
        reference = run_reference(args.mirage_python, [
            {"name": "main", "games": games, "tournaments": args.bootstrap},
            {"name": "undefeated", "games": swept, "tournaments": 0}], models, args.seed)
        main_run, swept_run = reference["runs"]
        point = pd.Series(main_run["point"], index=models, dtype=float)
        samples = pd.DataFrame(main_run["bootstrap"], columns=models, dtype=float)
        fit = main_run["point_seconds"] + main_run["bootstrap_seconds"]
        low, high = samples.quantile(0.025), samples.quantile(0.975)
        timing.append({"implementation": "mirage-bench 0.0.4 (LLMJudge, simulate_tournament)",
                       "load s": main_run["load_seconds"], "fit s": fit, "speed ratio": fit / ours["fit"],
                       "mean 95% CI width": (high - low).mean()})
        rows += [agreement("mirage-bench point fit (num_matches=-1)", point, ours["point"], truth),
                 agreement(f"mirage-bench median of {args.bootstrap} tournaments", samples.median(), ours["point"], truth)]
        swept_point = pd.Series(swept_run["point"], index=models, dtype=float)
        swept_rows.append({"implementation": "mirage-bench 0.0.4",
                           **agreement("point fit", swept_point, ours_swept, truth),
                           f"logit of {best}": swept_point[best], "notes": "; ".join(swept_run["notes"]) or "-"})
        notes += [f"mirage-bench: import {reference['import_seconds']:.2f} s; point fit {main_run['point_seconds']:.2f} s, "
                  f"{args.bootstrap} tournaments {main_run['bootstrap_seconds']:.2f} s; it used "
                  f"{main_run['games_used']} of {len(games)} games (ties dropped)",
                  *(f"mirage-bench: {note}" for note in main_run["notes"])]
    float_format = lambda x: f"{x:.3f}"  # noqa: E731
    print(pd.DataFrame(timing).to_string(index=False, float_format=float_format))
    print("\nRankings (logits are natural-log BT strengths, centred; 'tau vs polyrag' against polyrag's point fit)")
    print(pd.DataFrame(rows).to_string(index=False, float_format=float_format))
    print(f"\nScenario: {best} (the strongest) wins all its {(games['model_a'].eq(best) | games['model_b'].eq(best)).sum()}"
          " games; point fits only")
    print(pd.DataFrame(swept_rows).to_string(index=False, float_format=float_format))
    if notes:
        print("\n".join(["", *notes]))


if __name__ == "__main__":
    main()
