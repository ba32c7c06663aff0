"""How the users' cluster command is shaped at MIRAGE-BENCH scale: configs/mirage-bench.yaml with
its model list grown to 20 models (19 judged: 171 pairs) over its 18 languages, dry-run through
profiles/slurm exactly as users run it.

    .venv/bin/python benchmarks/bench_cluster.py [--models 20] [--repeats 3] [--budget 0.5]

``--budget S`` sets ``arena.budget: {share: S}``: the API judge then judges in rounds
(``arena_round`` and ``judge_round`` per language and round, both on the submitting node).

``--miracl-retrieval [INDEX]`` dry-runs ``miracl_retrieval_config`` instead: MIRACL's English corpus
(32.9M passages) indexed by BGE-M3 in 64 shards into one index of type INDEX (default ivf_pq),
searched by the questions of four languages, and prints each retrieval job with its resources
(docs/retrieval.md#the-dry-run-at-miracl-english-size). ``--mirage-retrieval`` dry-runs
``mirage_retrieval_config``: MIRAGE-BENCH's 18 languages with two retrievers over MIRACL's corpora
and 12 RAG systems, and prints the same table, each corpus language's index jobs and the totals.

Prints, per rule, the jobs scheduled, where they run (an sbatch submission, or the submitting
node for local rules) and how many times each GPU model is loaded; then the totals against the
targets: at most 500 submissions, one load per model and stage, dry run under 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"submissions": 500, "loads_per_model_and_stage": 1, "dry_run_s": 10.0}


def scaled_config(models: int, budget: float | None = None) -> dict:
    """mirage-bench.yaml with vLLM models added (8B-class, like its own) up to ``models``, and a
    judging budget (a share of the exhaustive design) when ``budget`` is given."""
    config = yaml.safe_load((REPO / "configs" / "mirage-bench.yaml").read_text())
    if budget is not None:
        config.setdefault("arena", {})["budget"] = {"share": budget}
    template = config["models"]["qwen-2.5-7b-instruct"]
    for index in range(len(config["models"]), models):
        config["models"][f"vllm-model-{index:02d}"] = {**template, "model": f"example/model-{index:02d}"}
    return config


def miracl_retrieval_config(index: str = "ivf_pq") -> dict:
    """MIRACL's English corpus (source miracl: 32,893,221 passages) encoded by BGE-M3 (1,024
    dimensions) in 64 shards and gathered into one index of type ``index``, the datastore of the
    MIRACL questions of en, de, hi and zh (``corpus_language: en``, BERGEN's English datastore), and a
    RAG system (a vLLM generator given its top 5)."""
    return {
        "languages": ["en", "de", "hi", "zh"],
        "data": {"source": "miracl"},
        "models": {"qwen-2.5-7b-instruct": {"backend": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 8192}},
        "judges": {"gpt-4o-judge": {"backend": "openai", "model": "gpt-4o-2024-08-06"}},
        "retrieval": {"corpora": {"miracl": {"source": "miracl"}},
                      "retrievers": {"bge-m3": {"kind": "dense", "corpus": "miracl", "model": "BAAI/bge-m3",
                                                "corpus_language": "en", "shards": 64, "index": index}}},
        "systems": {"qwen-bge-m3": {"generator": "qwen-2.5-7b-instruct", "retriever": "bge-m3", "top_k": 5}},
    }


def mirage_retrieval_config() -> dict:
    """configs/mirage-bench.yaml (18 languages, 6 models) with retrieval over MIRACL's corpus of each
    question's language: BM25, and BGE-M3 in bfloat16 (one encoding job per million passages, an
    ivf_pq index) reranked by bge-reranker-v2-m3; every model a generator of two RAG systems, one per
    retriever, top 5 (18 contestants: the 6 models on MIRAGE-BENCH's own passages and 12 systems)."""
    config = yaml.safe_load((REPO / "configs" / "mirage-bench.yaml").read_text())
    config["retrieval"] = {
        "corpora": {"miracl": {"source": "miracl"}},
        # BM25 jobs of the kind's 16,000 MB: the largest corpora (English, French) in shards (docs/retrieval.md#bm25-at-scale)
        "retrievers": {"bm25": {"kind": "bm25", "corpus": "miracl"},
                       "bge-m3": {"kind": "dense", "corpus": "miracl", "model": "BAAI/bge-m3", "dtype": "bfloat16",
                                  "shard_passages": 1_000_000, "shards": 4, "index": "ivf_pq"}},
        "rerankers": {"bge": {"kind": "cross_encoder", "model": "BAAI/bge-reranker-v2-m3", "dtype": "bfloat16"}},
    }
    config["systems"] = {f"{model}-{retriever}": {"generator": model, "retriever": retriever, "top_k": 5,
                                                   **({"reranker": "bge"} if retriever == "bge-m3" else {})}
                         for model in config["models"] for retriever in ("bm25", "bge-m3")}
    return config


def dry_run(config_path: Path, workdir: Path, *args: str) -> tuple[str, float]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-n", "--profile",
         str(REPO / "profiles" / "slurm"), "--configfile", str(config_path), *args],
        cwd=workdir, capture_output=True, text=True,
        # the scaled configs name made-up hub models (example/model-01): their loading is not measured
        env={**os.environ, "POLYRAG_MODEL_CHECK": "off"},
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(result.stderr[-3000:])
    return result.stdout, seconds


