"""How the doctor reads a file's checkpoints: in the tables' own order, in bounded memory.

A worker fleet's file holds a million checkpoints. Reading each run's
batches by its run id is a seek per run (8x a sequential read), so the
doctor reads them in two passes of rowid order, each read and parsed in a
thread on a connection of its own (only what it found crosses back): every
batch once (:func:`unreadable_batches` keeps the few runs whose batches
lovia cannot load), then the heads (:func:`head_pages` sorts out the
completed ones that load). Only the runs that can yield a finding have
their entries read again by run id (:func:`loaded`), a few per cent of a
fleet's. Statements are sized to about ``GROUP_BYTES`` from what the one
before weighed; each is short, so no read holds a writer up for long.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia_tui.core.doctor.findings import Progress
from lovia_tui.core.entries import UnreadableError, parse_entries, parse_stored
from lovia_tui.core.models import SessionLink, Unreadable
from lovia_tui.core.store.checkpoint_reads import head_completed
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import stored_key, stored_number

HEAD_PAGE = 5_000
"""Heads a page: one statement of ~10 ms at a fleet's 1M heads."""
GROUP_BYTES = 4 << 20
"""Stored bytes read and parsed together: whole rows (and runs) up to this weight."""
FIRST_ROWS = 64
MAX_ROWS = 2_000
MOST_UNREADABLE = 10_000
"""Runs with an unreadable batch held by name; past it a hostile file's runs
are each read again by run id instead (slower, never unbounded)."""


@dataclass
class Loaded:
    """A checkpoint's own entries, or the first of its batches that is unreadable."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    problem: Unreadable | None = None
    count: int = 0
    last_seq: int | None = None


def _next_size(size: int, rows: int, weight: int) -> int:
    """Rows for the next statement: about ``GROUP_BYTES`` at the weight just seen."""
    return max(1, min(MAX_ROWS, 2 * size, int(GROUP_BYTES * rows / max(1, weight))))


def _problem(db: Database, run_id: str, seq: int, exc: UnreadableError) -> Unreadable:
    return Unreadable(f"{db.name} snapshot_turns run {run_id} seq {seq}", str(exc))


def _parse_turns(db: Database, run_id: str, turns: list[tuple[int, bytes]]) -> Loaded:
    """A checkpoint's batches in seq order, as ``snapshot_entries`` reads them."""
    loaded = Loaded()
    for seq, raw in turns:
        loaded.last_seq = seq
        try:
            entries = parse_stored(parse_entries, raw)
        except UnreadableError as exc:
            loaded.problem = loaded.problem or _problem(db, run_id, seq, exc)
            continue
        loaded.entries += entries
        loaded.count += len(entries)
    return loaded


Reader = Callable[[int], Awaitable[tuple[int, list[Any]]]]
"""Reads about ``count`` items on from where it stopped: (items consumed, rows); 0 at the end."""


async def _pipelined(
    read: Reader, weigh: Callable[[list[Any]], int]
) -> AsyncIterator[list[Any]]:
    """The rows of ``read`` until it consumes nothing, each statement sized
    by the weight of the one before and started before the caller handles
    the rows it has."""
    size = FIRST_ROWS
    reading: asyncio.Future[tuple[int, list[Any]]] | None = asyncio.ensure_future(
        read(size)
    )
    try:
        while reading is not None:
            consumed, rows = await reading
            if not consumed:
                return
            size = _next_size(size, consumed, weigh(rows))
            reading = asyncio.ensure_future(read(size))
            yield rows
    finally:
        if reading is not None and not reading.done():
            reading.cancel()


def _chunk_reader(
    items: list[Any],
    sql: Callable[[list[Any]], tuple[str, tuple[Any, ...]]],
    db: Database,
) -> Reader:
    """The statement ``sql`` makes of the next ``count`` of ``items``."""
    at = 0

    async def read(count: int) -> tuple[int, list[Any]]:
        nonlocal at
        chunk = items[at : at + count]
        at += len(chunk)
        return len(chunk), (await db.fetchall(*sql(chunk)) if chunk else [])

    return read


def _weight(column: int) -> Callable[[list[Any]], int]:
    return lambda rows: sum(len(row[column] or b"") for row in rows)


def _keyset(
    db: Database, conn: sqlite3.Connection, sql: str, after: int, count: int
) -> list[Any]:
    """One statement of a rowid keyset scan on a thread connection (``sql``:
    rowid first, a ``rowid > ?`` and a ``LIMIT ?``)."""
    return db.fetchall_in_thread(conn, sql, (after, count))


