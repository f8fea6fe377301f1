"""The write lock an action holds on its files, from its check to its commit.

:func:`held_write` takes a write transaction on each file an action touches,
in path order, and makes it start from the action's check: the check's own
read becomes the write transaction when nobody committed since, and is run
again under the lock when someone did. lovia's methods run on those
connections (:mod:`~lovia_tui.core.actions.locked_stores`), and an undo's
exact restore.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from lovia_tui.core.actions.gc_pause import collection_paused
from lovia_tui.core.actions.locked_stores import HeldConnection, open_held
from lovia_tui.core.actions.triggers import refuse_own_schema
from lovia_tui.core.errors import ActionError
from lovia_tui.core.formatting import plural
from lovia_tui.core.store.rows import TABLES

UPGRADE_SECONDS = 0.5
"""How long an action's check keeps reading before it waits for the lock the
plain way: each read becomes the lock if nobody committed while it ran.
Beside a lovia writer committing every 20 ms, a read of a 5,000-run session
was overtaken about half the time; checked under the lock instead, the
action held the writer off 55-70 ms, not 25-35."""


class PartlyCommitted(ActionError):
    """Some files committed, a later one failed: the action is half done."""


@contextlib.contextmanager
def held_write(
    files: Iterable[Path],
    check: Callable[[dict[Path, HeldConnection]], object] | None = None,
    stage: Callable[[dict[Path, HeldConnection]], object] | None = None,
) -> Iterator[dict[Path, HeldConnection]]:
    """A write transaction on each file for the block, committed when it succeeds.

    Taken in path order, so two lovia-tui processes never deadlock; lovia's
    writers only wait (their busy timeout is 5 s). A file with triggers on
    lovia's tables is refused (:mod:`~lovia_tui.core.actions.triggers`). If the block raises,
    everything is rolled back. If a commit fails after another file's
    succeeded, :class:`PartlyCommitted` says so.

    ``check`` (which raises to refuse) holds when the block starts. It runs
    first in a read transaction on each file, which then becomes the write
    transaction if SQLite allows it: nobody committed since, and nobody holds
    the lock (:func:`_upgraded`). Otherwise the lock is taken the plain way
    and ``check`` runs again under it (through SQLite's memory map of the
    file: another process's commit empties a connection's page cache). A
    quiet file is checked without holding anyone up. ``stage`` runs first,
    on the opened connections and outside any transaction: what the check
    needs on them (:func:`~lovia_tui.core.store.row_check.stage`).
    """
    held: dict[Path, HeldConnection] = {}
    with collection_paused():
        try:
            for path in sorted({Path(f).resolve() for f in set(files)}):
                held[path] = open_held(path)
            if stage is not None:
                stage(held)
            if check is None or not _upgraded(held, check):
                for path, conn in held.items():
                    conn.execute("BEGIN IMMEDIATE")
                    conn.locked_at = time.perf_counter()
                    refuse_own_schema(conn, path)
                if check is not None:
                    check(held)
            yield held
            _commit(held)
        finally:
            for conn in held.values():
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                conn.close()


def locked_since(held: dict[Path, HeldConnection]) -> float:
    """When the first of the files was locked (``time.perf_counter()``)."""
    return min(conn.locked_at for conn in held.values())


def _upgraded(
    held: dict[Path, HeldConnection],
    check: Callable[[dict[Path, HeldConnection]], object],
) -> bool:
    """:func:`_read_becomes_lock`, again until it does or
    :data:`UPGRADE_SECONDS` passed."""
    deadline = time.monotonic() + UPGRADE_SECONDS
    while not _read_becomes_lock(held, check):
        if time.monotonic() >= deadline:
            return False
    return True


def _read_becomes_lock(
    held: dict[Path, HeldConnection],
    check: Callable[[dict[Path, HeldConnection]], object],
) -> bool:
    """``check`` in a read transaction on each file, then those made the write
    transactions, in path order; False (all rolled back) where SQLite refused:
    someone committed since the read began (``SQLITE_BUSY_SNAPSHOT``), or
    holds the lock (``SQLITE_BUSY``, at once: no wait while we hold a read).
    What ``check`` raises ends the block with no lock taken."""
    for path, conn in held.items():
        conn.execute("BEGIN")
        refuse_own_schema(conn, path)  # first: an odd table fails ``check`` unexplained
    check(held)
    try:
        for path, conn in held.items():
            table = _a_lovia_table(conn, path)
            conn.execute(f'DELETE FROM "{table}" WHERE 0')  # takes the write lock
            conn.locked_at = time.perf_counter()
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_BUSY:
            raise
        for conn in held.values():
            conn.execute("ROLLBACK")
        return False
    return True


def _a_lovia_table(conn: sqlite3.Connection, path: Path) -> str:
    """A table of lovia's in the file, for a statement that writes nothing
    (asked for by name: no other name in the file is read, whatever bytes)."""
    found = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND lower(name) IN "
        f"({', '.join('?' * len(TABLES))}) LIMIT 1",
        list(TABLES),
    ).fetchone()
    if found is None:
        raise ActionError(f"{path}: none of lovia's tables is there to act on")
    return str(found[0])


def _commit(held: dict[Path, HeldConnection]) -> None:
    for committed, conn in enumerate(held.values()):
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if committed:
                raise PartlyCommitted(
                    f"{conn.path}: commit failed ({exc}) after "
                    f"{plural(committed, 'other file')} committed"
                ) from exc
            raise
