"""Durable response cache: every successful response is committed to SQLite the moment it returns,
so a killed job resumes without paying for the same request twice."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path


class ResponseCache:
    """A key/value store of responses in one SQLite file (WAL mode, safe for parallel jobs)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=120, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,"
            " request TEXT NOT NULL, response TEXT NOT NULL, tokens INTEGER, created REAL NOT NULL)"
        )

    def get(self, key: str) -> tuple[str, int | None] | None:
        """``(response text, tokens used when it was made)`` or None."""
        with self._lock:
            row = self._db.execute("SELECT response, tokens FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else (row[0], row[1])

    def put(self, key: str, *, backend: str, model: str, request: dict, response: str, tokens: int | None) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, backend, model, json.dumps(request, ensure_ascii=False), response, tokens, time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
