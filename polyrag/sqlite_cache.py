"""Opening polyrag's SQLite caches (LLM responses, embeddings) so that a damaged file costs only
what is damaged in it, never a traceback on every rerun.

A file that fails SQLite's ``PRAGMA quick_check`` (truncated by a full disk or a killed copy, its
header overwritten) is kept as ``<file>.damaged-<UTC time>`` (with its WAL), every row that can
still be read is copied into a fresh cache that takes its place, and one warning names
the damaged file, the rows recovered and the rows lost. The keys of the lost rows, where the
primary-key index still names them, are kept in the ``lost_keys`` table, so the jobs that ask for
them again can count them (``lost_count``). A cache file of 0 bytes is a valid empty database to
SQLite: it is kept, with a warning that every request is asked again.

Reading a damaged file is best effort and never writes to it: on a copy, the header's page count
is set to what the file holds (SQLite refuses a file shorter than its header says), a header that
is not SQLite's any more is rebuilt (page size guessed), the table is scanned in rowid order until
the first damaged page, and every rowid beyond it is then looked up alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import sqlite3
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from polyrag.errors import PolyragError

log = logging.getLogger(__name__)

MAGIC = b"SQLite format 3\x00"
PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536)  # SQLite's default first
# Past the highest rowid seen, lookups stop after this many rowids in a row without a row.
ROWID_GAP = 1000


class CacheDamaged(PolyragError):
    """A cache file is damaged in a way that reading it again would not fix (raised mid-job)."""


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold ``<path>.lock``: parallel jobs opening one cache check (and repair) it one at a time."""
    with open(path.with_name(f"{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def is_damage(error: sqlite3.DatabaseError) -> bool:
    """Whether SQLite found the file damaged (not busy, locked or unreadable for the OS)."""
    return getattr(error, "sqlite_errorname", "").startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


def damage(path: Path, what: str) -> str | None:
    """Why SQLite cannot read ``path`` whole (None: it can)."""
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=120)) as db:
            found = [row[0] for row in db.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as error:
        if not is_damage(error):
            raise PolyragError(f"{what} {path} cannot be opened: {error}") from error
        return str(error)
    return None if found == ["ok"] else "; ".join(found[:3])


def sqlite_header(page_size: int, pages: int) -> bytes:
    """A 100-byte database header for a rollback-journal file of ``pages`` pages (the file format's
    own defaults: UTF-8, schema format 4, no free list; SQLite rereads the schema itself)."""
    header = bytearray(100)
    header[0:16] = MAGIC
    header[16:18] = struct.pack(">H", 1 if page_size == 65536 else page_size)
    header[18:24] = bytes([1, 1, 0, 64, 32, 32])
    header[24:32] = struct.pack(">II", 1, pages)  # change counter 1 = valid-for 1: the page count holds
    header[40:48] = struct.pack(">II", 1, 4)  # schema cookie, schema format
    header[56:60] = struct.pack(">I", 1)  # UTF-8
    header[92:100] = struct.pack(">II", 1, sqlite3.sqlite_version_info[0] * 1000000
                                 + sqlite3.sqlite_version_info[1] * 1000 + sqlite3.sqlite_version_info[2])
    return bytes(header)


def readable_copies(damaged: Path, work: Path) -> Iterator[Path]:
    """Copies of ``damaged`` (with its WAL) that SQLite may open: the header as it is, with the page
    count the file holds; or, where the header is not SQLite's, rebuilt with each page size."""
    size = damaged.stat().st_size
    with open(damaged, "rb") as handle:
        head = handle.read(100)
    wal = damaged.with_name(damaged.name + "-wal")
    if head[:16] == MAGIC:
        page_size = struct.unpack(">H", head[16:18])[0]
        candidates = [(page_size if page_size != 1 else 65536, False)]
    else:
        sizes = list(PAGE_SIZES)
        if wal.exists() and wal.stat().st_size >= 32:  # the WAL's header names the page size
            with open(wal, "rb") as handle:
                named = struct.unpack(">I", handle.read(12)[8:12])[0]
            sizes = [named] + [s for s in sizes if s != named] if named in sizes else sizes
        candidates = [(page_size, True) for page_size in sizes]
    for page_size, rebuild in candidates:
        for suffix in ("", "-wal", "-shm"):
            work.with_name(work.name + suffix).unlink(missing_ok=True)
        shutil.copyfile(damaged, work)
        if wal.exists():
            shutil.copyfile(wal, work.with_name(work.name + "-wal"))
        with open(work, "r+b") as handle:
            if rebuild:
                header = bytearray(sqlite_header(page_size, size // page_size))
                if wal.exists():
                    header[18:20] = bytes([2, 2])  # WAL mode: SQLite reads the pages the WAL holds
                handle.write(header)
            else:
                handle.seek(28)
                handle.write(struct.pack(">I", size // page_size))
        yield work


def salvage(damaged: Path, table: str) -> tuple[list[str], list[tuple], set[str], bool]:
    """``(column names, rows, keys, whole)`` readable from ``damaged``: every row of ``table`` SQLite
    can still read, the keys its primary-key index names, and whether that index was read whole."""
    work = damaged.with_name(f"{damaged.name}.reading")
    try:
        for copy in readable_copies(damaged, work):
            with contextlib.closing(sqlite3.connect(copy)) as db:
                try:
                    columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
                except sqlite3.DatabaseError:
                    continue
                if not columns:
                    continue
                keys, whole = index_keys(db, table)
                with contextlib.suppress(sqlite3.DatabaseError):  # still lost from an earlier damage
                    keys.update(key for (key,) in db.execute("SELECT key FROM lost_keys"))
                return columns, read_rows(db, table, columns), keys, whole
        return [], [], set(), False
    finally:
        for suffix in ("", "-wal", "-shm"):
            work.with_name(work.name + suffix).unlink(missing_ok=True)


def read_rows(db: sqlite3.Connection, table: str, columns: list[str]) -> list[tuple]:
    """Rows in rowid order up to the first damaged page, then each later rowid on its own."""
    select = f"SELECT rowid, {', '.join(columns)} FROM {table} NOT INDEXED"
    rows: dict[int, tuple] = {}
    with contextlib.suppress(sqlite3.DatabaseError):
        for row in db.execute(f"{select} ORDER BY rowid"):
            rows[row[0]] = row[1:]
    highest = max(rows, default=0)
    with contextlib.suppress(sqlite3.DatabaseError):  # the index names rowids beyond a damaged table page
        for (rowid,) in db.execute(f"SELECT rowid FROM {table} INDEXED BY sqlite_autoindex_{table}_1"):
            highest = max(highest, rowid)
    rowid, misses = max(rows, default=0), 0
    while rowid < highest or misses < ROWID_GAP:
        rowid += 1
        try:
            row = db.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            row = None
        if row is None:
            misses += 1
        else:
            rows[rowid], misses = row[1:], 0
    return [rows[rowid] for rowid in sorted(rows)]


def index_keys(db: sqlite3.Connection, table: str) -> tuple[set[str], bool]:
    """The keys the primary-key index names, and whether it was read whole. A damaged index is read
    by each two-hex-digit prefix of the keys (SHA-256 digests), so one bad page loses only its part."""
    select = f"SELECT key FROM {table} INDEXED BY sqlite_autoindex_{table}_1"
    try:
        return {key for (key,) in db.execute(select)}, True
    except sqlite3.DatabaseError:
        pass
    keys: set[str] = set()
    prefixes = [f"{k:02x}" for k in range(256)]
    for prefix, following in zip(prefixes, prefixes[1:] + ["g"]):
        with contextlib.suppress(sqlite3.DatabaseError):
            for (key,) in db.execute(f"{select} WHERE key >= ? AND key < ?", (prefix, following)):
                keys.add(key)
    return keys, False


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=120, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def open_sqlite_cache(path: str | Path, schema: str, table: str, what: str) -> sqlite3.Connection:
    """``path`` opened in WAL mode with ``schema`` (``CREATE TABLE IF NOT EXISTS {table} (key TEXT
    PRIMARY KEY, ...)``) and the ``lost_keys`` table; repaired first when damaged. ``what`` names the
    cache in messages ("the LLM response cache of model 'x'")."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(path):
        if path.exists() and path.stat().st_size == 0:
            log.warning("%s %s is empty (0 bytes): nothing was cached there, so every request is made "
                        "(and paid) again; if it held responses, restore it from a backup before running on",
                        what, path)
        elif path.exists() and (why := damage(path, what)) is not None:
            repair(path, schema, table, what, why)
        db = connect(path)
        db.execute(schema)
        db.execute("CREATE TABLE IF NOT EXISTS lost_keys (key TEXT PRIMARY KEY)")
    return db


def keep(path: Path, aside: Path) -> None:
    """``aside`` becomes another name of ``path`` (a copy where the file system has no hard links)."""
    try:
        os.link(path, aside)
    except OSError:
        shutil.copyfile(path, aside)


def repair(path: Path, schema: str, table: str, what: str, why: str) -> None:
    """Write what can be read of the damaged ``path`` into a fresh file, keep the damaged one (and
    its WAL) as ``<file>.damaged-<time>``, and put the fresh file in its place. Until the last step
    ``path`` is the damaged file, so a job killed on the way leaves it to be repaired again."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    columns, rows, keys, whole = salvage(path, table)
    fresh = path.with_name(f"{path.name}.{os.getpid()}.partial")
    fresh.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(fresh, isolation_level=None)) as db:
        db.execute(schema)
        db.execute("CREATE TABLE IF NOT EXISTS lost_keys (key TEXT PRIMARY KEY)")
        db.execute("BEGIN")
        wanted = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        if rows and columns == wanted:
            db.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)
        elif rows:  # an older layout: copy the columns both have
            shared = [c for c in wanted if c in columns]
            db.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(shared)}) VALUES ({', '.join('?' * len(shared))})",
                           [tuple(row[columns.index(c)] for c in shared) for row in rows])
        recovered = {key for (key,) in db.execute(f"SELECT key FROM {table}")}
        lost = sorted(keys - recovered)
        db.executemany("INSERT OR IGNORE INTO lost_keys VALUES (?)", [(key,) for key in lost])
        db.execute("COMMIT")
    wal = path.with_name(f"{path.name}-wal")
    keep(path, aside)
    if wal.exists() and wal.stat().st_size:  # committed rows that never reached the file
        keep(wal, aside.with_name(f"{aside.name}-wal"))
    wal.unlink(missing_ok=True)  # never to be replayed onto the fresh file
    path.with_name(f"{path.name}-shm").unlink(missing_ok=True)
    os.replace(fresh, path)
    if whole:
        lost_text = f"{len(lost)} rows could not be read"
    elif lost:
        lost_text = f"at least {len(lost)} rows could not be read (the key index is damaged too)"
    else:
        lost_text = "an unknown number of rows could not be read (the key index is damaged too)"
    log.warning("%s %s is damaged (%s): moved it to %s and recovered %d rows into a fresh cache; %s and "
                "will be requested again", what, path, why, aside.name, len(recovered), lost_text)


def lost_count(db: sqlite3.Connection, keys: list[str]) -> int:
    """How many of ``keys`` were lost from a damaged cache (and are therefore asked again)."""
    if not keys or db.execute("SELECT 1 FROM lost_keys LIMIT 1").fetchone() is None:
        return 0
    found = 0
    for start in range(0, len(keys), 500):  # SQLite's limit on bound parameters
        chunk = keys[start:start + 500]
        found += db.execute(f"SELECT count(*) FROM lost_keys WHERE key IN ({', '.join('?' * len(chunk))})",
                            chunk).fetchone()[0]
    return found
