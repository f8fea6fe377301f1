"""The doctor's pass over every checkpoint batch: the runs lovia cannot load.

A fleet's file holds a million batches, and parsing them all is seconds of
one core's work (the parse holds the GIL, so a second thread does not help).
Past ``SPLIT_ABOVE`` rowids the pass is split at the middle one: a second
process (``python -m lovia_tui.core.doctor.batch_scan URI AFTER UNTIL``)
checks the upper half on the machine's other core while this one checks the
lower half. It prints only the rowids of what it found (each run's first
unreadable batch); they are read again here and checked as the rest are, so
what is reported is the row as it is now. A child that fails leaves its half
to this process, which reads it and meets any error itself.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from lovia_tui.core.entries import UnreadableError, parse_entries, parse_stored
from lovia_tui.core.models import Unreadable
from lovia_tui.core.store.connect import BUSY_TIMEOUT_MS, fetchall_decoded, sqlite_uri
from lovia_tui.core.store.database import Database, in_thread
from lovia_tui.core.stored import stored_key, stored_number

if TYPE_CHECKING:
    from lovia_tui.core.doctor.findings import Progress

FIRST_ROWS = 64
MAX_ROWS = 2_000
GROUP_BYTES = 4 << 20
"""Stored bytes read and parsed together: whole rows up to this weight."""
SCAN_ROWS = 20_000
"""Batches a thread reads and checks before it reports back: a statement's
read and its parse handed between two threads took 3.9 s at a million
batches, the same work in one thread 2.9 s (the parse holds the GIL)."""
SPLIT_ABOVE = 200_000
"""Rowids past which a second process checks half: below, starting it
(~60 ms) costs more than it saves."""
MOST_UNREADABLE = 10_000
"""Runs with an unreadable batch held by name; past it a hostile file's runs
are each read again by run id instead (slower, never unbounded)."""

BOTTOM, TOP = -(1 << 63), (1 << 63) - 1
"""SQLite's lowest and highest rowid."""

Fetch = Callable[[sqlite3.Connection, str, tuple[Any, ...]], list[Any]]
Bad = tuple[int, Any, Any, str]
"""An unreadable batch: (rowid, run id as stored, seq as stored, why)."""

_BATCHES = (
    "SELECT rowid, run_id, seq, CAST(entries_json AS BLOB) FROM snapshot_turns "
    "WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?"
)


def next_size(size: int, rows: int, weight: int) -> int:
    """Rows for the next statement: about ``GROUP_BYTES`` at the weight just seen."""
    return max(1, min(MAX_ROWS, 2 * size, int(GROUP_BYTES * rows / max(1, weight))))


def seq_order(seq: Any) -> tuple[bool, float]:
    """A batch's place among a run's: by number; a seq that is none (never
    from lovia) after them."""
    number = stored_number(seq)
    return number is None, number or 0


def unreadable_batch(
    db: Database, run_id: str, seq: Any, exc: UnreadableError | str
) -> Unreadable:
    return Unreadable(f"{db.name} snapshot_turns run {run_id} seq {seq}", str(exc))


def _check(rows: list[Any]) -> list[Bad]:
    """The batches among these that lovia cannot load."""
    bad = []
    for rowid, stored, seq, raw in rows:
        try:
            parse_stored(parse_entries, raw)
        except UnreadableError as exc:
            bad.append((rowid, stored, seq, str(exc)))
    return bad


@dataclass
class _Scan:
    """Where a pass over the batches with rowids in ``(after, until]`` is:
    the next statement ``size`` rows, ``done`` at ``until``."""

    after: int
    until: int
    size: int = FIRST_ROWS
    done: bool = False

    def step(self, fetch: Fetch, conn: sqlite3.Connection) -> list[Bad]:
        """The next ``SCAN_ROWS`` or so batches, read statement by statement
        and checked. Blocking."""
        bad: list[Bad] = []
        read = 0
        while read < SCAN_ROWS:
            rows = fetch(conn, _BATCHES, (self.after, self.until, self.size))
            if not rows:
                self.done = True
                break
            weight = sum(len(row[3] or b"") for row in rows)
            self.after, read = rows[-1][0], read + len(rows)
            self.size = next_size(self.size, len(rows), weight)
            bad += _check(rows)
        return bad