def local_rules() -> set[str]:
    """Rules marked ``localrule: True`` in rules/*.smk (a dry run prints them like the others)."""
    names = set()
    for path in (REPO / "rules").glob("*.smk"):
        for block in re.split(r"\n(?= *rule \w+:)", path.read_text()):  # rules under an `if` are indented
            if "localrule: True" in block:
                names.add(re.match(r" *rule (\w+):", block).group(1))
    return names


def job_table(output: str) -> pd.DataFrame:
    """One row per scheduled job: rule, local or not, its wildcards (as printed, and the model and
    judge among them), threads, and the resources it asks the cluster for."""
    local = local_rules() | {"all"}
    rows = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        header = re.match(r"(local)?rule (\w+):\n", block)
        if header is None:
            continue
        printed = (re.search(r"wildcards: ([^\n]+)", block) or ["", ""])[1]
        wildcards = dict(re.findall(r"(\w+)=([^,\s]+)", printed))
        resources = dict(re.findall(r"(\w+)=([^,\s]+)", (re.search(r"resources: ([^\n]+)", block) or ["", ""])[1]))
        threads = re.search(r"^    threads: (\d+)$", block, re.MULTILINE)
        rows.append({"rule": header.group(2), "local": header.group(2) in local, "wildcards": printed,
                     "model": wildcards.get("model"), "judge": wildcards.get("judge"),
                     "threads": int(threads.group(1)) if threads else 1, "gpu": int(resources.get("gpu", 0)),
                     "mem_mb": int(resources.get("mem_mb", 0)), "runtime": int(resources.get("runtime", 0))})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3, help="dry runs to time (the table uses the first)")
    parser.add_argument("--budget", type=float, help="arena.budget share (default: exhaustive)")
    parser.add_argument("--miracl-retrieval", nargs="?", const="ivf_pq", metavar="INDEX",
                        help="dry-run MIRACL-English retrieval with this index type instead")
    parser.add_argument("--mirage-retrieval", action="store_true",
                        help="dry-run MIRAGE-BENCH with retrieval over MIRACL's corpora instead")
    args = parser.parse_args()
    if args.miracl_retrieval:
        config = miracl_retrieval_config(args.miracl_retrieval)
        print_retrieval_jobs(config, f"MIRACL English (32,893,221 passages), BAAI/bge-m3 (1,024 dimensions), 64 shards, "
                                     f"index {args.miracl_retrieval}, questions of {', '.join(config['languages'])}")
        return
    if args.mirage_retrieval:
        config = mirage_retrieval_config()
        print_retrieval_jobs(config, f"configs/mirage-bench.yaml ({len(config['languages'])} languages, "
                                     f"{len(config['models'])} models) with {len(config['systems'])} RAG systems over "
                                     "MIRACL's corpora (BM25; BGE-M3 bfloat16 + bge-reranker-v2-m3)", per_language=True)
        return
    config = scaled_config(args.models, args.budget)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        config_path = workdir / "mirage-bench-scaled.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        runs = [dry_run(config_path, workdir) for _ in range(args.repeats)]
    jobs = job_table(runs[0][0])
    judged = sum(entry.get("judged", True) for entry in config["models"].values())
    print(f"configs/mirage-bench.yaml scaled to {len(config['models'])} models ({judged} judged, "
          f"{judged * (judged - 1) // 2} pairs) x {len(config['languages'])} languages, through profiles/slurm, "
          f"arena.budget: {config.get('arena', {}).get('budget', 'exhaustive')}\n")

    per_rule = jobs.groupby("rule", sort=False).agg(jobs=("rule", "size"), local=("local", "all"), gpu_jobs=("gpu", "sum"))
    per_rule["sbatch"] = per_rule["jobs"].where(~per_rule["local"], 0)
    # Loads of a GPU model per stage: jobs of one rule that load the same model (a model's own
    # generation and features; a judge's own judging).
    gpu_jobs = jobs[jobs["gpu"] > 0]
    loads = Counter(zip(gpu_jobs["rule"], gpu_jobs["model"].fillna(gpu_jobs["judge"])))
    per_rule["max_loads_per_model"] = [max((n for (rule, _), n in loads.items() if rule == name), default=0)
                                       for name in per_rule.index]
    print(per_rule.sort_values("jobs", ascending=False).to_string())

    wall = [seconds for _, seconds in runs]
    totals = {
        "jobs scheduled": len(jobs),
        "sbatch submissions": int(per_rule["sbatch"].sum()),
        "jobs on the submitting node": int(jobs["local"].sum()),
        "GPU jobs": int((jobs["gpu"] > 0).sum()),
        "max loads of one GPU model in one stage": max(loads.values(), default=0),
        "dry-run wall time, s (median)": round(statistics.median(wall), 1),
        "dry-run wall time, s (each)": ", ".join(f"{s:.1f}" for s in wall),
    }
    print()
    for name, value in totals.items():
        print(f"{name:42s} {value}")
    print(f"\ntargets: at most {TARGETS['submissions']} submissions, {TARGETS['loads_per_model_and_stage']} load per "
          f"model and stage, dry run under {TARGETS['dry_run_s']:.0f} s on 2 cores")


