"""What a backend's ``identity`` is made of: everything that changes the answers, nothing secret.

The identity goes into every cache key (``Request.cache_key``) and the cache's ``model`` column, so
a changed endpoint, weights file, checkpoint folder, Hub commit, adapter or numeric option is a
new model whose answers are asked again, and an API key (which changes no answer) never appears.
Options left at their defaults add nothing, so an unchanged config keeps its keys where the
default is itself unambiguous (the OpenAI API, a model without options).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: Where ``openai.OpenAI`` sends requests when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set.
OPENAI_API = "https://api.openai.com/v1"
# Query parameters that carry credentials rather than choose the model (Azure's api-version stays).
SECRET_PARAMETER = re.compile(r"key|token|secret|sig|password|auth", re.IGNORECASE)
# A file is fingerprinted from this many evenly spaced blocks of this size (and its length): a
# 40 GB GGUF costs 17 MiB of reading, and any re-quantisation or retraining changes the header's
# tensor table or every block. Files up to the total are hashed whole.
BLOCKS, BLOCK_BYTES = 17, 1 << 20
COMMIT = re.compile(r"[0-9a-f]{40}")


def endpoint(base_url: str | None) -> str:
    """The server an OpenAI client talks to, as the openai package resolves it, without credentials:
    no user:password, no key-like query parameters, no trailing slash."""
    url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_API
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if not SECRET_PARAMETER.search(k)])
    return urlunsplit((parts.scheme.lower(), netloc.lower(), parts.path.rstrip("/"), query, ""))


def file_fingerprint(path: str | Path) -> str:
    """A short content hash of a (large) file: its length and evenly spaced blocks."""
    path = Path(path)
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as handle:
        if size <= BLOCKS * BLOCK_BYTES:
            digest.update(handle.read())
        else:
            for k in range(BLOCKS):
                handle.seek((size - BLOCK_BYTES) * k // (BLOCKS - 1))
                digest.update(handle.read(BLOCK_BYTES))
    return digest.hexdigest()[:16]


def folder_fingerprint(folder: str | Path) -> str:
    """A short content hash of a checkpoint folder: the names and fingerprints of its top-level files
    (what ``from_pretrained`` reads: config, tokenizer, weights)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):
        digest.update(f"{path.name}\0{file_fingerprint(path)}\0".encode())
    return digest.hexdigest()[:16]


def hub_commit(model: str, revision: str | None) -> str | None:
    """The commit of a Hub model in the local Hugging Face cache (what was loaded), or None."""
    if revision and COMMIT.fullmatch(revision):
        return revision
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(model, "config.json", revision=revision)
    except ValueError:  # not a Hub id (huggingface_hub's HFValidationError)
        return None
    if not isinstance(found, str):
        return None
    commit = Path(found).parent.name  # .../models--org--name/snapshots/<commit>/config.json
    return commit if COMMIT.fullmatch(commit) else None


def model_source(model: str, revision: str | None = None, commit: str | None = None) -> str:
    """A local checkpoint folder by its name and content (not its path: a copy elsewhere answers the
    same); a Hub id by the commit loaded (``commit``, else the local Hub cache's), else by the
    revision asked for."""
    if Path(model).is_dir():
        return f"{Path(model).resolve().name}#{folder_fingerprint(model)}"
    commit = commit or hub_commit(model, revision)
    if commit or revision:
        return f"{model}@{commit or revision}"
    return model


def with_options(identity: str, **options) -> str:
    """``identity`` with every option that is set (not None, not its default, given as None here)
    appended as ``+name=value`` in a stable order."""
    for name, value in sorted(options.items()):
        if value is None or value == {} or value == []:
            continue
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        identity += f"+{name}={text}"
    return identity


def checkpoint_identity(model: str | None, package: str | None, revision: str | None, adapter_hash: str | None,
                        mode: str = "chat", dtype: str = "auto", commit: str | None = None, **options) -> str:
    """The identity of a model loaded from a checkpoint (the ``transformers`` and ``vllm`` backends):
    the package and its version, or the checkpoint folder's content or the Hub commit loaded; the
    adapter's content hash; a dtype and mode other than the defaults; and the backend's ``options``
    that change answers (vLLM's engine options). Device, batch size, parallelism and memory
    settings change no answer beyond rounding and are left out."""
    identity = f"{package}=={importlib.metadata.version(package)}" if package else model_source(model, revision, commit)
    if adapter_hash:
        identity += f"+lora:{adapter_hash}"
    return with_options(identity, dtype=None if dtype == "auto" else dtype, mode=None if mode == "chat" else mode,
                        **options)
