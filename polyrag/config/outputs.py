"""Where a config's files go: every file the workflow writes for a config (outputs, logs, benchmark
TSVs, the report, plots) lies under its ``results_dir`` (default ``results``, relative to the
working directory), so two configs with different folders never write each other's files
(docs/outputs.md). Caches (``cache_dir``) stay outside it: they are keyed by content and shared.

Every output path of the rules is built here: ``results_path`` for outputs, ``log_path`` for
logs (``RESULTS_DIR/logs/``), ``benchmark_path`` for Snakemake's benchmark TSVs
(``RESULTS_DIR/benchmarks/``). A path given to these is relative to the folder and may hold
Snakemake wildcards.
"""

from __future__ import annotations

import argparse
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import yaml

from polyrag.config.patterns import check_placeholders
from polyrag.errors import ConfigError

#: The folder of a config that names none (config.yaml, the demo, keeps it: the README's paths).
DEFAULT_RESULTS_DIR = "results"


def results_dir(config: Mapping) -> str:
    """The config's results folder as the rules write it: ``results_dir`` normalised (no ``./``, no
    trailing ``/``), so that two spellings of one folder give the same paths."""
    return posixpath.normpath(config.get("results_dir") or DEFAULT_RESULTS_DIR)


def check_results_dir(config: Mapping, source: str = "config") -> None:
    """Refuse a results folder that every rule's path could not begin with: one holding a brace (a
    Snakemake wildcard) or the working directory itself (its outputs would mix with the checkout's
    files, and no folder would hold this config's alone)."""
    folder = config["results_dir"]
    check_placeholders(f"{source}: results_dir", folder, allowed=())
    if results_dir(config) in (".", "/"):
        raise ConfigError(f"{source}: results_dir: {folder!r} is the working directory (or the root) itself; name a "
                          "folder of this config's own, such as results-NAME")


def results_path(config: Mapping, path: str) -> str:
    """``path`` (relative to the results folder) under the config's results folder."""
    return f"{results_dir(config)}/{path}"


def log_path(config: Mapping, path: str) -> str:
    """A job's log: ``path`` under the results folder's ``logs/``."""
    return results_path(config, f"logs/{path}")


def benchmark_path(config: Mapping, path: str) -> str:
    """A job's Snakemake benchmark TSV: ``path`` under the results folder's ``benchmarks/``."""
    return results_path(config, f"benchmarks/{path}")


def configured_results_dir(configfiles: Iterable[str | Path]) -> str:
    """The results folder a run of these config files writes, for the commands that read a finished
    run (python -m polyrag.show, make demo's report): ``results_dir`` of the last file that names
    it, as Snakemake merges its ``--configfile`` files; the default where none does."""
    folder = None
    for path in configfiles:
        with open(path, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle)
        if isinstance(loaded, Mapping) and loaded.get("results_dir") is not None:
            folder = loaded["results_dir"]
    return results_dir({"results_dir": folder})


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m polyrag.config.outputs",
                                     description="Print the results folder a run of these config files writes.")
    parser.add_argument("configfile", nargs="*", type=Path, help="the run's config files (none: the default)")
    return configured_results_dir(parser.parse_args(argv).configfile)


if __name__ == "__main__":
    print(main())
