"""polyrag's own CPU at the scale users run, and what adding one model reruns.

Generates, in a scratch folder, demo-format question files (``{lang}.jsonl``: passages, relevant
docids and reference answers built from polyrag's own per-language sentences, so that language
detection sees real text) and a config with mock systems only and the reference judge on
citations and language (no LLM, no network). Runs the workflow, prints CPU-s per stage from the
rules' ``benchmark:`` files (``bench_demo.stage_table``), then adds one model, runs again and
prints the jobs that reran with their CPU-s against the new model's own jobs.

    .venv/bin/python benchmarks/bench_scale.py                       # MIRAGE-BENCH scale: ~30 min on 2 cores
    .venv/bin/python benchmarks/bench_scale.py --languages en,de,zh,yo --questions 30 --models 8 --arena-queries 20
    .venv/bin/python benchmarks/bench_scale.py --keep DIR             # keep the run's folder in DIR

The default scale is the issue's rehearsal: 18 languages x 150 questions, 20 models,
``arena_queries: 100``. ``--workflow`` runs another checkout's Snakefile (a before/after
comparison with the same generator).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_demo import parse_log, print_table, stage_of, stage_table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MIRAGE_LANGUAGES = ["ar", "bn", "de", "en", "es", "fa", "fi", "fr", "hi", "id", "ja", "ko", "ru", "sw", "te",
                    "th", "yo", "zh"]
NEW_MODEL = "mock-added"
NO_SPACE = ("ja", "zh", "th")  # scripts written without spaces between words


def sentences(language: str) -> list[str]:
    """Sentences in ``language`` that polyrag ships (a mock refusal, BERGEN's translated system
    prompt), split at sentence ends: text a language detector recognises."""
    from polyrag.llm.mock import SENTENCE_END

    prompts = REPO / "polyrag" / "prompts"
    refusal = yaml.safe_load((prompts / "mock_refusal.yaml").read_text())[language]
    bergen = yaml.safe_load((prompts / "answer" / "bergen.yaml").read_text())["languages"].get(language, {})
    texts = [refusal] + ([bergen["system"]] if "system" in bergen else [])
    return [part for text in texts for part in SENTENCE_END.split(text.strip()) if part]


def question_rows(language: str, questions: int, rng: np.random.Generator, passages: int = 5) -> list[dict]:
    """Demo-format questions: ``passages`` passages of two or three sentences (numbered, so that
    every passage differs), one relevant, and a reference answer from it, with its citation."""
    pool = sentences(language)
    glue = "" if language in NO_SPACE else " "
    rows = []
    for q in range(questions):
        texts = []
        for p in range(passages):
            picked = rng.choice(len(pool), size=int(rng.integers(2, 4)))
            texts.append(glue.join(pool[i] for i in picked) + f" ({q}.{p})")
        relevant = int(rng.integers(passages))
        docids = [f"d{q}#{p}" for p in range(passages)]
        rows.append({"query_id": f"q{q:04d}", "query": f"{pool[q % len(pool)]} ({q})",
                     "passages": [{"docid": d, "title": f"t{q}", "text": t} for d, t in zip(docids, texts)],
                     "relevant_docids": [docids[relevant]],
                     "reference_answer": f"{texts[relevant]} [{docids[relevant]}]",
                     "reference_reason": f"[{docids[relevant]}]"})
    return rows


def scale_stage(relative: Path) -> str:
    """bench_demo's stages, with one ``generate`` stage for all models (20 rows of mock answers
    say nothing)."""
    name = stage_of(relative)
    return "generate" if name.startswith("generate/") else name


def model_names(count: int) -> list[str]:
    return [f"mock-{k:02d}" for k in range(count)]


def scale_config(data_dir: Path, cache_dir: Path, languages: list[str], models: list[str], arena_queries: int) -> dict:
    """Mock systems with error rates spread over [0, 0.9]; the reference judge on citations and
    language only (weights {similarity: 0, citation: 1, language: 1})."""
    rates = np.linspace(0.0, 0.9, len(models)) if len(models) > 1 else [0.0]
    return {
        "languages": languages,
        "seed": 42,
        "cache_dir": str(cache_dir),
        "data": {"source": "demo", "dir": str(data_dir), "arena_queries": arena_queries},
        "models": {name: {"backend": "mock", "error_rate": round(float(rate), 3)} for name, rate in zip(models, rates)},
        "judges": {"reference": {"backend": "reference", "weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}}},
    }


def write_scale(run_dir: Path, languages: list[str], questions: int, models: int, arena_queries: int) -> Path:
    """The question files and config.yaml of the scale in ``run_dir``; returns the config's path."""
    data_dir = run_dir / "questions"
    data_dir.mkdir(parents=True, exist_ok=True)
    for language in languages:
        rng = np.random.default_rng([42, MIRAGE_LANGUAGES.index(language) if language in MIRAGE_LANGUAGES else 99])
        with (data_dir / f"{language}.jsonl").open("w") as handle:
            for row in question_rows(language, questions, rng):
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    config = scale_config(data_dir, run_dir / ".cache", languages, model_names(models), arena_queries)
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return path


def add_model(config_path: Path) -> None:
    """One more mock system, its error rate between the others', ranked by the surrogate judge
    without being judged (``judged: false``), as MIRAGE-BENCH adds a model to a judged arena."""
    config = yaml.safe_load(config_path.read_text())
    config["models"][NEW_MODEL] = {"backend": "mock", "error_rate": 0.45, "judged": False}
    config_path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))


def snakemake(workflow: Path, run_dir: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "-s", str(workflow / "Snakefile"), "-d", str(run_dir),
               "--configfile", str(config), *args]
    # the scripts import polyrag from the checkout that runs, not from where the venv points
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(workflow), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(command, capture_output=True, text=True, env=env)