#: The cores a dry run may give a job (Snakemake's dry run otherwise caps threads at 1).
CORES = ("--cores", "256")
RETRIEVAL_RULES = ["retrieval_corpus", "bm25_index", "encode_dense_shard", "dense_index", "retrieve", "rerank",
                   "system_passages", "retrieval_metrics", "retrieval_leaderboard"]


def print_retrieval_jobs(config: dict, title: str, per_language: bool = False) -> None:
    """The config's dry run through profiles/slurm: each retrieval rule's jobs with the most any of
    them asks for; with ``per_language``, each corpus language's indexes and encoding jobs, and the
    whole run's jobs and submissions."""
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        config_path = workdir / "retrieval.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        # A dry run gives every job one thread unless told the cores; the SLURM executor caps none.
        output, seconds = dry_run(config_path, workdir, *CORES)
    all_jobs = job_table(output)
    jobs = all_jobs[all_jobs["rule"].isin(RETRIEVAL_RULES)]
    local = local_rules()
    table = jobs.groupby("rule", sort=False).agg(jobs=("rule", "size"), threads=("threads", "max"), gpu=("gpu", "max"),
                                                 mem_mb=("mem_mb", "max"), runtime_min=("runtime", "max"))
    table["where"] = ["submitting node" if rule in local else "sbatch" for rule in table.index]
    print(f"{title}; dry run {seconds:.1f} s\n")
    print(table.reindex([rule for rule in RETRIEVAL_RULES if rule in table.index]).to_markdown())
    if not per_language:
        return
    indexes = jobs[jobs["rule"].isin(["bm25_index", "dense_index", "encode_dense_shard"])].copy()
    indexes["corpus_lang"] = indexes["wildcards"].str.extract(r"corpus_lang=([^,\s]+)", expand=False)
    indexes["retriever"] = indexes["wildcards"].str.extract(r"retriever=([^,\s]+)", expand=False)
    by_language = indexes.pivot_table(index="corpus_lang", columns="rule", values="retriever", aggfunc="size",
                                      fill_value=0)
    print(f"\nIndex jobs per corpus language (one index per retriever and corpus language):\n")
    print(by_language.to_markdown())
    print(f"\njobs scheduled {len(all_jobs)}, sbatch submissions {int((~all_jobs['local']).sum())}, "
          f"GPU jobs {int((all_jobs['gpu'] > 0).sum())}, of them encoding {int((jobs['rule'] == 'encode_dense_shard').sum())}")


if __name__ == "__main__":
    main()
