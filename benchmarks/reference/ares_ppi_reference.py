"""PPI intervals from the reference package ``ares-ai`` 0.6.6, in its own environment.

``make bench-mars`` builds ``.venv-ares`` with ``ares-ai --no-deps`` and what its PPI module
imports; ``bench_mars.py`` calls:

    .venv-ares/bin/python benchmarks/reference/ares_ppi_reference.py INPUT.npz OUTPUT.json

INPUT holds arrays ``Y, Yhat, Yhat_unlabelled`` (one row per trial) and ``alpha``. The package's
``__init__`` imports its whole pipeline (torch, vllm clients, ...), so only
``RAG_Automatic_Evaluation/ppi.py`` is loaded, by path.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np


def ares_ppi_module():
    root = Path(importlib.util.find_spec("ares").submodule_search_locations[0])
    spec = importlib.util.spec_from_file_location("ares_ppi", root / "RAG_Automatic_Evaluation" / "ppi.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(input_path: str, output_path: str) -> None:
    ppi = ares_ppi_module()
    data = np.load(input_path)
    start = time.perf_counter()
    intervals = [ppi.pp_mean_iid_asymptotic(y, yhat, unlabelled, float(data["alpha"]))
                 for y, yhat, unlabelled in zip(data["Y"], data["Yhat"], data["Yhat_unlabelled"])]
    seconds = time.perf_counter() - start
    Path(output_path).write_text(json.dumps({"intervals": [[float(a), float(b)] for a, b in intervals],
                                             "seconds": seconds}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
