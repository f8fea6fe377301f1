"""The undo journal: rows exactly as stored before each action, and undo.

Before an action changes a lovia file, the rows it touches (a session's every
``session_runs`` row, a run's ``snapshot_heads``/``snapshot_turns`` rows, the
web UI's ``chat_sessions``/``chat_runs`` row) are copied here cell by cell with
their SQLite storage class, durably, so :meth:`Journal.undo` can put them back
byte-identical. An entry is ``pending`` until the action reports back; one
still pending later was interrupted, and undoing it puts back exactly the
journaled rows now missing (:mod:`lovia_tui.core.actions.row_undo`). A fingerprint of
the rows the action left lets undo refuse when anything changed them since:
restoring would silently drop that change.

Location: ``$LOVIA_TUI_JOURNAL`` if set, else
``$XDG_STATE_HOME/lovia-tui/journal.db`` (by default
``~/.local/state/lovia-tui/journal.db``): a SQLite file of our own, never the
user's database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from lovia_tui.core.actions.actor import who_acts
from lovia_tui.core.actions.row_undo import after_state
from lovia_tui.core.actions.undo import UndoResult, read_journaled, undo_rows
from lovia_tui.core.errors import ActionError
from lovia_tui.core.private_files import connect_private, state_dir
from lovia_tui.core.store.database import BUSY_TIMEOUT_MS
from lovia_tui.core.store.rows import Captured

_SCHEMA = """
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
# Columns a journal written by an older lovia-tui lacks: (table, column).
_ADDED_COLUMNS = (("entries", "subject"), ("groups", "added_json"))
UNFINISHED = ("pending", "failed")
"""Statuses of an entry whose rows' state after the action is unknown."""


def _migrate(conn: sqlite3.Connection) -> None:
    for table, column in _ADDED_COLUMNS:
        names = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in names:
            with contextlib.suppress(sqlite3.OperationalError):  # another process won
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


def journal_path() -> Path:
    """Where the journal lives (see the module docstring)."""
    if explicit := os.environ.get("LOVIA_TUI_JOURNAL"):
        return Path(explicit)
    return state_dir() / "journal.db"


@dataclass(frozen=True)
class JournalEntry:
    """One journaled action (or undo) with its audit record."""

    id: int
    created_at: float
    user: str
    action: str
    params: dict[str, Any]
    reason: str | None
    databases: tuple[str, ...]
    status: str  # pending | done | failed (partly committed) | rolled back
    counts: dict[str, Any]
    error: str | None
    undoes: int | None
    undone_by: int | None
    subject: str | None = None
    """What it acted on, in a few words; None in entries from older journals."""

    @property
    def unfinished(self) -> bool:
        """Interrupted: its rows may be as journaled, as the action left them, or between."""
        return self.status in UNFINISHED and self.undone_by is None

    @property
    def undoable(self) -> str | None:
        """Why this entry cannot be undone, or None when it can."""
        if self.undone_by is not None:
            return (
                f"journal entry {self.id} was already undone by entry {self.undone_by}"
            )
        if self.status == "rolled back":
            return f"journal entry {self.id} changed nothing (it was rolled back)"
        return None


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


