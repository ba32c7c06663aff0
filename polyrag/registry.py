"""A table of named plug-ins of one kind (the LLM backends; next, retrievers and rerankers), in the
lm-evaluation-harness style: a name maps to one implementation, and an unknown name fails with one
error that lists the known ones.

An entry names its class as ``"module:Class"`` and imports it on first use, so that reading the
table (the workflow's resources, the judge kinds, config validation) never imports torch, vLLM or
llama.cpp.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from polyrag.errors import ConfigError


@dataclass(frozen=True)
class Plugin:
    name: str
    implementation: str  # "module:Class"

    def load(self) -> type:
        module, _, attribute = self.implementation.partition(":")
        return getattr(importlib.import_module(module), attribute)


P = TypeVar("P", bound=Plugin)


class Registry(Generic[P]):
    """The plug-ins of one kind by name, in the order given."""

    def __init__(self, kind: str, *plugins: P):
        self.kind = kind
        self.plugins = {plugin.name: plugin for plugin in plugins}

    def __getitem__(self, name: str) -> P:
        try:
            return self.plugins[name]
        except KeyError:
            raise ConfigError(f"unknown {self.kind} {name!r} (known: {', '.join(self.plugins)})") from None

    def __contains__(self, name: object) -> bool:
        return name in self.plugins

    def __iter__(self) -> Iterator[str]:
        return iter(self.plugins)

    def __len__(self) -> int:
        return len(self.plugins)

    def values(self) -> Iterator[P]:
        return iter(self.plugins.values())