_BATCHES = (
    "SELECT rowid, run_id, seq, CAST(entries_json AS BLOB) FROM snapshot_turns "
    "WHERE rowid > ? ORDER BY rowid LIMIT ?"
)


def _read_batches(
    db: Database, conn: sqlite3.Connection, after: int, count: int
) -> tuple[list[Any], int]:
    """The next batches, and what they weigh."""
    rows = _keyset(db, conn, _BATCHES, after, count)
    return rows, sum(len(row[3] or b"") for row in rows)


def _check_batches(db: Database, rows: list[Any]) -> list[tuple[str, int, Unreadable]]:
    """The batches among these that lovia cannot load (run, seq, why)."""
    bad = []
    for _, stored, seq, raw in rows:
        try:
            parse_stored(parse_entries, raw)
        except UnreadableError as exc:
            run_id = stored_key(stored)
            bad.append((run_id, seq, _problem(db, run_id, seq, exc)))
    return bad


def _seq_order(seq: Any) -> tuple[bool, float]:
    """A batch's place among a run's: by number; a seq that is none (never
    from lovia) after them."""
    number = stored_number(seq)
    return number is None, number or 0


SCAN_ROWS = 20_000
"""Batches a thread reads and checks before it reports back: a statement's
read and its parse handed between two threads took 3.9 s at a million
batches, the same work in one thread 2.9 s (the parse holds the GIL)."""


@dataclass
class _BatchScan:
    """Where the pass over every batch is: past rowid ``after``, the next
    statement ``size`` rows, ``done`` at the table's end."""

    after: int = -(1 << 63)
    size: int = FIRST_ROWS
    done: bool = False


def _scan_batches(
    db: Database, conn: sqlite3.Connection, scan: _BatchScan
) -> list[tuple[str, int, Unreadable]]:
    """The next ``SCAN_ROWS`` or so batches, read statement by statement and
    checked: those lovia cannot load (run, seq, why). Blocking."""
    bad: list[tuple[str, int, Unreadable]] = []
    read = 0
    while read < SCAN_ROWS:
        rows, weight = _read_batches(db, conn, scan.after, scan.size)
        if not rows:
            scan.done = True
            break
        scan.after, read = rows[-1][0], read + len(rows)
        scan.size = _next_size(scan.size, len(rows), weight)
        bad += _check_batches(db, rows)
    return bad


async def unreadable_batches(
    db: Database, progress: Progress
) -> dict[str, Unreadable] | None:
    """The runs with a batch lovia cannot load, each with its first such
    batch, from one pass over every batch in rowid order, in a thread on a
    connection of its own; None when more than ``MOST_UNREADABLE`` runs have one."""
    found: dict[str, tuple[int, Unreadable]] = {}
    last = (await db.fetchrow("SELECT COALESCE(MAX(rowid), 0) FROM snapshot_turns"))[0]
    conn = db.thread_connection()
    scan = _BatchScan()
    reading: asyncio.Future[list[tuple[str, int, Unreadable]]] | None = None
    try:
        while not scan.done:
            reading = asyncio.ensure_future(
                asyncio.to_thread(_scan_batches, db, conn, scan)
            )
            # Shielded: a cancelled doctor waits for the thread below.
            for run_id, seq, problem in await asyncio.shield(reading):
                # Rowid order is not seq order: the run's lowest bad seq is its first.
                if run_id not in found or _seq_order(seq) < _seq_order(
                    found[run_id][0]
                ):
                    found[run_id] = (seq, problem)
            if len(found) > MOST_UNREADABLE:
                return None
            progress(
                f"checkpoint batches in {db.name}", min(1.0, scan.after / max(1, last))
            )
    finally:
        if reading is not None and not reading.done():
            await asyncio.wait([reading])  # the thread must let go of the connection
        conn.close()
    return {run_id: problem for run_id, (_, problem) in found.items()}


@dataclass(frozen=True)
class HeadPage:
    """A page of heads sorted in the reading thread: the run ids of completed
    heads that load and whose batches do (they need no more unless a
    session or chat holds their run), and the other heads' rows."""

    completed: list[str]
    others: list[Any]
    """(run_id, head bytes, updated_at) of heads to look at whole."""


_HEADS = (
    "SELECT rowid, run_id, CAST(head_json AS BLOB), updated_at FROM snapshot_heads "
    "WHERE rowid > ? ORDER BY rowid LIMIT ?"
)