class Journal:
    """The journal file: record actions, list them, and undo one.

    Every method runs its SQLite work in a thread, each on a short connection
    of its own, so several lovia-tui processes can share one journal.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or journal_path()
        self._own_directory = path is None and not os.environ.get("LOVIA_TUI_JOURNAL")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = connect_private(
            self.path, own_directory=self._own_directory, isolation_level=None
        )
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.executescript(_SCHEMA)
            _migrate(conn)
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One journal transaction, committed only if the block succeeds."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    async def begin(
        self,
        action: str,
        params: dict[str, Any],
        reason: str | None,
        captured: Sequence[Captured],
        *,
        subject: str | None = None,
        adds: Sequence[tuple[str, ...]] = (),
    ) -> int:
        """Record an action about to run, with the rows it will touch as they are.

        ``adds`` names, per group, the rows the action means to add (a
        finalize's segment): undoing it unfinished takes them out.
        """
        return await asyncio.to_thread(
            self._begin, action, params, reason, captured, None, subject, adds
        )

    def _begin(
        self,
        action: str,
        params: dict[str, Any],
        reason: str | None,
        captured: Sequence[Captured],
        undoes: int | None,
        subject: str | None,
        adds: Sequence[tuple[str, ...]] = (),
    ) -> int:
        databases = sorted({str(c.group.file.resolve()) for c in captured})
        who = who_acts(explained=bool(reason) or undoes is not None)
        with self._write() as conn:
            entry_id = conn.execute(
                "INSERT INTO entries (created_at, user, action, params_json, reason, "
                "databases_json, status, undoes, subject) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                (time.time(), who, action, _json(params), reason,
                 _json(databases), undoes, subject),
            ).lastrowid  # fmt: skip
            for position, item in enumerate(captured):
                added = adds[position] if position < len(adds) else ()
                conn.execute(
                    "INSERT INTO groups (entry_id, position, database, tbl, key, columns_json, "
                    "rowids_json, before_digest, added_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (entry_id, position, str(item.group.file.resolve()), item.group.table,
                     item.group.key, _json(item.columns), _json(item.rowids), item.digest,
                     _json(list(added))),
                )  # fmt: skip
                conn.executemany(
                    "INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        (entry_id, position, row_no, col_no, kind, value)
                        for row_no, row in enumerate(item.rows)
                        for col_no, (kind, value) in enumerate(row)
                    ),
                )
        assert entry_id is not None
        return entry_id

    async def finish(
        self,
        entry_id: int,
        status: str,
        counts: dict[str, Any],
        error: str | None = None,
        changes: Sequence[tuple[Captured, Captured]] = (),
    ) -> None:
        """Record the outcome and, per group, (rows before, rows the action left)."""
        await asyncio.to_thread(self._finish, entry_id, status, counts, error, changes)

    def _finish(
        self,
        entry_id: int,
        status: str,
        counts: dict[str, Any],
        error: str | None,
        changes: Sequence[tuple[Captured, Captured]] = (),
    ) -> None:
        states = [after_state(before, after) for before, after in changes]
        with self._write() as conn:
            conn.execute(
                "UPDATE entries SET status = ?, counts_json = ?, error = ? WHERE id = ?",
                (status, _json(counts), error, entry_id),
            )
            conn.executemany(
                "UPDATE groups SET after_digest = ?, added_json = ? "
                "WHERE entry_id = ? AND position = ?",
                (
                    (after, _json(list(added)), entry_id, position)
                    for position, (after, added) in enumerate(states)
                ),
            )

    async def entries(
        self, files: Iterable[Path] | None = None, limit: int = 100
    ) -> list[JournalEntry]:
        """The newest entries first, optionally only those touching ``files``."""
        wanted = None if files is None else [str(Path(f).resolve()) for f in files]
        return await asyncio.to_thread(self._entries, wanted, limit)

    def _entries(self, files: list[str] | None, limit: int) -> list[JournalEntry]:
        with self._connect() as conn:
            if files is None:
                rows = conn.execute(
                    f"SELECT {_ENTRY_COLUMNS} FROM entries ORDER BY id DESC LIMIT ?",
                    (limit,),
                ).fetchall()
            else:
                marks = ",".join("?" * len(files))
                rows = conn.execute(
                    f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id IN "
                    f"(SELECT entry_id FROM groups WHERE database IN ({marks})) "
                    "ORDER BY id DESC LIMIT ?",
                    (*files, limit),
                ).fetchall()
        return [_entry(row) for row in rows]

    async def unfinished(self, files: Iterable[Path]) -> list[JournalEntry]:
        """Entries on ``files`` whose action never reported back (and not undone).

        Reads only: no journal file is created for it.
        """
        if not self.path.exists():
            return []
        return [e for e in await self.entries(files, limit=1000) if e.unfinished]

    async def last_undoable(self, files: Iterable[Path]) -> JournalEntry | None:
        """The newest action on ``files`` not undone yet: what a bare "undo" means.

        Undo entries are skipped, so repeated undos walk back through history;
        redo is undoing an undo entry by its id.
        """
        for entry in await self.entries(files, limit=1000):
            if entry.action != "undo" and entry.undoable is None:
                return entry
        return None

    async def get(self, entry_id: int) -> JournalEntry:
        found = await asyncio.to_thread(self._get, entry_id)
        if found is None:
            raise ActionError(f"no journal entry {entry_id} in {self.path}")
        return found

    def _get(self, entry_id: int) -> JournalEntry | None:
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)
            ).fetchone()
        return _entry(row) if row else None

    async def undo(self, entry_id: int, open_files: Iterable[Path]) -> UndoResult:
        """Put back the rows an entry's action removed or changed, or refuse and say why.

        The one raw write lovia-tui makes: in one ``BEGIN IMMEDIATE``
        transaction per file it checks the rows the action touched are as it
        left them (an unfinished entry has nothing to check against), puts
        back the journaled rows that are missing or altered with their
        original ids, and takes out the rows the action added; rows others
        added since are kept (:mod:`lovia_tui.core.actions.row_undo`). The undo is
        journaled too (so it can itself be undone) and marks the entry, which
        cannot be undone twice. Only files in ``open_files`` are written.
        """
        entry = await self.get(entry_id)
        if why := entry.undoable:
            raise ActionError(why)
        allowed = {str(Path(f).resolve()) for f in open_files}
        missing = [d for d in entry.databases if d not in allowed]
        if missing:
            raise ActionError(
                f"journal entry {entry_id} changed {missing[0]}, which is not open"
            )
        return await asyncio.to_thread(self._undo, entry)

    def _undo(self, entry: JournalEntry) -> UndoResult:
        with self._connect() as conn:
            groups = read_journaled(conn, entry.id)

        def begin(current: Sequence[Captured]) -> int:
            params = {"entry": entry.id, "action": entry.action}
            subject = f"entry {entry.id} ({entry.action})"
            return self._begin("undo", params, None, current, entry.id, subject)

        result = undo_rows(
            entry.id, entry.action, entry.databases, entry.status in UNFINISHED,
            groups, begin, self._finish,
        )  # fmt: skip
        with self._connect() as conn:
            conn.execute(
                "UPDATE entries SET undone_by = ? WHERE id = ?",
                (result.undo_entry_id, entry.id),
            )
        return result


_ENTRY_COLUMNS = (
    "id, created_at, user, action, params_json, reason, databases_json, status, "
    "counts_json, error, undoes, undone_by, subject"
)


def _entry(row: Any) -> JournalEntry:
    return JournalEntry(
        id=row[0],
        created_at=row[1],
        user=row[2],
        action=row[3],
        params=orjson.loads(row[4]),
        reason=row[5],
        databases=tuple(orjson.loads(row[6])),
        status=row[7],
        counts=orjson.loads(row[8]) if row[8] else {},
        error=row[9],
        undoes=row[10],
        undone_by=row[11],
        subject=row[12],
    )
