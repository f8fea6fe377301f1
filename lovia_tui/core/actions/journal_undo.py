"""Undoing one journal entry across processes: its lock, interrupted undos, the rows.

An undo holds the entry's lock (:mod:`lovia_tui.core.actions.entry_locks`)
from start to end: an entry still running in another process is waited for,
then refused with where it runs, and two undos of one entry take turns.
Before anything else, undos of the entry that were themselves interrupted
are settled from the rows (:mod:`lovia_tui.core.actions.undo_recovery`), so
the journal never lists as undoable what is already undone, nor prescribes a
"fix" that would build a transcript that never existed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from lovia_tui.core.actions.entry_locks import EntryLock, refuse_runs_in_use
from lovia_tui.core.actions.journal import (
    MOVED_ON,
    UNDO_WAIT_SECONDS,
    UNFINISHED,
    Journal,
    JournalEntry,
)
from lovia_tui.core.actions.row_undo import ChangedSinceError
from lovia_tui.core.actions.run_undo import RUN_ACTIONS, MovedOnError
from lovia_tui.core.actions.undo import (
    UndoResult,
    read_journaled,
    undo_rows,
)
from lovia_tui.core.actions.undo_recovery import UndoOutcome, undo_outcome
from lovia_tui.core.errors import ActionError
from lovia_tui.core.formatting import plural
from lovia_tui.core.store.connect import read_rows
from lovia_tui.core.store.rows import Captured, RowGroup, capture_now, identity


async def undo(
    journal: Journal,
    entry_id: int,
    open_files: Iterable[Path],
    wait: float = UNDO_WAIT_SECONDS,
) -> UndoResult:
    """Put back the rows an entry's action removed or changed, or refuse and say why.

    The one raw write lovia-tui makes: in one ``BEGIN IMMEDIATE``
    transaction per file it checks the rows the action touched are as it
    left them (an unfinished entry has nothing to check against), puts
    back the journaled rows that are missing or altered with their
    original ids, and takes out the rows the action added; rows others
    added since are kept (:mod:`lovia_tui.core.actions.row_undo`).

    The entry's lock is held throughout: an entry running in another
    process is waited for (``wait`` seconds at most), then refused with
    where it runs; two undos of one entry take turns. Interrupted undos of
    the entry are settled first (:func:`settle_undos`). The undo is
    journaled too (so it can itself be undone) and marks the entry, which
    cannot be undone twice. Only files in ``open_files`` are written.
    """
    allowed = {str(Path(f).resolve()) for f in open_files}
    return await asyncio.to_thread(undo_entry, journal, entry_id, allowed, wait)


def undo_entry(
    journal: Journal, entry_id: int, allowed: set[str], wait: float
) -> UndoResult:
    """:func:`undo` on the caller's thread."""
    lock = EntryLock.take(journal.path, entry_id, wait)
    try:
        entry = journal.get_sync(entry_id)
        if entry.action == "undo" and entry.unfinished and entry.undoes:
            entry = _settle_own(journal, entry, wait)
        elif recorded := settle_undos(journal, entry):
            return recorded
        if why := entry.undoable:
            raise ActionError(why)
        missing = [d for d in entry.databases if d not in allowed]
        if missing:
            raise ActionError(
                f"journal entry {entry.id} changed {missing[0]}, which is not open"
            )
        return _undo_rows(journal, entry)
    finally:
        lock.release(remove=True)


