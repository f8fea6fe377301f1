"""The search index's own file: where it lives, its schema, its state.

Conversation text is sensitive and the lovia file is the user's: the index is
a separate SQLite file under ``$XDG_CACHE_HOME/lovia-tui/`` (0600 in a 0700
directory), named after the database's identity (resolved path, device and
inode), so nothing is ever written to, or next to, the lovia database, and
``--readonly`` browsing can still search. The FTS5 table is contentless:
snippets are cut from the lovia file itself, which keeps the index small.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.private_files import cache_dir, connect_private
from lovia_tui.core.stored import UndecodedText, decode_text

FORMAT_VERSION = 6
"""Bumped whenever what is indexed or how changes: an older file is rebuilt
(4: ids kept as stored, of any type, where a TEXT column made ``42`` ``'42'``;
5: attachments indexed by name, type and size, not as ``[image]``;
6: ids that are text but not UTF-8 kept as their bytes, not spelled with U+FFFD)."""
ENTRY_CAP = 4_000
"""Characters of one entry's text that are indexed (the start of a long tool
output): measured at 4,000 to keep the index well under a quarter of the file."""
KEY_SHIFT = 20
"""A posting's rowid is ``unit key << KEY_SHIFT | entry offset``: up to 2**20
entries of one segment or batch are indexed (later ones are not)."""
BUSY_MS = 5_000
TOKENIZER = "unicode61 remove_diacritics 0"
"""Case-folding, diacritics kept: an ASCII word's tokens are then substrings
of the stored JSON, which lets a scan prefilter rows with LIKE."""

AUTOMERGE = 8
"""Segments of one level FTS5 lets wait before merging them (its default is
4): each posting is rewritten fewer times. Building the 1M file's index took
239 s against 302 s; searching it, p95 61 ms against 80; a new run waited
356 ms to be indexed, p99, against 301. 16 built in 206 s, but a run then
waited 2 s for a merge."""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
-- One row per indexed version of a segment (kind 0) or checkpoint batch
-- (kind 1). A rewritten or deleted one loses its row: its postings stay in
-- the contentless FTS table (SQLite {sqlite3.sqlite_version} cannot delete them) but
-- no longer join to anything ("dead" entries, counted in state). Ids have no
-- column type: kept as lovia's file holds them (an INTEGER 42 is not '42').
CREATE TABLE IF NOT EXISTS units (
  key INTEGER PRIMARY KEY,
  kind INTEGER NOT NULL,
  source INTEGER NOT NULL,
  session_id,
  run_id,
  seq INTEGER,
  entries INTEGER NOT NULL,
  first_index INTEGER,
  size INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS units_source ON units(kind, source);
CREATE INDEX IF NOT EXISTS units_session ON units(session_id, kind, source);
CREATE INDEX IF NOT EXISTS units_run ON units(run_id, kind, source);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
  body, tool, tag, content='', columnsize=0, tokenize='{TOKENIZER}'
);
CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, 'row');
INSERT INTO fts(fts, rank) VALUES ('automerge', {AUTOMERGE});
"""

SEGMENT, BATCH = 0, 1
STATE_KEYS = ("seg_high", "seg_count", "turn_high", "turn_count", "next_key", "dead")


def stored_id(value: Any) -> tuple[Any, bool]:
    """An id as a statement binds it with :func:`stored_id_sql`, so that the
    index (or a read of the lovia file) has it as the lovia file does: text
    that is not UTF-8 as its bytes, made TEXT again in SQL (Python binds only
    UTF-8 as text); anything else as it is."""
    if isinstance(value, UndecodedText):
        return value.raw, True
    return value, False


def stored_id_sql(n: int) -> str:
    """The SQL of an id bound by :func:`stored_id` as parameters ?n and ?n+1."""
    return f"CASE WHEN ?{n + 1} THEN CAST(?{n} AS TEXT) ELSE ?{n} END"


def identity(db_path: Path) -> tuple[str, int, int]:
    """What names a database: its resolved path, device and inode."""
    resolved = db_path.resolve()
    stat = resolved.stat()
    return str(resolved), stat.st_dev, stat.st_ino


