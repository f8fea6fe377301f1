"""The journal's own SQLite file: where it lives, its tables, and errors that name it.

Location: ``$LOVIA_TUI_JOURNAL`` if set, else
``$XDG_STATE_HOME/lovia-tui/journal.db`` (by default
``~/.local/state/lovia-tui/journal.db``): a file of our own, never the user's
database. Every failure on it is a :class:`JournalError` that names the file
and the cause in words (disk full, not a database, permission), so a
damaged journal is told apart from a damaged lovia file, and whoever only
reads a lovia file can carry on without it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from lovia_tui.core.errors import ActionError
from lovia_tui.core.private_files import connect_private, state_dir
from lovia_tui.core.store.connect import BUSY_TIMEOUT_MS

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    user TEXT NOT NULL,
    action TEXT NOT NULL,
    params_json TEXT NOT NULL,
    reason TEXT,
    databases_json TEXT NOT NULL,
    status TEXT NOT NULL,
    counts_json TEXT,
    error TEXT,
    undoes INTEGER,
    undone_by INTEGER,
    subject TEXT
);
CREATE TABLE IF NOT EXISTS groups (
    entry_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    database TEXT NOT NULL,
    tbl TEXT NOT NULL,
    key TEXT NOT NULL,
    columns_json TEXT NOT NULL,
    rowids_json TEXT NOT NULL,
    before_digest TEXT NOT NULL,
    after_digest TEXT,
    added_json TEXT,
    PRIMARY KEY (entry_id, position)
);
CREATE INDEX IF NOT EXISTS idx_groups_database ON groups(database, entry_id);
CREATE TABLE IF NOT EXISTS cells (
    entry_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    row_no INTEGER NOT NULL,
    col_no INTEGER NOT NULL,
    type TEXT NOT NULL,
    value,
    PRIMARY KEY (entry_id, position, row_no, col_no)
);
"""
TABLES = frozenset({"entries", "groups", "cells"})
"""The journal's tables: a file holding another is not a journal (a lovia
database given as ``$LOVIA_TUI_JOURNAL`` by mistake) and is left untouched."""
# Columns a journal written by an older lovia-tui lacks: (table, column).
_ADDED_COLUMNS = (("entries", "subject"), ("groups", "added_json"))
JOURNAL_FORMAT = 1
"""The journal's format, kept as its ``PRAGMA user_version`` (0: written
before it was kept). Bumped when an entry holds what an older lovia-tui
would not put back (as ``added_json`` once did): a copy that finds a newer
format refuses the journal rather than undo half of an entry."""

SIZE_NOTE_MB = 256
"""Past this size (``$LOVIA_TUI_JOURNAL_NOTE_MB`` overrides it) actions and
``journal`` say how to prune the journal."""

_CAUSES = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_NOTADB": "it is not a SQLite database (damaged, or another program's file)",
    "SQLITE_CORRUPT": "it is damaged (database disk image is malformed)",
    "SQLITE_READONLY": "it cannot be written (read-only file or directory)",
    "SQLITE_CANTOPEN": "it cannot be opened (missing directory or no permission)",
    "SQLITE_PERM": "permission denied",
    "SQLITE_BUSY": "another process kept it locked for too long",
}


class JournalError(ActionError):
    """The journal file could not be read or written; the message names it and why."""


def journal_path() -> Path:
    """Where the journal lives (see the module docstring)."""
    if explicit := os.environ.get("LOVIA_TUI_JOURNAL"):
        return Path(explicit)
    return state_dir() / "journal.db"


def sqlite_cause(exc: sqlite3.Error | OSError) -> str:
    """What went wrong with a file, in words (SQLite's error names are terse)."""
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_IOERR"):
        return f"it could not be read or written ({exc}: is the disk full?)"
    return _CAUSES.get(name) or str(exc)


def journal_error(path: Path, exc: sqlite3.Error | OSError) -> JournalError:
    """``exc`` as one line: which file, and the cause in words."""
    cause = sqlite_cause(exc)
    hint = (
        "; move it aside to start a new journal (its entries cannot be undone then)"
        if "not a SQLite database" in cause or "damaged" in cause
        else ""
    )
    return JournalError(f"the undo journal {path}: {cause}{hint}")


def _ready(conn: sqlite3.Connection, path: Path) -> None:
    """The journal's tables, brought up to :data:`JOURNAL_FORMAT`; a journal of
    a newer format is refused before anything in it changes."""
    (found,) = conn.execute("PRAGMA user_version").fetchone()
    if found > JOURNAL_FORMAT:
        raise JournalError(
            f"the undo journal {path} was written by a newer lovia-tui (format "
            f"{found}; this one knows {JOURNAL_FORMAT}): its entries may hold what "
            "this one cannot put back; upgrade lovia-tui, or set $LOVIA_TUI_JOURNAL "
            "to start another journal"
        )
    conn.executescript(SCHEMA)
    for table, column in _ADDED_COLUMNS:
        names = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in names:
            with contextlib.suppress(sqlite3.OperationalError):  # another process won
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
    if found < JOURNAL_FORMAT:
        conn.execute(f"PRAGMA user_version = {JOURNAL_FORMAT}")


@contextlib.contextmanager
def connect(path: Path, own_directory: bool) -> Iterator[sqlite3.Connection]:
    """A short connection to the journal (created private if missing).

    Any SQLite or OS error inside the block becomes a :class:`JournalError`.
    """
    try:
        conn = connect_private(
            path, own_directory=own_directory, tables=TABLES, isolation_level=None
        )
    except (sqlite3.Error, OSError) as exc:
        raise journal_error(path, exc) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        _ready(conn, path)
        yield conn
    except (sqlite3.Error, OSError) as exc:
        raise journal_error(path, exc) from exc
    finally:
        conn.close()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection | None]:
    """A ``mode=ro`` connection to the journal, or None when there is no journal
    yet: nothing is created, migrated or written (``journal --readonly``)."""
    if not path.exists():
        yield None
        return
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise journal_error(path, exc) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        yield conn
    except sqlite3.Error as exc:
        raise journal_error(path, exc) from exc
    finally:
        conn.close()


@contextlib.contextmanager
def write(path: Path, own_directory: bool) -> Iterator[sqlite3.Connection]:
    """One journal transaction, committed only if the block succeeds.

    SQLite rolls a transaction back by itself on some errors (a full disk):
    then there is nothing left to roll back, and the first error is the one
    reported.
    """
    with connect(path, own_directory) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def size_note(path: Path) -> str | None:
    """A sentence on pruning once the journal is larger than the threshold."""
    limit = float(os.environ.get("LOVIA_TUI_JOURNAL_NOTE_MB") or SIZE_NOTE_MB)
    try:
        size = os.stat(path).st_size  # stat only: SQLite may hold the file
    except OSError:
        return None
    if size <= limit * 1024 * 1024:
        return None
    return (
        f"the undo journal {path} holds {size / 1024 / 1024:,.0f} MB: "
        "`lovia-tui journal --prune --older-than 30` shows which settled entries "
        "older than 30 days it would remove"
    )
