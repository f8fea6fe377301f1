"""The undo journal: rows exactly as stored before each action, and undo.

Before an action changes a lovia file, the rows it touches (a session's every
``session_runs`` row, a run's ``snapshot_heads``/``snapshot_turns`` rows, the
web UI's ``chat_sessions``/``chat_runs`` row) are copied here cell by cell with
their SQLite storage class, so :meth:`Journal.undo` can put them back
byte-identical.
A fingerprint of the same rows right after the action lets undo refuse when
anything changed them since: restoring would silently drop that change.

Location: ``$LOVIA_TUI_JOURNAL`` if set, else
``$XDG_STATE_HOME/lovia-tui/journal.db`` (by default
``~/.local/state/lovia-tui/journal.db``): a SQLite file of our own, never the
user's database.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from lovia_tui.core.database import BUSY_TIMEOUT_MS, sqlite_uri
from lovia_tui.core.errors import ActionError
from lovia_tui.core.private_files import private_database
from lovia_tui.core.rows import Captured, Cell, RowGroup, capture_sync, restore

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
    undone_by INTEGER
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


def journal_path() -> Path:
    """Where the journal lives (see the module docstring)."""
    if explicit := os.environ.get("LOVIA_TUI_JOURNAL"):
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "lovia-tui" / "journal.db"


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
    status: str  # pending | done | failed | rolled back
    counts: dict[str, Any]
    error: str | None
    undoes: int | None
    undone_by: int | None

    @property
    def undoable(self) -> str | None:
        """Why this entry cannot be undone, or None when it can."""
        if self.undone_by is not None:
            return (
                f"journal entry {self.id} was already undone by entry {self.undone_by}"
            )
        if self.status == "rolled back":
            return f"journal entry {self.id} changed nothing (it was rolled back)"
        if self.status == "pending":
            return f"journal entry {self.id} never finished: its rows' state after it is unknown"
        return None


@dataclass(frozen=True)
class UndoResult:
    """What an undo restored, and the journal entry recording the undo itself."""

    entry_id: int
    undo_entry_id: int
    rows_restored: int
    databases: tuple[str, ...]


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


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
        private_database(self.path, own_directory=self._own_directory)
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.executescript(_SCHEMA)
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
    ) -> int:
        """Record an action about to run, with the rows it will touch as they are."""
        return await asyncio.to_thread(
            self._begin, action, params, reason, captured, None
        )

    def _begin(
        self,
        action: str,
        params: dict[str, Any],
        reason: str | None,
        captured: Sequence[Captured],
        undoes: int | None,
    ) -> int:
        databases = sorted({str(c.group.file.resolve()) for c in captured})
        with self._write() as conn:
            entry_id = conn.execute(
                "INSERT INTO entries (created_at, user, action, params_json, reason, "
                "databases_json, status, undoes) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
                (
                    time.time(),
                    _os_user(),
                    action,
                    _json(params),
                    reason,
                    _json(databases),
                    undoes,
                ),
            ).lastrowid
            for position, item in enumerate(captured):
                conn.execute(
                    "INSERT INTO groups (entry_id, position, database, tbl, key, columns_json, "
                    "rowids_json, before_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (entry_id, position, str(item.group.file.resolve()), item.group.table,
                     item.group.key, _json(item.columns), _json(item.rowids), item.digest),
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
        after: Sequence[Captured],
        counts: dict[str, Any],
        error: str | None = None,
    ) -> None:
        """Record the outcome, and each row group's digest right after the action."""
        status = "failed" if error else "done"
        digests = [captured.digest for captured in after]
        await asyncio.to_thread(self._finish, entry_id, status, digests, counts, error)

    def _finish(
        self,
        entry_id: int,
        status: str,
        after: Sequence[str],
        counts: dict[str, Any],
        error: str | None,
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE entries SET status = ?, counts_json = ?, error = ? WHERE id = ?",
                (status, _json(counts), error, entry_id),
            )
            conn.executemany(
                "UPDATE groups SET after_digest = ? WHERE entry_id = ? AND position = ?",
                ((value, entry_id, position) for position, value in enumerate(after)),
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
        """Put an entry's rows back exactly as they were, or refuse and say why.

        The one raw write lovia-tui makes: in one ``BEGIN IMMEDIATE``
        transaction per file it checks the rows still match the fingerprint
        taken right after the action, deletes them and re-inserts the
        journaled ones with their original ids. The undo is journaled too (so
        it can itself be undone) and marks the entry, which cannot be undone
        twice. Only files in ``open_files`` are written.
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
            groups = self._journaled(conn, entry.id)
        connections: dict[str, sqlite3.Connection] = {}
        undo_id: int | None = None
        try:
            for database in entry.databases:
                conn = sqlite3.connect(
                    sqlite_uri(Path(database), "rw"), uri=True, isolation_level=None
                )
                connections[database] = conn
                conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                conn.execute("BEGIN IMMEDIATE")
            current = [
                _unchanged(connections[str(rows.group.file)], rows, after, entry)
                for rows, after in groups
            ]
            params = {"entry": entry.id, "action": entry.action}
            undo_id = self._begin("undo", params, None, current, entry.id)
            restored, digests = 0, []
            for rows, _ in groups:
                conn = connections[str(rows.group.file)]
                restored += restore(conn, rows)
                digests.append(capture_sync(conn, rows.group).digest)
                if digests[-1] != rows.digest:
                    raise ActionError(
                        f"undo of journal entry {entry.id} did not reproduce the "
                        f"{rows.group.table} rows for {rows.group.key!r}; nothing changed"
                    )
            for conn in connections.values():
                conn.execute("COMMIT")
        except BaseException as exc:
            for conn in connections.values():
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            if undo_id is not None:
                self._finish(undo_id, "rolled back", [], {}, str(exc))
            raise
        finally:
            for conn in connections.values():
                conn.close()
        self._finish(undo_id, "done", digests, {"rows_restored": restored}, None)
        with self._connect() as conn:
            conn.execute(
                "UPDATE entries SET undone_by = ? WHERE id = ?", (undo_id, entry.id)
            )
        return UndoResult(entry.id, undo_id, restored, entry.databases)

    def _journaled(
        self, conn: sqlite3.Connection, entry_id: int
    ) -> list[tuple[Captured, str | None]]:
        """An entry's journaled rows and each group's digest right after the action."""
        groups = []
        for (
            position,
            database,
            table,
            key,
            columns_json,
            rowids,
            before,
            after,
        ) in conn.execute(
            "SELECT position, database, tbl, key, columns_json, rowids_json, before_digest, "
            "after_digest FROM groups WHERE entry_id = ? ORDER BY position",
            (entry_id,),
        ).fetchall():
            columns = tuple(orjson.loads(columns_json))
            rows: dict[int, list[Cell]] = {}
            for row_no, kind, value in conn.execute(
                "SELECT row_no, type, value FROM cells WHERE entry_id = ? AND position = ? "
                "ORDER BY row_no, col_no",
                (entry_id, position),
            ):
                rows.setdefault(row_no, []).append((kind, value))
            group = RowGroup(Path(database), table, key)
            cells = tuple(tuple(r) for r in rows.values())
            groups.append(
                (
                    Captured(
                        group, columns, cells, tuple(orjson.loads(rowids)), before
                    ),
                    after,
                )
            )
        return groups


_ENTRY_COLUMNS = (
    "id, created_at, user, action, params_json, reason, databases_json, status, "
    "counts_json, error, undoes, undone_by"
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
    )


def _unchanged(
    conn: sqlite3.Connection,
    journaled: Captured,
    after: str | None,
    entry: JournalEntry,
) -> Captured:
    """The group's current rows, provided they are what the action left behind."""
    now = capture_sync(conn, journaled.group)
    if after is None or now.digest != after:
        raise ActionError(
            f"cannot undo journal entry {entry.id}: the {journaled.group.table} rows "
            f"for {journaled.group.key!r} changed since the {entry.action}; "
            "undoing would lose that change"
        )
    return now