def index_path(db_path: Path) -> Path:
    """The index file of ``db_path``: a digest of its identity, under :func:`cache_dir`."""
    path, dev, ino = identity(db_path)
    digest = hashlib.sha256(f"{path}\0{dev}\0{ino}".encode()).hexdigest()[:24]
    return cache_dir() / f"search-{digest}.db"


@dataclass(frozen=True)
class IndexState:
    """How far the index got: high-water ids and counts of each lovia table."""

    seg_high: int = 0
    seg_count: int = 0
    turn_high: int = 0
    turn_count: int = 0
    next_key: int = 1
    dead: int = 0


class IndexFile:
    """The open index of one lovia database (a plain sqlite3 connection:
    every call runs in a worker thread or a script, never on the UI loop)."""

    def __init__(self, db_path: Path, conn: sqlite3.Connection, path: Path) -> None:
        self.db_path = db_path
        self.conn = conn
        self.path = path
        self.notice: str | None = None

    @classmethod
    def open(cls, db_path: Path) -> IndexFile:
        """Open (creating if needed) the index of ``db_path``; an index of
        another format version, or of another file, is replaced. Where the
        cache cannot be written the index is kept in memory for this use
        alone, and ``notice`` says why (searches then scan)."""
        try:
            return cls._open_file(db_path)
        except (OSError, sqlite3.Error, LoviaTuiError) as exc:
            conn = sqlite3.connect(
                ":memory:", isolation_level=None, check_same_thread=False
            )
            index = cls(db_path, conn, Path(":memory:"))
            # A refusal names its file; other errors may not.
            where = "" if isinstance(exc, LoviaTuiError) else f"{cache_dir()}: "
            index.notice = (
                f"search index not kept ({where}{exc}); searches scan the file"
            )
            index._init_schema()
            return index

    @classmethod
    def _open_file(cls, db_path: Path) -> IndexFile:
        path = index_path(db_path)
        for _ in range(2):
            conn = connect_private(
                path,
                own_directory=True,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.text_factory = decode_text  # ids as the lovia file holds them
            conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            if _usable(conn, db_path):
                break
            conn.close()
            remove_index_files(path)
        index = cls(db_path, conn, path)
        if not _has_meta(conn):
            # Once written, a file of this version has its whole schema: a
            # search opening it takes no write lock (a build may hold one).
            index._init_schema()
        return index

    def _init_schema(self) -> None:
        with self.transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            stored, dev, ino = identity(self.db_path)
            self.conn.executemany(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                [
                    ("version", FORMAT_VERSION),
                    ("database", stored),
                    ("device", dev),
                    ("inode", ino),
                    ("entry_cap", ENTRY_CAP),
                ]
                + [(key, 1 if key == "next_key" else 0) for key in STATE_KEYS],
            )

    @contextlib.contextmanager
    def transaction(self):
        """One write transaction, taken at once (two builders never interleave)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def state(self) -> IndexState:
        rows = dict(
            self.conn.execute(
                f"SELECT key, value FROM meta WHERE key IN ({','.join('?' * len(STATE_KEYS))})",
                STATE_KEYS,
            ).fetchall()
        )
        return IndexState(**{key: int(rows.get(key, 0)) for key in STATE_KEYS})

    def save_state(self, state: IndexState) -> None:
        """Store ``state`` (inside the caller's transaction)."""
        self.conn.executemany(
            "UPDATE meta SET value = ? WHERE key = ?",
            [(getattr(state, key), key) for key in STATE_KEYS],
        )

    def size(self) -> int:
        """Bytes on disk, the index's write-ahead log included."""
        if self.notice:
            return 0
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"))
            if p.exists()
        )

    def close(self) -> None:
        self.conn.close()


def _has_meta(conn: sqlite3.Connection) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
    )


def _usable(conn: sqlite3.Connection, db_path: Path) -> bool:
    """Whether an existing index file is of this format and for this database."""
    try:
        tables = {
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if "meta" not in tables:
            return not tables  # a fresh file, or something that is not ours
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError:
        return False
    stored, dev, ino = identity(db_path)
    return (
        meta.get("version"),
        meta.get("database"),
        meta.get("device"),
        meta.get("inode"),
    ) == (
        FORMAT_VERSION,
        stored,
        dev,
        ino,
    )


def remove_index_files(path: Path) -> bool:
    """Delete an index file and its journals; whether there was one."""
    found = False
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()
            found = found or suffix == ""
    return found
