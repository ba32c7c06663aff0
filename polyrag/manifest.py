"""Manifests: one small JSON file standing for one model's files in every language (its answers with
their questions; its features), with each file's size and SHA-256.

A job that reads a model's files in every language, once per pair of models (judging) or for every
model at once (the surrogate), declares the model's manifest as its input instead of one file per
language: with 18 languages a pair's judging job listed 56 paths, and a dry run of MIRAGE-BENCH's
scale printed megabytes of them. The manifest's rule takes those files as its inputs, so the DAG
stays exact: a file that changes reruns its manifest, and that reruns every job reading it. The
jobs read the files themselves from the paths the manifest lists."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from polyrag.errors import DataError


def file_entry(path: str | Path) -> dict:
    """A file's path, size and SHA-256."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"path": str(path), "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}


def write_manifest(output: str | Path, model: str, groups: dict[str, dict[str, str]]) -> None:
    """``groups``: per kind of file (``answers``, ``questions``, ``features``), the path per language."""
    manifest = {"model": model, **{kind: {lang: file_entry(path) for lang, path in paths.items()}
                                   for kind, paths in groups.items()}}
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def manifest_paths(manifest: str | Path, kind: str, languages: list[str]) -> list[str]:
    """The paths of ``kind`` in ``languages``, in that order, as the manifest lists them."""
    listed = json.loads(Path(manifest).read_text()).get(kind, {})
    absent = [lang for lang in languages if lang not in listed]
    if absent:
        raise DataError(f"{manifest} lists no {kind} file for languages {absent}; rerun its rule")
    return [listed[lang]["path"] for lang in languages]