class _FirstPerRun:
    """Each run's first unreadable batch (rowid order is not seq order)."""

    def __init__(self) -> None:
        self.runs: dict[Any, tuple[tuple[bool, float], Bad]] = {}

    def add(self, found: list[Bad]) -> None:
        for bad in found:
            run_id, order = stored_key(bad[1]), seq_order(bad[2])
            if run_id not in self.runs or order < self.runs[run_id][0]:
                self.runs[run_id] = (order, bad)

    @property
    def too_many(self) -> bool:
        return len(self.runs) > MOST_UNREADABLE


async def unreadable_batches(
    db: Database, progress: Progress
) -> dict[str, Unreadable] | None:
    """The runs with a batch lovia cannot load, each with its first such
    batch, from one pass over every batch in rowid order; None when more
    than ``MOST_UNREADABLE`` runs have one."""

    first, last = await db.fetchrow(
        "SELECT COALESCE(MIN(rowid), 0), COALESCE(MAX(rowid), 0) FROM snapshot_turns"
    )

    def report(start: int, scan: _Scan) -> None:
        start, end = max(start, first), min(scan.until, last)
        share = (scan.after - start) / max(1, end - start)
        progress(f"checkpoint batches in {db.name}", max(0.0, min(1.0, share)))

    # The upper half is open-ended: batches saved meanwhile are read too.
    middle = first + (last - first) // 2 if last - first > SPLIT_ABOVE else TOP
    child = await _start_child(db, middle, TOP) if middle < TOP else None
    found = _FirstPerRun()
    conn = db.thread_connection()
    try:
        await _scan_here(db, conn, _Scan(BOTTOM, middle), found, report)
        if middle < TOP and not found.too_many:
            try:
                rowids = await _child_rowids(child)
            except _ChildFailed:
                await _scan_here(db, conn, _Scan(middle, TOP), found, report)
            else:
                if rowids is None:
                    return None
                found.add(await _read_again(db, conn, rowids))
    finally:
        conn.close()
        if child is not None and child.returncode is None:
            child.kill()
            await child.wait()
    if found.too_many:
        return None
    return {
        run_id: unreadable_batch(db, run_id, seq, why)
        for run_id, (_, (_, _, seq, why)) in found.runs.items()
    }


async def _scan_here(
    db: Database,
    conn: sqlite3.Connection,
    scan: _Scan,
    found: _FirstPerRun,
    report: Callable[[int, _Scan], None],
) -> None:
    """``scan`` in a thread of this process on ``conn``."""
    start = scan.after
    while not scan.done and not found.too_many:
        found.add(await in_thread(scan.step, db.fetchall_in_thread, conn))
        report(start, scan)


async def _read_again(
    db: Database, conn: sqlite3.Connection, rowids: list[int]
) -> list[Bad]:
    """The batches at ``rowids``, read and checked here."""
    bad: list[Bad] = []
    for at in range(0, len(rowids), 500):
        chunk = tuple(rowids[at : at + 500])
        sql = (
            "SELECT rowid, run_id, seq, CAST(entries_json AS BLOB) FROM snapshot_turns "
            f"WHERE rowid IN ({','.join('?' * len(chunk))})"
        )
        rows = await asyncio.to_thread(db.fetchall_in_thread, conn, sql, chunk)
        bad += _check(rows)
    return bad


async def _start_child(
    db: Database, after: int, until: int
) -> asyncio.subprocess.Process | None:
    """The second process, on the batches in ``(after, until]``; None if it
    cannot start (the half is then read here)."""
    uri = sqlite_uri(db.path, "ro", immutable=db.immutable)
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", __name__, uri, str(after), str(until),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
    except OSError:
        return None


class _ChildFailed(Exception):
    """The second process did not finish its half (or never started)."""


async def _child_rowids(child: asyncio.subprocess.Process | None) -> list[int] | None:
    """The rowids the child found; None for more than ``MOST_UNREADABLE`` runs."""
    if child is None:
        raise _ChildFailed
    out, _ = await child.communicate()
    try:
        rowids = orjson.loads(out)
    except orjson.JSONDecodeError:
        raise _ChildFailed from None
    if child.returncode != 0 or not (
        rowids is None
        or (isinstance(rowids, list) and all(type(r) is int for r in rowids))
    ):
        raise _ChildFailed
    return rowids


def _child(uri: str, after: int, until: int) -> None:
    """The second process: scan ``(after, until]`` and print the rowids."""
    conn = sqlite3.connect(
        uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
    )
    scan, found = _Scan(after, until), _FirstPerRun()
    while not scan.done and not found.too_many:
        found.add(scan.step(fetchall_decoded, conn))
    conn.close()
    rowids = None if found.too_many else [bad[0] for _, bad in found.runs.values()]
    sys.stdout.buffer.write(orjson.dumps(rowids))


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
