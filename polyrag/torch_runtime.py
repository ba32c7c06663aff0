"""Torch set-up shared by everything polyrag runs on torch: which device to use, the precision an
encoder or cross-encoder runs in, and seeding every random source a training run touches (the MARS
encoder judges, the fine-tuned generator)."""

from __future__ import annotations

import random

import numpy as np


def resolve_device(device: str) -> str:
    import torch

    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


#: Precisions a sentence-transformers encoder or cross-encoder runs in (bfloat16/float16: on a GPU,
#: about 4x float32's throughput at BGE-M3's shape on an H200; benchmarks/bench_gpu.py).
PRECISIONS = ("float32", "bfloat16", "float16")


def to_precision(module, dtype: str):
    """``module`` (a torch module) in ``dtype``, one of ``PRECISIONS``; float32 leaves it as loaded."""
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(PRECISIONS)}")
    if dtype != "float32":
        import torch

        module.to(getattr(torch, dtype))
    return module


def seed_everything(seed: int) -> int:
    """Seed python, numpy and torch (dropout, new heads, LoRA init); returns the seed as used."""
    import torch

    seed = int(seed) % 2**32  # numpy accepts no more; stable_seed() gives 64-bit seeds
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # every device, CUDA included
    return seed
