"""How the doctor reads a file's checkpoints: in the tables' own order, in bounded memory.

A worker fleet's file holds a million checkpoints. Reading each run's
batches by its run id is a seek per run (8x a sequential read), so the
doctor reads them in two passes of rowid order, each read and parsed in a
thread on a connection of its own (only what it found crosses back): every
batch once (:func:`~lovia_tui.core.doctor.batch_scan.unreadable_batches`
keeps the few runs whose batches lovia cannot load), then the heads (:func:`head_pages` sorts out the
completed ones that load). Only the runs that can yield a finding have
their entries read again by run id (:func:`loaded`), a few per cent of a
fleet's. Statements are sized to about ``batch_scan.GROUP_BYTES`` from what the one
before weighed; each is short, so no read holds a writer up for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia_tui.core.doctor import batch_scan
from lovia_tui.core.entries import UnreadableError, parse_entries, parse_stored
from lovia_tui.core.models import SessionLink, Unreadable
from lovia_tui.core.store.checkpoint_reads import head_completed
from lovia_tui.core.store.database import Database, in_thread
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import stored_key

HEAD_PAGE = 5_000
"""Heads a page: one statement of ~10 ms at a fleet's 1M heads."""


@dataclass
class Loaded:
    """A checkpoint's own entries, or the first of its batches that is unreadable."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    problem: Unreadable | None = None
    count: int = 0
    last_seq: int | None = None


def _parse_turns(db: Database, run_id: str, turns: list[tuple[int, bytes]]) -> Loaded:
    """A checkpoint's batches in seq order, as ``snapshot_entries`` reads them."""
    loaded = Loaded()
    for seq, raw in turns:
        loaded.last_seq = seq
        try:
            entries = parse_stored(parse_entries, raw)
        except UnreadableError as exc:
            loaded.problem = loaded.problem or batch_scan.unreadable_batch(
                db, run_id, seq, exc
            )
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
    size = batch_scan.FIRST_ROWS
    reading: asyncio.Future[tuple[int, list[Any]]] | None = asyncio.ensure_future(
        read(size)
    )
    try:
        while reading is not None:
            consumed, rows = await reading
            if not consumed:
                return
            size = batch_scan.next_size(size, consumed, weigh(rows))
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
    with contextlib.closing(db.thread_connection()) as conn:
        after: int | None = -(1 << 63)
        while after is not None:
            after, page = await in_thread(_sort_heads, db, conn, after, unreadable)
            if page.completed or page.others:
                yield page


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

    for file, pairs in by_file.items():
        read = _chunk_reader(pairs, segments_sql, ws.database(file))
        async for rows in _pipelined(read, _weight(1)):
            found.update(await asyncio.to_thread(_parsed_segments, rows))
    return found


def segments_sql(pairs: list[tuple[str, str]]) -> tuple[str, tuple[Any, ...]]:
    """The segments of these (session_id, run_id) pairs: the pairs first, each
    looked up by lovia's index on them (SQLite plans ``(session_id, run_id)
    IN (VALUES ...)`` as a scan of every segment: 145 ms a statement at
    100,000 segments, the doctor 3.4× its floor at a million)."""
    return (
        "SELECT s.run_id, CAST(s.entries_json AS BLOB) FROM "
        f"(VALUES {','.join(['(?, ?)'] * len(pairs))}) AS v "
        "CROSS JOIN session_runs AS s "
        "ON s.session_id = v.column1 AND s.run_id = v.column2",
        tuple(value for pair in pairs for value in pair),
    )


def _parsed_segments(rows: list[Any]) -> dict[str, list[dict[str, Any]] | None]:
    parsed: dict[str, list[dict[str, Any]] | None] = {}
    for stored, raw in rows:
        run_id = stored_key(stored)
        try:
            parsed[run_id] = parse_stored(parse_entries, raw)
        except UnreadableError:
            parsed[run_id] = None
    return parsed
