"""How a journaled resume or replay starts: under one write lock on the run's
checkpoint file, from its check to its claim.

Another process may have touched the run since the preflight: an action
(delete, finalize) or another lovia-tui resuming it, whose journal, and so
whose run lock, may not be ours (another OS user's). Under the write lock the
run's head is read again and must be the preflight's; its rows are journaled;
then a crashed run (its head says running) is claimed: lovia's checkpointer
saves its head again, stamped now, so any other lovia-tui finds it live from
this moment and refuses to act on it unless forced. lovia would save the same
head at the run's first save, after the dangling calls ran: the seconds the
run was open to a second resume. The journal holds the head as it was: undo
puts it back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.locked_stores import HeldConnection, open_held
from lovia_tui.core.actions.row_undo import only_rows
from lovia_tui.core.actions.triggers import refuse_own_schema
from lovia_tui.core.errors import ActionError
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.store.connect import write_connection
from lovia_tui.core.store.rows import Captured, RowGroup, capture_now, identity

if TYPE_CHECKING:
    from lovia_tui.core.runs.preflight import Preflight


def start_entry(
    journal: Journal, pf: Preflight, groups: list[RowGroup], reason: str | None
) -> tuple[int, list[Captured]]:
    """The run's journal entry begun and the run claimed (see the module);
    ActionError, with nothing changed or journaled, when it cannot start."""
    checkpoint = Path(pf.checkpoint_file).resolve()
    for path in sorted({Path(g.file).resolve() for g in groups} - {checkpoint}):
        _after_actions(path)
    held = open_held(checkpoint)
    _begin_locked(held, checkpoint)
    try:
        _as_preflighted(held, pf)
        before = [
            # The session's other runs stay out: others may append them.
            only_rows(rows, [identity("text", pf.run.run_id.encode())])
            if rows.group.table == "session_runs"
            else rows
            for rows in capture_now(groups)  # other connections: not the claim
        ]
        run = pf.run.run_id
        entry_id = journal.begin_sync(
            pf.mode,
            {"run_id": run, "session_id": pf.session_id, "file": str(pf.checkpoint_file),
             "delete_on_success": pf.delete_on_success},
            reason, before, None, f"run {run!r}",
        )  # fmt: skip
        try:
            if pf.mode == "resume" and pf.run.status == RunStatus.RUNNING:
                _claim(held, pf)
            held.execute("COMMIT")
        except BaseException as exc:
            journal.finish_sync(entry_id, "rolled back", {}, str(exc) or "not started")
            journal.release(entry_id)
            raise
    finally:
        if held.in_transaction:
            held.execute("ROLLBACK")
        held.close()
    return entry_id, before


def _after_actions(path: Path) -> None:
    """Wait for an action holding the file's write lock to commit, and refuse
    a file with triggers of its own (they would change rows no entry holds).

    An action that found this run free before its lock was taken
    (:func:`~lovia_tui.core.actions.entry_locks.refuse_runs_in_use`) looked
    under that write lock: once it is let go, the capture and lovia's load
    of the run see what the action left."""
    conn = write_connection(path)
    _begin_locked(conn, path)
    try:
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def _begin_locked(conn: sqlite3.Connection, path: Path) -> None:
    """A write transaction on ``path`` (waiting for another's to end), its
    own triggers refused; ``conn`` closed if not."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        refuse_own_schema(conn, path)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise ActionError(f"{path}: {exc}; the run did not start") from exc
    except BaseException:
        conn.close()
        raise


def _as_preflighted(held: sqlite3.Connection, pf: Preflight) -> None:
    """Refuse when the run's head is no longer the one the preflight read."""
    run = pf.run.run_id
    row = held.execute(
        "SELECT head_json FROM snapshot_heads WHERE run_id = ?", (run,)
    ).fetchone()
    if row is None:
        raise ActionError(
            f"run {run!r}'s checkpoint is gone since its preflight (another "
            "action settled it): the run did not start"
        )
    try:
        same = orjson.loads(row[0]) == pf.run.head
    except orjson.JSONDecodeError:
        same = False
    if not same:
        raise ActionError(
            f"run {run!r} was saved since its preflight: another process may be "
            "running it; the run did not start (check again)"
        )


def _claim(held: HeldConnection, pf: Preflight) -> None:
    """lovia's checkpointer saves the run's head again, stamped now."""
    from lovia import RunHead

    from lovia_tui.core.actions.locked_stores import LockedCheckpointer

    try:
        head = RunHead.from_dict(pf.run.head)
    except (KeyError, TypeError, ValueError) as exc:
        raise ActionError(f"run {pf.run.run_id!r}'s head does not load: {exc}") from exc
    head = dataclasses.replace(head, updated_at=time.time())
    asyncio.run(LockedCheckpointer(held).append(pf.run.run_id, [], head))
