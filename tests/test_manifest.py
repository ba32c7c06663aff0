"""Manifests: one model's files in every language in one JSON file (polyrag/manifest.py)."""

from __future__ import annotations

import hashlib
import json

import pytest

from polyrag.errors import DataError
from polyrag.manifest import manifest_paths, write_manifest


def test_a_manifest_lists_each_file_with_its_size_and_hash_and_gives_the_paths_in_language_order(tmp_path):
    files = {}
    for lang, text in [("en", "answers in English"), ("zh", "中文的回答" * 200_000)]:
        files[lang] = tmp_path / f"{lang}.parquet"
        files[lang].write_text(text)
    write_manifest(tmp_path / "manifest.json", "mock-0", {"answers": {lang: str(path) for lang, path in files.items()}})
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["model"] == "mock-0"
    for lang, path in files.items():
        data = path.read_bytes()  # hashlib on the whole file at once (the manifest reads 1 MB blocks; this one is 3 MB)
        assert manifest["answers"][lang] == {"path": str(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert manifest_paths(tmp_path / "manifest.json", "answers", ["zh", "en"]) == [str(files["zh"]), str(files["en"])]
    with pytest.raises(DataError, match=r"manifest.json lists no answers file for languages \['de'\]; rerun its rule"):
        manifest_paths(tmp_path / "manifest.json", "answers", ["en", "de"])