def _undo_rows(journal: Journal, entry: JournalEntry) -> UndoResult:
    with journal.connect() as conn:
        groups = read_journaled(conn, entry.id)
        later = _later_on_its_rows(conn, entry) if entry.unfinished else ""

    def runs_free() -> None:  # first, and again under the write lock
        refuse_runs_in_use(journal.path, [rows.group for rows, _, _ in groups])

    runs_free()
    if later:
        # Interrupted, it has no record of what it left to check against:
        # putting its rows back would undo the later action's change too.
        raise ActionError(
            f"cannot undo journal entry {entry.id} ({entry.action}): it was "
            f"interrupted, and journal entry {later} changed its rows since: "
            "undo that first"
        )

    def begin(current: Sequence[Captured], adds: Sequence[tuple[str, ...]]) -> int:
        params = {"entry": entry.id, "action": entry.action}
        subject = f"entry {entry.id} ({entry.action})"
        return journal.begin_sync(
            "undo", params, None, current, entry.id, subject, adds
        )

    def finish(
        undo_id: int,
        status: str,
        counts: dict[str, Any],
        error: str | None,
        changes: Sequence[tuple[Captured, Captured]] = (),
    ) -> None:
        journal.finish_sync(undo_id, status, counts, error, changes, undoes=entry.id)

    try:
        return undo_rows(
            entry.id, entry.action, entry.databases, entry.status in UNFINISHED,
            groups, begin, finish, runs_free,
        )  # fmt: skip
    except MovedOnError as exc:
        # Settled for good: a bare undo passes over it to the action before.
        journal.finish_sync(entry.id, MOVED_ON, {}, str(exc))
        raise ActionError(f"{exc}; it is recorded so: undo passes over it now") from exc
    except ChangedSinceError as exc:
        raise ActionError(f"{exc}{_changed_by(journal, entry.id, exc.group)}") from exc


def _later_on_its_rows(conn: Any, entry: JournalEntry) -> str:
    """The newest later entry, not undone, whose change to rows of
    ``entry``'s groups stands, as "N (action)"; "" when none does. One
    that moved on stands in no one's way: what it left is another writer's."""
    later = conn.execute(
        "SELECT DISTINCT e.id, e.action FROM groups g JOIN entries e ON e.id = g.entry_id "
        "JOIN groups mine ON mine.entry_id = ?1 AND mine.database = g.database "
        "AND mine.tbl = g.tbl AND mine.key = g.key "
        "WHERE g.entry_id > ?1 AND e.undone_by IS NULL "
        "AND e.status NOT IN ('rolled back', 'superseded', ?2) ORDER BY e.id DESC",
        (entry.id, MOVED_ON),
    ).fetchall()
    for entry_id, action in later:
        if action != "undo" or not _cancels_a_later_action(conn, entry_id, entry.id):
            return f"{entry_id} ({action})"
    return ""


def _cancels_a_later_action(conn: Any, undo_id: int, after: int) -> bool:
    """Whether an undo, through its chain of undos, takes out an action made
    after entry ``after`` (an odd number of undos down to it; an even number
    is a redo, which puts it back)."""
    hops, target = 0, undo_id
    while True:  # bounded: each entry undoes an older one
        row = conn.execute(
            "SELECT action, undoes FROM entries WHERE id = ?", (target,)
        ).fetchone()
        if row is None or row[0] != "undo" or row[1] is None:
            return target > after and hops % 2 == 1
        hops, target = hops + 1, row[1]


def _changed_by(journal: Journal, entry_id: int, group: RowGroup) -> str:
    """Which later journaled changes to the group stand in the way, if any did it."""
    with journal.connect() as conn:
        later = conn.execute(
            "SELECT e.id, e.action, e.undoes FROM groups g JOIN entries e "
            "ON e.id = g.entry_id WHERE g.database = ? AND g.tbl = ? AND g.key = ? "
            "AND g.entry_id > ? AND e.undone_by IS NULL "
            "AND e.status NOT IN ('rolled back', ?) ORDER BY e.id DESC LIMIT 3",
            (str(group.file), group.table, group.key, entry_id, MOVED_ON),
        ).fetchall()
    if later:
        named = ", ".join(
            f"{i} (undo of entry {undoes})" if action == "undo" else f"{i} ({action})"
            for i, action, undoes in later
        )
        return f"; changed since by journal entry {named}: undo that first"
    return ""