def run(workflow: Path, run_dir: Path, config: Path, cores: int, log_name: str) -> tuple[float, str]:
    start = time.perf_counter()
    result = snakemake(workflow, run_dir, config, "--cores", str(cores))
    (run_dir / log_name).write_text(result.stderr)
    if result.returncode != 0:
        sys.exit(f"snakemake failed (log: {run_dir / log_name}):\n{result.stderr[-4000:]}")
    return time.perf_counter() - start, result.stderr


def dry_run_size(workflow: Path, run_dir: Path, config: Path) -> tuple[int, int]:
    """Bytes printed by ``snakemake -n`` and its longest line."""
    result = snakemake(workflow, run_dir, config, "-n")
    text = result.stdout + result.stderr
    return len(text.encode()), max((len(line) for line in text.splitlines()), default=0)


def benchmark_jobs(run_dir: Path, since: float = 0.0) -> pd.DataFrame:
    """One row per benchmark file written after ``since`` (a time.time()): stage, job, CPU-s."""
    root = run_dir / "results" / "benchmarks"
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        if path.stat().st_mtime < since:
            continue
        record = pd.read_csv(path, sep="\t").iloc[0]
        relative = path.relative_to(root)
        rows.append({"stage": scale_stage(relative), "job": str(relative.with_suffix("")), "wall_s": record["s"],
                     "cpu_s": record["cpu_time"]})
    return pd.DataFrame(rows, columns=["stage", "job", "wall_s", "cpu_s"])


def owns(job: str, model: str) -> bool:
    """Whether a job (a benchmark file's path) is one of ``model``'s own: its answers, features, pairs."""
    parts = job.replace("__", "/").split("/")
    return model in parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default=",".join(MIRAGE_LANGUAGES), help="comma-separated (default: MIRAGE-BENCH's 18)")
    parser.add_argument("--questions", type=int, default=150, help="questions per language")
    parser.add_argument("--models", type=int, default=20, help="mock systems before one is added")
    parser.add_argument("--arena-queries", type=int, default=100)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workflow", type=Path, default=REPO, help="checkout whose Snakefile runs (default: this one)")
    parser.add_argument("--keep", type=Path, help="run in this folder (created) and keep it")
    parser.add_argument("--added-only", action="store_true",
                        help="the full run is done in --keep's folder: print its table, then add the model")
    args = parser.parse_args()
    if args.added_only and not args.keep:
        parser.error("--added-only needs the folder of the full run (--keep)")
    languages = args.languages.split(",")
    scratch = None if args.keep else tempfile.TemporaryDirectory()
    run_dir = args.keep.resolve() if args.keep else Path(scratch.name)
    workflow = args.workflow.resolve()
    print(f"scale: {len(languages)} languages x {args.questions} questions, {args.models} mock systems, "
          f"arena_queries {args.arena_queries}; workflow {workflow}; {args.cores} cores; folder {run_dir}")
    if args.added_only:
        config = run_dir / "config.yaml"
    else:
        if args.keep and run_dir.exists():
            shutil.rmtree(run_dir)
        config = write_scale(run_dir, languages, args.questions, args.models, args.arena_queries)
        size, longest = dry_run_size(workflow, run_dir, config)
        print(f"snakemake -n before the run: {size / 1e3:.1f} kB printed, longest line {longest / 1e3:.1f} kB")
        seconds, log = run(workflow, run_dir, config, args.cores, "snakemake.log")
        print(f"full run: {seconds / 60:.1f} min wall, {len(parse_log(log))} jobs")
    full = stage_table(run_dir, scale_stage)
    print_table("Per stage, full run (sums over jobs of the rules' benchmark files)", full)
    full_cpu = full["cpu_s"].iloc[-1]

    add_model(config)
    size, longest = dry_run_size(workflow, run_dir, config)
    print(f"\nsnakemake -n after adding {NEW_MODEL}: {size / 1e3:.1f} kB printed, longest line {longest / 1e3:.1f} kB")
    since = time.time()
    seconds, log = run(workflow, run_dir, config, args.cores, "snakemake-added.log")
    rerun = parse_log(log)
    print(f"adding {NEW_MODEL}: {seconds / 60:.1f} min wall, {len(rerun)} jobs")
    counts = rerun.groupby("rule").size().rename("jobs").reset_index()
    print_table("Jobs run after adding the model, by rule (the new model's own and the reruns)", counts)
    added = benchmark_jobs(run_dir, since)
    added["own"] = [owns(job, NEW_MODEL) for job in added["job"]]
    by_stage = added.groupby(["stage", "own"]).agg(jobs=("cpu_s", "size"), cpu_s=("cpu_s", "sum")).reset_index()
    by_stage["own"] = by_stage["own"].map({True: "own", False: "rerun"})
    print_table("CPU-s of the benchmarked jobs after adding the model (own: jobs of the new model itself)",
                by_stage.sort_values("cpu_s", ascending=False))
    own, total = added.loc[added["own"], "cpu_s"].sum(), added["cpu_s"].sum()
    fair = full_cpu / (args.models + 1)  # a full run's CPU per model, at the new count
    print(f"\nfull run {full_cpu:.1f} CPU-s; adding one model {total:.1f} CPU-s = {total / full_cpu:.1%} of it:"
          f" its own jobs {own:.1f}, reruns of shared jobs {total - own:.1f}")
    print(f"adding one model / its own jobs' CPU: {total / own:.2f}x; / a full run's CPU per model "
          f"({full_cpu:.1f} / {args.models + 1} = {fair:.1f}): {total / fair:.2f}x")
    if scratch:
        scratch.cleanup()


if __name__ == "__main__":
    main()
