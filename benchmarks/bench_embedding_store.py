"""How many texts reach the encoder when several jobs embed at once through the shared store
(``polyrag.features.embedding.e5_store``), as the embedding features of several models do on a
cluster: each job embeds the reference answers (the same for every model) and texts of its own.

Starts ``--jobs`` processes at the same moment on one fresh cache folder and prints, per job, the
texts it asked for and the texts it gave the encoder, then the total against the distinct texts,
and whether every job got the vectors one process alone computes. Texts come from
``bench_scale``'s generated questions: the references are shared, each job's own texts are one
passage per question (``passage k`` for job k).

    .venv/bin/python benchmarks/bench_embedding_store.py [--jobs 4] [--languages en,de,zh,yo] [--questions 30]

Run it with another checkout's ``polyrag`` first on ``PYTHONPATH`` to measure that version's store
(the encoder is counted by replacing ``polyrag.features.embedding.embed``, which both the
earlier SQLite store and the claiming store call).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import MIRAGE_LANGUAGES, question_rows  # noqa: E402


def job_texts(languages: list[str], questions: int, job: int) -> list[str]:
    """The reference answers of every question (shared by all jobs), then job ``job``'s own texts."""
    shared, own = [], []
    for language in languages:
        rng = np.random.default_rng([42, MIRAGE_LANGUAGES.index(language) if language in MIRAGE_LANGUAGES else 99])
        for row in question_rows(language, questions, rng):
            shared.append(row["reference_answer"])
            own.append(row["passages"][job % len(row["passages"])]["text"])
    return shared + own


def one_job(job: int, texts: list[str], cache_dir: str, out: str, start) -> None:
    from polyrag.features import embedding

    real, given = embedding.embed, []

    def counted(batch):
        given.extend(batch)
        return real(batch)

    embedding.embed = counted
    start.wait()
    began = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    vectors = embedding.e5_store(cache_dir)(texts)
    ended = resource.getrusage(resource.RUSAGE_SELF)
    np.save(f"{out}.npy", vectors)
    Path(f"{out}.json").write_text(json.dumps({
        "asked": len(set(texts)), "given": given, "wall_s": time.perf_counter() - wall,
        "cpu_s": ended.ru_utime + ended.ru_stime - began.ru_utime - began.ru_stime}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--languages", default="en,de,zh,yo")
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args()
    languages = args.languages.split(",")
    texts = [job_texts(languages, args.questions, job) for job in range(args.jobs)]
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as scratch:
        start = context.Barrier(args.jobs)
        processes = [context.Process(target=one_job, args=(job, texts[job], f"{scratch}/cache", f"{scratch}/{job}", start))
                     for job in range(args.jobs)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
            if process.exitcode != 0:
                sys.exit(f"a job failed (exit code {process.exitcode})")
        results = [json.loads(Path(f"{scratch}/{job}.json").read_text()) for job in range(args.jobs)]
        from polyrag.features.embedding import EmbeddingStore

        alone = EmbeddingStore()  # in memory: one process, every text once
        same = all(np.array_equal(np.load(f"{scratch}/{job}.npy"), alone(texts[job])) for job in range(args.jobs))
    print(f"{args.jobs} jobs at once, {len(languages)} languages x {args.questions} questions "
          f"(shared references + one passage per question each)")
    print(f"{'job':>4} {'texts':>6} {'embedded':>9} {'wall_s':>7} {'cpu_s':>6}")
    for job, result in enumerate(results):
        print(f"{job:>4} {result['asked']:>6} {len(result['given']):>9} {result['wall_s']:>7.1f} {result['cpu_s']:>6.1f}")
    given = [text for result in results for text in result["given"]]
    distinct = {text for job_list in texts for text in job_list}
    print(f"texts given to the encoder: {len(given)} ({len(set(given))} distinct); distinct texts asked: "
          f"{len(distinct)}; every job's vectors equal one process's: {same}")


if __name__ == "__main__":
    main()
