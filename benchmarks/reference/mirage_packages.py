"""Import single modules of ``mirage-bench`` 0.0.4 without its package ``__init__`` files, which
import every generator client (vllm, openai, anthropic, ...): the parent packages are registered
empty. Used by the reference scripts that run in ``.venv-mirage-bench``."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path


def register_empty_parents(subpackage: str) -> None:
    """Make ``mirage_bench.{subpackage}.X`` importable without running any ``__init__``."""
    registered = sys.modules.get("mirage_bench")
    if registered is not None and registered.__spec__ is None:  # registered empty already
        root = Path(registered.__path__[0])
    else:
        root = Path(importlib.util.find_spec("mirage_bench").origin).parent
    for name, path in (("mirage_bench", root), (f"mirage_bench.{subpackage}", root / subpackage)):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package
