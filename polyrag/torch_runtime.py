"""Torch set-up shared by everything polyrag trains (the MARS encoder judges, the fine-tuned
generator): which device to use, and seeding every random source a training run touches."""

from __future__ import annotations

import random

import numpy as np


def resolve_device(device: str) -> str:
    import torch

    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


def seed_everything(seed: int) -> int:
    """Seed python, numpy and torch (dropout, new heads, LoRA init); returns the seed as used."""
    import torch

    seed = int(seed) % 2**32  # numpy accepts no more; stable_seed() gives 64-bit seeds
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # every device, CUDA included
    return seed
