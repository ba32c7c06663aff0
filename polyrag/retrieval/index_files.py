"""An index folder's integrity: the size of every file it was saved with, checked on load.

``save`` writes ``FILES`` last, so its presence means the folder was written whole; ``load`` reads
it first and stops before the index library does on a file that is missing or of another size (a
job killed while copying, a full disk, a folder synced halfway), naming the folder, the file and
how to rebuild it. A job that reads an index cannot rebuild it: the index is another job's output
(a BM25 index may need a node with the memory for the whole corpus, a dense one GPU encoding jobs),
so the message gives the Snakemake command that rebuilds that folder and what depends on it.
Damage that keeps the sizes is still named the same way: the library's read error is caught.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from polyrag.errors import DataError

FILES = "polyrag_files.json"


def damaged(folder: str | Path, what: str, detail: str) -> DataError:
    """The one-line error of a damaged index folder, with the command that rebuilds it."""
    return DataError(f"{folder}: the {what} index is damaged ({detail}); rebuild it: snakemake --forcerun {folder} "
                     "(with your target and options), or delete the folder and rerun")


def write_files(folder: str | Path) -> None:
    """Record the size of every file in ``folder`` (after all of them are written)."""
    folder = Path(folder)
    sizes = {path.name: path.stat().st_size for path in sorted(folder.iterdir()) if path.is_file() and path.name != FILES}
    (folder / FILES).write_text(json.dumps(sizes, indent=1) + "\n", encoding="utf-8")


def check_files(folder: str | Path, what: str) -> None:
    """Every file ``folder`` was saved with is there at its size; an index saved without the record
    (by an older polyrag) is read as it is."""
    folder = Path(folder)
    if not (folder / FILES).exists():
        return
    with reading(folder, what):
        sizes = json.loads((folder / FILES).read_text(encoding="utf-8"))
    for name, size in sizes.items():
        path = folder / name
        if not path.is_file():
            raise damaged(folder, what, f"{name} is missing")
        if path.stat().st_size != size:
            raise damaged(folder, what, f"{name} is {path.stat().st_size:,} bytes, saved as {size:,}")


@contextmanager
def reading(folder: str | Path, what: str) -> Iterator[None]:
    """Read errors of the index's files (truncated arrays, broken JSON, a faiss read error) as one
    ``damaged`` message."""
    try:
        yield
    except (ValueError, OSError, EOFError, RuntimeError, KeyError) as error:  # JSONDecodeError is a ValueError
        detail = " ".join(str(error).split())[:200] or type(error).__name__
        raise damaged(folder, what, f"{type(error).__name__}: {detail}") from error
