"""Durable response cache: every successful response is committed to SQLite the moment it returns,
so a killed job resumes without paying for the same request twice. A damaged cache file is moved
aside and its readable rows recovered when it is opened (:mod:`polyrag.sqlite_cache`)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from polyrag.sqlite_cache import CacheDamaged, is_damage, lost_count, open_sqlite_cache

SCHEMA = ("CREATE TABLE IF NOT EXISTS responses ("
          " key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,"
          " request TEXT NOT NULL, response TEXT NOT NULL, tokens INTEGER, created REAL NOT NULL)")


class ResponseCache:
    """A key/value store of responses in one SQLite file (WAL mode, safe for parallel jobs)."""

    def __init__(self, path: str | Path, what: str = "the LLM response cache"):
        self.path = Path(path)
        self.what = what
        self._lock = threading.Lock()
        self._db = open_sqlite_cache(self.path, SCHEMA, "responses", what)

    def _damaged(self, error: sqlite3.DatabaseError) -> Exception:
        if not is_damage(error):
            return error
        return CacheDamaged(f"{self.what} {self.path} was damaged during this job ({error}); rerun the job: "
                            "it moves the file aside and keeps every row that can still be read")

    def get(self, key: str) -> tuple[str, int | None] | None:
        """``(response text, tokens used when it was made)`` or None."""
        with self._lock:
            try:
                row = self._db.execute("SELECT response, tokens FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError as error:
                raise self._damaged(error) from error
        return None if row is None else (row[0], row[1])

    def lost(self, keys: list[str]) -> int:
        """How many of ``keys`` were lost from a damaged copy of this cache (see ``lost_keys``)."""
        with self._lock:
            return lost_count(self._db, keys)

    def put(self, key: str, *, backend: str, model: str, request: dict, response: str, tokens: int | None) -> None:
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, backend, model, json.dumps(request, ensure_ascii=False), response, tokens, time.time()),
                )
                self._db.execute("DELETE FROM lost_keys WHERE key = ?", (key,))
            except sqlite3.DatabaseError as error:
                raise self._damaged(error) from error

    def close(self) -> None:
        with self._lock:
            self._db.close()