def settle_undos(journal: Journal, target: JournalEntry) -> UndoResult | None:
    """Record what became of interrupted undos of ``target`` (whose lock is held).

    Told from the rows (:func:`undo_outcome`): one that committed is
    recorded done (and returned: ``target`` is undone), one that never
    did is recorded rolled back; one killed between files stays pending
    until the next undo of ``target`` finishes the job and supersedes it.
    """
    with journal.connect() as conn:
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT id FROM entries WHERE undoes = ? AND undone_by IS NULL "
                "AND status IN ('pending', 'failed') ORDER BY id",
                (target.id,),
            )
        ]
        journaled = read_journaled(conn, target.id) if ids else []
        started = {i: read_journaled(conn, i) for i in ids}
    for undo_id in ids:
        if where := journal.running(undo_id):
            raise ActionError(
                f"an undo of journal entry {target.id} (entry {undo_id}) is "
                f"running in {where}"
            )
        began = [rows for rows, _, _ in started[undo_id]]
        now = capture_now([rows.group for rows, _, _ in journaled])
        outcome = undo_outcome(journaled, began, now)
        if outcome is UndoOutcome.COMMITTED:
            note = "interrupted after its commit; its outcome was read from the rows"
            changes = list(zip(began, now, strict=True))
            journal.finish_sync(undo_id, "done", {}, note, changes, undoes=target.id)
            return UndoResult(target.id, undo_id, 0, target.databases, recorded=True)
        if outcome is UndoOutcome.NOT_COMMITTED:
            note = "interrupted before its commit: nothing changed"
            journal.finish_sync(undo_id, "rolled back", {}, note)
    return None


def _settle_own(journal: Journal, undo: JournalEntry, wait: float) -> JournalEntry:
    """An interrupted undo asked to be undone: settle it first, under its target's lock."""
    assert undo.undoes is not None
    lock = EntryLock.take(journal.path, undo.undoes, wait)
    try:
        settle_undos(journal, journal.get_sync(undo.undoes))
    finally:
        lock.release(remove=True)
    settled = journal.get_sync(undo.id)
    if settled.unfinished:
        raise ActionError(
            f"journal entry {undo.id}, an undo of entry {undo.undoes}, was "
            f"interrupted part-way: `lovia-tui undo PATH... {undo.undoes} --yes` "
            "completes it"
        )
    return settled


SINCE_SQL = (
    "SELECT typeof(run_id), CASE WHEN typeof(run_id) IN ('text', 'blob') "
    "THEN CAST(run_id AS BLOB) ELSE run_id END FROM session_runs "
    "WHERE session_id = ? AND id > ?"
)


def stored_since(journal: Journal, entry: JournalEntry) -> list[str]:
    """What an undo of ``entry`` leaves in its sessions: the runs stored there
    since it (a chat answered after a rewind), kept after the runs it puts
    back; one sentence a session. Reads only ids (the journal's, the
    sessions'). A resume or replay journals only its own segment and puts
    back none: the session's other runs keep their order."""
    if entry.unfinished or entry.action in RUN_ACTIONS:
        return []
    with journal.connect() as conn:
        groups = conn.execute(
            "SELECT database, key, rowids_json, added_json FROM groups "
            "WHERE entry_id = ? AND tbl = 'session_runs'",
            (entry.id,),
        ).fetchall()
    said = []
    for database, key, rowids, added in groups:
        ours = set(orjson.loads(added or "[]"))
        put_back = [r for r in orjson.loads(rowids) if type(r) is int]
        if not put_back:
            continue  # a session the action made (a fork's copy): nothing put back
        last = max(put_back)
        try:
            rows = read_rows(Path(database), SINCE_SQL, (key, last))
        except sqlite3.Error:
            continue  # not readable now: the undo itself says why
        since = sum(identity(kind, value) not in ours for kind, value in rows)
        if since:
            said.append(
                f"{plural(since, 'run')} stored in session {key!r} since "
                f"{'stays' if since == 1 else 'stay'}, after the runs put back"
            )
    return said
