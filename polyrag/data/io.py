"""Reading upstream files line by line with row numbers, and cached downloads of pinned URLs."""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import tempfile
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path

from polyrag.errors import DataError

log = logging.getLogger(__name__)


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` of a UTF-8 text file, gunzipped when its name ends in ``.gz``.
    A line that is not UTF-8, a truncated gzip file or a file named ``.gz`` that is not gzip stops
    with one DataError naming the file and line, instead of a decoder's traceback."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    gzipped = path.suffix == ".gz"
    number = 0
    try:
        with (gzip.open if gzipped else open)(path, "rb") as handle:
            # Bytes are read and decoded a line at a time so that a bad byte names its line.
            for number, raw in enumerate(handle, start=1):
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise DataError(f"{path}: line {number}: not UTF-8 text (byte {raw[error.start]:#04x} at "
                                    f"column {error.start + 1}); save the file as UTF-8") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        what = ("not a gzip file (its name ends in .gz)" if isinstance(error, gzip.BadGzipFile) and not number
                else f"the gzip data is truncated or corrupt after line {number} ({error})")
        raise DataError(f"{path}: {what}; recompress or download it again") from None


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` of a JSONL file (``.jsonl.gz`` gunzipped); a line that is not
    JSON or not UTF-8 stops with the file and line (``text_lines``)."""
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}: line {number}: not valid JSON ({error.msg})") from error


def read_json(path: str | Path) -> dict:
    """A JSON file, or a DataError naming it (not JSON, not UTF-8)."""
    text = "".join(line for _, line in text_lines(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from error


def cached_download(url: str, cache_dir: str | Path, local_key: str = "data.dir") -> Path:
    """Download ``url`` once into ``cache_dir`` (atomically) and return the local path.

    ``local_key`` is the setting that points at a local copy instead, named in the error so the
    user fixes the right one (``meta_eval.dir`` for MEMERAG, not ``data.dir``)."""
    target = Path(cache_dir) / "downloads" / url.split("://", 1)[-1]
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("downloading %s", url)
    try:
        with urllib.request.urlopen(url, timeout=120) as response, tempfile.NamedTemporaryFile(
            dir=target.parent, delete=False
        ) as tmp:
            shutil.copyfileobj(response, tmp)
    except OSError as error:
        raise DataError(
            f"could not download {url} ({error}); download it by hand, or point {local_key} at a local copy"
        ) from error
    os.replace(tmp.name, target)
    return target
