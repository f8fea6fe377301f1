"""The undo journal: rows exactly as stored before each action, and undo.

Before an action changes a lovia file, the rows it touches (a session's every
``session_runs`` row, a run's ``snapshot_heads``/``snapshot_turns`` rows, the
web UI's ``chat_sessions``/``chat_runs`` row) are copied here cell by cell with
their SQLite storage class, durably, so :func:`~lovia_tui.core.actions.journal_undo.undo` can put them back
byte-identical. An entry is ``pending`` until the action reports back, and
its process holds the entry's lock all that time
(:mod:`lovia_tui.core.actions.entry_locks`): pending and unlocked means
interrupted, and undoing it puts back exactly the journaled rows now missing
(:mod:`lovia_tui.core.actions.row_undo`). A fingerprint of the rows the
action left lets undo refuse when anything changed them since: restoring
would silently drop that change. An undo is journaled like an action, and an
interrupted one is settled from the rows themselves before anything else
(:mod:`lovia_tui.core.actions.undo_recovery`). The file itself:
:mod:`lovia_tui.core.actions.journal_file`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from lovia_tui.core.actions import journal_file
from lovia_tui.core.actions.actor import acted_by, who_acts
from lovia_tui.core.actions.entry_locks import EntryLock, running_in
from lovia_tui.core.actions.row_undo import after_state
from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.rows import Captured

UNDO_WAIT_SECONDS = 5.0
"""How long an undo waits for an entry still running in another process."""
UNFINISHED = ("pending", "failed")
"""Statuses of an entry whose rows' state after the action is unknown."""
MOVED_ON = "moved on"
"""An interrupted resume or replay whose run others went on with: not undoable."""
APPROVAL = "approval"
"""The action of an answer to a resumed run's approval: a record, no rows changed."""


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
    status: str  # pending | done | failed (partly committed) | rolled back | superseded
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
        why = {
            "rolled back": "changed nothing (it was rolled back)",
            "superseded": f"was an interrupted undo; {self.error}: undo that one instead",
            MOVED_ON: "was interrupted, and its run moved on since: undoing it "
            "would lose that (the files are sound as they are)",
        }.get(self.status)
        if self.action == APPROVAL:
            why = "answered an approval: it changed no rows"
        return None if why is None else f"journal entry {self.id} {why}"


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


