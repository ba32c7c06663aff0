"""Params in the form Snakemake compares, so that what reruns a job is what the job reads.

Snakemake (9.x) stores ``repr`` of each param of a job (those not computed from its input or output
files) in ``.snakemake/metadata`` and reruns the job when that text changes. ``canonical`` gives a
value whose text depends only on its meaning: mapping keys sorted in its text (at every depth) and paths inside
the working directory relative to it. The same settings in another key order, or the working
directory copied elsewhere, then give the same text. ``FileDigests`` gives the SHA-256 of the files
a job reads that the workflow does not write (a user's corpus, answers, passages): a file whose
content changed reruns its jobs even when its modification time is older (``cp -p``, rsync, tar).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import Any

DIGEST_STORE = ".snakemake/polyrag/file_digests.json"
CHUNK = 1 << 20


def _key_order(key: Any) -> tuple[str, str]:
    # YAML keys are mostly strings; a number and a string never compare, so order by type first
    return type(key).__name__, str(key)


def relative_path(value: str, workdir: str | Path) -> str:
    """``value`` relative to ``workdir`` when it is an absolute path inside it (as written or with
    links resolved), else ``value`` as it is. Jobs run in the working directory, so the relative path
    names the same file."""
    if not os.path.isabs(value):
        return value
    path = os.path.normpath(value)
    for root in dict.fromkeys([os.path.normpath(str(workdir)), os.path.realpath(workdir)]):
        if path == root:
            return "."
        if path.startswith(root.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(path, root)).as_posix()
    return value


class CanonicalDict(dict):
    """A dict whose text lists its keys sorted, while it keeps the config's order for whoever
    iterates it: Snakemake compares the text, a script reads the order the user wrote (the
    languages of a summary, the columns of a table)."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{key!r}: {self[key]!r}" for key in sorted(self, key=_key_order)) + "}"


def canonical(value: Any, workdir: str | Path) -> Any:
    """``value`` whose text has every mapping's keys in sorted order and every path inside
    ``workdir`` relative to it (lists keep their order: it is part of their meaning). Dicts (as
    :class:`CanonicalDict`, in their own order), lists and strings come back, so a script reads the
    value as before."""
    if isinstance(value, dict):
        return CanonicalDict((key, canonical(item, workdir)) for key, item in value.items())
    if type(value) in (list, tuple):
        return type(value)(canonical(item, workdir) for item in value)
    if isinstance(value, PurePath):
        value = str(value)
    if isinstance(value, str):
        return relative_path(value, workdir)
    return value


class FileDigests:
    """SHA-256 of files, each computed once per process and kept between runs in a small JSON table
    keyed by the file's (path, size, mtime_ns, inode, ctime_ns): a dry run over a large corpus does
    not read it again, and a file replaced (or copied with its old times) has another inode or
    ctime, so it is read again. The table is only a cache: an unreadable or unwritable one costs a
    re-read, never a wrong digest."""

    def __init__(self, store: str | Path | None = DIGEST_STORE):
        self.store = Path(store) if store else None
        self._known: dict[str, str] | None = None

    def _table(self) -> dict[str, str]:
        if self._known is None:
            self._known = {}
            if self.store is not None:
                try:
                    self._known = dict(json.loads(self.store.read_text()))
                except (OSError, ValueError, TypeError):
                    pass
        return self._known

    def _save(self) -> None:
        if self.store is None:
            return
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            partial = self.store.with_name(f"{self.store.name}.{os.getpid()}.tmp")
            partial.write_text(json.dumps(self._known, sort_keys=True))
            os.replace(partial, self.store)  # atomic: a concurrent reader sees the old table or the new
        except OSError:
            pass

    def file(self, path: str | Path) -> str | None:
        """``sha256:<hex>`` of the file's bytes; None when it does not exist (Snakemake then reports it
        as a missing input, naming it)."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = json.dumps([os.path.realpath(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns])
        table = self._table()
        if key not in table:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                while chunk := handle.read(CHUNK):
                    digest.update(chunk)
            table[key] = f"sha256:{digest.hexdigest()}"
            self._save()
        return table[key]

    def __call__(self, path: str | Path) -> str | None:
        """A file's digest, or a folder's: the digest of its files' relative paths and digests."""
        if not os.path.isdir(path):
            return self.file(path)
        listing = hashlib.sha256()
        for root, folders, files in os.walk(path):
            folders.sort()
            for name in sorted(files):
                member = os.path.join(root, name)
                listing.update(f"{os.path.relpath(member, path)}\0{self.file(member)}\n".encode())
        return f"sha256:{listing.hexdigest()}"


def is_written_by_workflow(path: str, output_roots: Iterable[str]) -> bool:
    """Whether ``path`` lies under a folder the workflow's rules write (the config's results folder;
    a root may be more than one folder deep, or absolute where the results folder is)."""
    parts = PurePath(path).parts
    root_parts = [PurePath(root).parts for root in output_roots]
    return bool(parts) and any(parts[:len(root)] == root for root in root_parts)


def output_roots(outputs: Iterable[str]) -> set[str]:
    """The first folder of each relative output path: where the workflow writes."""
    return {PurePath(str(path)).parts[0] for path in outputs if str(path) and not os.path.isabs(str(path))}


def source_digests(paths: Iterable[str], roots: Iterable[str], digests: FileDigests,
                   workdir: str | Path) -> dict[str, str | None]:
    """The digest of each file in ``paths`` that no rule writes (outside ``roots``), by its path
    relative to ``workdir`` where it is inside it, sorted."""
    roots = {relative_path(str(root), workdir) for root in roots}  # an absolute results folder, as the paths
    named = {relative_path(str(path), workdir): str(path) for path in paths
             if not is_written_by_workflow(relative_path(str(path), workdir), roots)}
    return {name: digests(named[name]) for name in sorted(named)}
