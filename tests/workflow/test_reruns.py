"""What reruns a job is what it reads, not the form of the config or where the folder is (DESIGN.md,
"Rerun decisions depend on content"; polyrag/config/params.py). One tiny run in a checkout of the
workflow (its files linked into a temporary folder that is both the workflow's folder and the
working directory, as after `git clone` and `make demo`), then dry runs of copies of it: the same
settings with sorted keys plus a model plan only that model's jobs; the folder copied elsewhere plans
nothing; a passage edited in a user's corpus file reruns its corpus, index, retrieval and system; a
user's answers file replaced with an older modification time reruns its system."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.helpers.workflow import scheduled_jobs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

CHECKOUT = ("Snakefile", "rules", "scripts", "schemas", "envs", "report", "resources")
# Written in this key order (yaml.safe_dump(sort_keys=False)); none of these mappings is sorted.
CONFIG = {
    "languages": ["en"],
    "seed": 7,
    "cache_dir": "cache",
    "data": {"source": "demo", "max_questions": 4, "arena_queries": 4},
    "models": {  # one language: no mock answers in another
        "mock-0": {"backend": "mock", "error_rate": 0.0, "corruptions": ["refusal"]},
        "mock-grounded": {"backend": "mock", "grounded": True},
        "user-system": {"backend": "file", "answers": "answers/{lang}.jsonl", "unknown": "ignore"},
    },
    "judges": {"reference": {"backend": "reference"}},
    "arena": {"surrogate": {"holdout_repeats": 5}, "judge": "reference"},
    "retrieval": {"corpora": {"fc": {"source": "file", "file": "corp/{lang}.jsonl"}},
                  "retrievers": {"bm25": {"kind": "bm25", "corpus": "fc"}}},
    "systems": {"rag": {"retriever": "bm25", "top_k": 2, "generator": "mock-grounded"}},
}


def write_config(folder, config, sort_keys=False):
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=sort_keys, allow_unicode=True))


def snakemake(folder, *args):
    """Snakemake with the folder's own Snakefile, in the folder."""
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(folder / "Snakefile"), "-d", str(folder),
                             "--configfile", str(folder / "config.yaml"), *args],
                            cwd=folder, capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def user_files(repo, folder):
    """A corpus file of the demo's English passages and a file system's answers citing each
    question's first passage."""
    questions = [json.loads(line) for line in (repo / "resources/demo/en.jsonl").read_text().splitlines() if line]
    passages = {p["docid"]: {"docid": p["docid"], "title": p.get("title") or "", "text": p["text"]}
                for q in questions for p in q["passages"]}
    (folder / "corp").mkdir()
    (folder / "corp/en.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages.values()))
    (folder / "answers").mkdir()
    (folder / "answers/en.jsonl").write_text("".join(
        json.dumps({"query_id": q["query_id"], "answer": f"As written [{q['passages'][0]['docid']}].",
                    "docids": [q["passages"][0]["docid"]]}) + "\n" for q in questions))


@pytest.fixture(scope="module")
def finished(repo, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reruns") / "checkout"
    folder.mkdir()
    for name in CHECKOUT:
        (folder / name).symlink_to(repo / name)
    user_files(repo, folder)
    write_config(folder, CONFIG)
    snakemake(folder, "--cores", "2")
    assert "Nothing to be done" in snakemake(folder, "-n")
    return folder


@pytest.fixture
def copy(finished, tmp_path):
    """The finished folder copied elsewhere with its metadata (.snakemake) and modification times."""
    return shutil.copytree(finished, tmp_path / "copy", symlinks=True)


def test_the_same_settings_in_sorted_key_order_plan_only_a_new_models_jobs(copy):
    added = {**CONFIG, "models": {**CONFIG["models"], "mock-50": {"backend": "mock", "error_rate": 0.5,
                                                                        "corruptions": ["refusal"]}}}
    write_config(copy, added, sort_keys=False)
    as_written = scheduled_jobs(snakemake(copy, "-n"))
    write_config(copy, added, sort_keys=True)
    output = snakemake(copy, "-n")
    assert scheduled_jobs(output) == as_written
    # the new model's answers, none of the questions', corpus's, index's, retrieval's or other models'
    assert as_written["generate_answers"] == 1 and "results/answers/mock-50/en.parquet" in output
    assert not {"select_questions", "retrieval_corpus", "bm25_index", "retrieve", "system_passages"} & set(as_written)


def test_a_copy_of_the_finished_folder_plans_nothing(copy):
    assert "Nothing to be done" in snakemake(copy, "-n")


@contextlib.contextmanager
def edited(path):
    """``path`` for a test to change in the finished folder, then put back with its bytes and times."""
    content, before = path.read_bytes(), path.stat()
    try:
        yield path
    finally:
        path.write_bytes(content)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_passage_edited_in_a_users_corpus_file_reruns_its_corpus_index_retrieval_and_system(finished):
    with edited(finished / "corp/en.jsonl") as corpus:
        rows = [json.loads(line) for line in corpus.read_text().splitlines()]
        rows[0]["text"] = "A passage rewritten by its owner after the run."
        corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
        output = snakemake(finished, "-n")
    jobs = scheduled_jobs(output)
    assert {"retrieval_corpus": 1, "bm25_index": 1, "retrieve": 1, "system_passages": 1}.items() <= jobs.items()
    assert jobs["generate_answers"] == 1 and "results/answers/rag/en.parquet" in output  # the system given its passages


def test_an_answers_file_replaced_with_an_older_modification_time_reruns_its_system(finished):
    with edited(finished / "answers/en.jsonl") as answers:
        before = answers.stat()
        rows = [json.loads(line) for line in answers.read_text().splitlines()]
        rows[0]["answer"] = "Another answer [" + rows[0]["docids"][0] + "]."
        answers.write_text("".join(json.dumps(row) + "\n" for row in rows))
        os.utime(answers, ns=(before.st_atime_ns, before.st_mtime_ns - 3_600_000_000_000))  # as cp -p, rsync -t leave it
        output = snakemake(finished, "-n")
    assert scheduled_jobs(output)["generate_answers"] == 1
    assert "results/answers/user-system/en.parquet" in output
    # put back as it was (bytes and times), nothing is left to do
    assert "Nothing to be done" in snakemake(finished, "-n")