class Journal:
    """The journal file: record actions, list them, and undo one.

    Every method runs its SQLite work in a thread, each on a short connection
    of its own, so several lovia-tui processes can share one journal. The
    entries this object began are locked until :meth:`finish` (or
    :meth:`release`, which the caller runs whatever happens).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or journal_file.journal_path()
        self._own_directory = path is None and not os.environ.get("LOVIA_TUI_JOURNAL")
        self._locks: dict[int, EntryLock] = {}

    def connect(self) -> Any:
        """A short connection to the journal file (errors: JournalError)."""
        return journal_file.connect(self.path, self._own_directory)

    def _write(self) -> Any:
        return journal_file.write(self.path, self._own_directory)

    async def begin(
        self,
        action: str,
        params: dict[str, Any],
        reason: str | None,
        captured: Sequence[Captured],
        *,
        subject: str | None = None,
        adds: Sequence[tuple[str, ...]] = (),
        files: Iterable[Path] = (),
    ) -> int:
        """Record an action about to run, with the rows it will touch as they are.

        ``adds`` names, per group, the rows it means to add (a finalize's
        segment): undoing it unfinished takes them out. ``files``: what it
        concerns beyond its groups' files (an approval touches no rows). It
        is locked by this process from before any other can see it."""
        return await asyncio.to_thread(
            self.begin_sync,
            action,
            params,
            reason,
            captured,
            None,
            subject,
            adds,
            files,
        )

    def begin_sync(
        self,
        action: str,
        params: dict[str, Any],
        reason: str | None,
        captured: Sequence[Captured],
        undoes: int | None,
        subject: str | None,
        adds: Sequence[tuple[str, ...]] = (),
        files: Iterable[Path] = (),
    ) -> int:
        """:meth:`begin` on the caller's thread (an undo, a fork under its write lock)."""
        databases = sorted(
            {str(c.group.file.resolve()) for c in captured}
            | {str(Path(f).resolve()) for f in files}
        )
        who = who_acts(explained=bool(reason) or undoes is not None)
        lock: EntryLock | None = None
        try:
            with self._write() as conn:
                entry_id = conn.execute(
                    "INSERT INTO entries (created_at, user, action, params_json, reason, "
                    "databases_json, status, undoes, subject) "
                    "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                    (time.time(), who, action, _json(params), reason,
                     _json(databases), undoes, subject),
                ).lastrowid  # fmt: skip
                assert entry_id is not None
                lock = EntryLock.take(self.path, entry_id)
                _insert_groups(conn, entry_id, captured, adds)
        except BaseException:
            if lock is not None:
                lock.release(remove=True)
            raise
        assert lock is not None
        self._locks[entry_id] = lock
        return entry_id

    async def adding(self, entry_id: int, position: int, *names: str) -> None:
        """Name a row a pending entry's action is about to add (a resumed run's
        next checkpoint batch) before it is written: undoing the entry if it
        is interrupted then takes that row out too."""

        def add() -> None:
            with self._write() as conn:
                (added,) = conn.execute(
                    "SELECT added_json FROM groups WHERE entry_id = ? AND position = ?",
                    (entry_id, position),
                ).fetchone()
                conn.execute(
                    "UPDATE groups SET added_json = ? WHERE entry_id = ? AND position = ?",
                    (_json([*orjson.loads(added or "[]"), *names]), entry_id, position),
                )

        await asyncio.to_thread(add)

    async def finish(
        self,
        entry_id: int,
        status: str,
        counts: dict[str, Any],
        error: str | None = None,
        changes: Sequence[tuple[Captured, Captured]] = (),
    ) -> None:
        """Record the outcome and, per group, (rows before, rows the action left)."""
        await asyncio.to_thread(
            self.finish_sync, entry_id, status, counts, error, changes
        )

    def finish_sync(
        self,
        entry_id: int,
        status: str,
        counts: dict[str, Any],
        error: str | None,
        changes: Sequence[tuple[Captured, Captured]] = (),
        undoes: int | None = None,
    ) -> None:
        """:meth:`finish` on the caller's thread; then the entry's lock is let go.

        A finished undo (``undoes``) marks the entry it undid in the same
        transaction, and supersedes that entry's interrupted undos: the
        journal never says one without the other.
        """
        states = [after_state(before, after) for before, after in changes]
        try:
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
                if status == "done" and undoes is not None:
                    _mark_undone(conn, undoes, entry_id)
        finally:
            self.release(entry_id)

    def release(self, entry_id: int) -> None:
        """Let go of the entry's lock if this object holds it (idempotent)."""
        if (lock := self._locks.pop(entry_id, None)) is not None:
            lock.release(remove=True)

    def running(self, entry_id: int) -> str | None:
        """ "pid N on HOST" while the entry is running in some process, else None."""
        return running_in(self.path, entry_id)

    async def entries(
        self,
        files: Iterable[Path] | None = None,
        limit: int = 100,
        *,
        readonly: bool = False,
    ) -> list[JournalEntry]:
        """The newest entries first, optionally only those touching ``files``;
        ``readonly``: through ``mode=ro``, none when there is no journal yet."""
        wanted = None if files is None else [str(Path(f).resolve()) for f in files]
        return await asyncio.to_thread(self._entries, wanted, limit, readonly)

    def _entries(
        self, files: list[str] | None, limit: int, readonly: bool = False
    ) -> list[JournalEntry]:
        if readonly:
            with journal_file.read_only(self.path) as conn:
                return [] if conn is None else select_entries(conn, files, limit)
        with self.connect() as conn:
            return select_entries(conn, files, limit)

    async def unfinished(self, files: Iterable[Path]) -> list[JournalEntry]:
        """Entries on ``files`` whose action never reported back (and not undone),
        including those running right now (see :meth:`running`).

        Reads only: no journal file is created for it.
        """
        if not self.path.exists():
            return []
        return [e for e in await self.entries(files, limit=1000) if e.unfinished]

    async def last_undoable(
        self, files: Iterable[Path], by: str | None = None
    ) -> JournalEntry | None:
        """The newest action on ``files`` not undone yet: what a bare "undo" means
        (``by``: only that person's, through serve, where several people act).

        Undo entries are skipped, so repeated undos walk back through history;
        redo is undoing an undo entry by its id.
        """
        for entry in await self.entries(files, limit=1000):
            if by is not None and not acted_by(entry.user, by):
                continue
            if entry.action != "undo" and entry.undoable is None:
                return entry
        return None

    async def get(self, entry_id: int) -> JournalEntry:
        return await asyncio.to_thread(self.get_sync, entry_id)

    def get_sync(self, entry_id: int) -> JournalEntry:
        row = None
        if 0 < entry_id < 1 << 63:  # an id SQLite can hold, else no entry has it
            with self.connect() as conn:
                row = conn.execute(
                    f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)
                ).fetchone()
        if row is None:
            raise ActionError(f"no journal entry {entry_id} in {self.path}")
        return _entry(row)


def _insert_groups(
    conn: sqlite3.Connection,
    entry_id: int,
    captured: Sequence[Captured],
    adds: Sequence[tuple[str, ...]],
) -> None:
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


def _mark_undone(conn: sqlite3.Connection, target: int, undo_id: int) -> None:
    """``target`` is undone by ``undo_id``; its interrupted undos are superseded."""
    conn.execute(
        "UPDATE entries SET undone_by = ? WHERE id = ? AND undone_by IS NULL",
        (undo_id, target),
    )
    conn.execute(
        "UPDATE entries SET status = 'superseded', error = ? WHERE undoes = ? "
        "AND id != ? AND undone_by IS NULL AND status IN ('pending', 'failed')",
        (f"entry {undo_id} completed the undo", target, undo_id),
    )


def select_entries(
    conn: sqlite3.Connection, files: list[str] | None, limit: int
) -> list[JournalEntry]:
    """The newest entries first, optionally only those touching ``files``."""
    if files is None:
        rows = conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
    else:
        marks = ",".join("?" * len(files))
        rows = conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id IN "
            f"(SELECT entry_id FROM groups WHERE database IN ({marks})) "
            f"OR (action = ? AND EXISTS (SELECT 1 FROM json_each(databases_json) "
            f"WHERE value IN ({marks}))) ORDER BY id DESC LIMIT ?",
            (*files, APPROVAL, *files, limit),
        ).fetchall()
    return [_entry(row) for row in rows]


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
