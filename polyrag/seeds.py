"""Seeds derived from names, stable across processes and machines (unlike ``hash()``)."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def rng_for(*parts: object) -> np.random.Generator:
    """A generator seeded by the config seed and the names of what it is for."""
    return np.random.default_rng(stable_seed(*parts))