def _sort_heads(
    db: Database,
    conn: sqlite3.Connection,
    after: int,
    unreadable: dict[str, Unreadable],
) -> tuple[int | None, HeadPage]:
    rows = _keyset(db, conn, _HEADS, after, HEAD_PAGE)
    page = HeadPage([], [])
    for _, stored, head, updated_at in rows:
        run_id = stored_key(stored)
        if head_completed(head, updated_at) and run_id not in unreadable:
            page.completed.append(run_id)
        else:
            page.others.append((run_id, head, updated_at))
    return (rows[-1][0] if rows else None), page


async def head_pages(
    db: Database, unreadable: dict[str, Unreadable]
) -> AsyncIterator[HeadPage]:
    """Every checkpoint, ``HEAD_PAGE`` heads a page in rowid order (the
    table's own order: no index lookups), read and sorted in a thread. Not
    the next page while the caller looks at this one: both parse, and the two
    threads handing the GIL back and forth took 10 s at 1M heads, not 7."""
    conn = db.thread_connection()
    reading: asyncio.Future[tuple[int | None, HeadPage]] | None = None
    try:
        after: int | None = -(1 << 63)
        while after is not None:
            reading = asyncio.ensure_future(
                asyncio.to_thread(_sort_heads, db, conn, after, unreadable)
            )
            # Shielded: a cancelled doctor waits for the thread below.
            after, page = await asyncio.shield(reading)
            if page.completed or page.others:
                yield page
    finally:
        if reading is not None and not reading.done():
            await asyncio.wait([reading])  # the thread must let go of the connection
        conn.close()


async def heads_of(db: Database, run_ids: list[str]) -> list[Any]:
    """(run_id, head, updated_at) of these checkpoints, by their primary key."""
    found: list[Any] = []
    for start in range(0, len(run_ids), 500):
        chunk = tuple(run_ids[start : start + 500])
        rows = await db.fetchall(
            "SELECT run_id, CAST(head_json AS BLOB), updated_at FROM snapshot_heads "
            f"WHERE run_id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        found += [(stored_key(run_id), *rest) for run_id, *rest in rows]
    return found


async def loaded(db: Database, run_ids: list[str]) -> AsyncIterator[dict[str, Loaded]]:
    """These runs' own entries, whole runs at a time (each its batches in seq
    order), found by run id, parsed in a thread."""

    def sql(chunk: list[str]) -> tuple[str, tuple[Any, ...]]:
        return (
            "SELECT run_id, seq, CAST(entries_json AS BLOB) FROM snapshot_turns "
            f"WHERE run_id IN ({','.join('?' * len(chunk))}) ORDER BY run_id, seq",
            tuple(chunk),
        )

    def parse(rows: list[Any]) -> dict[str, Loaded]:
        batches: dict[str, list[tuple[int, bytes]]] = {}
        for run_id, seq, raw in rows:
            batches.setdefault(stored_key(run_id), []).append((seq, raw))
        return {r: _parse_turns(db, r, b) for r, b in batches.items()}

    seen: set[str] = set()
    async for rows in _pipelined(_chunk_reader(run_ids, sql, db), _weight(2)):
        runs = await asyncio.to_thread(parse, rows)
        seen |= runs.keys()
        yield runs
    # Runs without a batch (or whose batches went meanwhile): nothing to parse.
    yield {run_id: Loaded() for run_id in set(run_ids) - seen}


async def stored_entries(
    ws: Workspace, links: list[tuple[str, SessionLink]]
) -> dict[str, list[dict[str, Any]] | None]:
    """The segment entries of runs stored already (None where unreadable),
    found by lovia's (session_id, run_id) index, parsed in a thread."""
    found: dict[str, list[dict[str, Any]] | None] = {}
    by_file: dict[Path, list[tuple[str, str]]] = {}
    for run_id, link in links:
        by_file.setdefault(link.file, []).append((link.session_id, run_id))

    def sql(chunk: list[tuple[str, str]]) -> tuple[str, tuple[Any, ...]]:
        return (
            "SELECT run_id, CAST(entries_json AS BLOB) FROM session_runs "
            f"WHERE (session_id, run_id) IN (VALUES {','.join(['(?, ?)'] * len(chunk))})",
            tuple(value for pair in chunk for value in pair),
        )

    for file, pairs in by_file.items():
        read = _chunk_reader(pairs, sql, ws.database(file))
        async for rows in _pipelined(read, _weight(1)):
            found.update(await asyncio.to_thread(_parsed_segments, rows))
    return found


def _parsed_segments(rows: list[Any]) -> dict[str, list[dict[str, Any]] | None]:
    parsed: dict[str, list[dict[str, Any]] | None] = {}
    for stored, raw in rows:
        run_id = stored_key(stored)
        try:
            parsed[run_id] = parse_stored(parse_entries, raw)
        except UnreadableError:
            parsed[run_id] = None
    return parsed
