"""Reads of one session's segments (``session_runs`` rows) and their entries.

Bounded like every read: keyset pages of up to ``SEGMENT_CHUNK`` rows, as many
as a step reads in its time (:mod:`~lovia_tui.core.store.pace`), never a whole session.
"""

from __future__ import annotations

import asyncio
import sqlite3
from functools import partial
from typing import Any

from lovia_tui.core.context_meta import NOTICE_KEY, STATE_KEY, TIMING_KEY, context_line
from lovia_tui.core.entries import (
    UnreadableError,
    parse_entries,
    parse_object,
    parse_stored,
)
from lovia_tui.core.formatting import size
from lovia_tui.core.huge_text import HugeText, spare_entries
from lovia_tui.core.models import (
    Entry,
    SegmentInfo,
    Unreadable,
)
from lovia_tui.core.store.database import NO_ID_ABOVE, Database
from lovia_tui.core.store.entry_stream import (
    COUNT_IN_SQL_UP_TO,
    read_by_blob,
    stored_sizes,
    stored_value,
)
from lovia_tui.core.store.pace import Cut, Pace, paced
from lovia_tui.core.store.segment_parts import (
    NOT_COUNTED,
    SegmentPart,
    count_stored,
    held_in_part,
    segment_part,
)
from lovia_tui.core.stored import (
    SAFE_ENTRY_COUNT,
    stored_key,
    stored_number,
    stored_time,
)

SEGMENT_CHUNK = 200


def _segment(
    db: Database,
    row: Any,
    count: int | None,
    first: int | None,
    *,
    keep_meta: bool = False,
) -> SegmentInfo:
    row_id, session_id, run_id, created_at, size, meta_json = row[:6]
    unreadable = None
    try:
        meta = parse_object(meta_json) or {}
    except UnreadableError as exc:
        meta = {}
        unreadable = Unreadable(f"{db.name} session_runs id {row_id} meta", str(exc))
    held = meta if keep_meta and meta else None
    timing = meta.get(TIMING_KEY)
    if not isinstance(timing, dict):
        timing = {}
    uncounted = count == NOT_COUNTED
    if uncounted:
        count = None
    elif count is None and unreadable is None:
        unreadable = Unreadable(
            f"{db.name} session_runs id {row_id} (run {run_id})",
            "entries_json is not valid JSON",
        )
    return SegmentInfo(
        file=db.path,
        row_id=row_id,
        session_id=stored_key(session_id),
        run_id=stored_key(run_id),
        entry_count=count,
        first_index=first,
        created_at=stored_time(created_at),
        started_at=stored_number(timing.get("started_at")),
        finished_at=stored_number(timing.get("finished_at")),
        has_context_state=context_line(meta.get(STATE_KEY)) is not None,
        has_notice=bool(meta.get(NOTICE_KEY)),
        stored_bytes=size or 0,
        unreadable=unreadable,
        uncounted=uncounted,
        meta=held,
    )


async def segments(db: Database, session_id: str) -> list[SegmentInfo]:
    """A session's segments in run order, each with its first flat index.

    Entry counts come from SQLite's ``json_array_length`` in chunks, so no
    segment's JSON crosses into Python here. Once a segment is unreadable the
    flat indices after it are unknown and left ``None``: never guessed.
    """
    result: list[SegmentInfo] = []
    if not db.stores.session:
        return result
    after = 0
    next_index: int | None = 0
    pace = Pace(SEGMENT_CHUNK)
    while True:
        rows = await paced(pace, partial(_rows_after, db, session_id, after))
        pace.took(len(rows))
        if not rows:
            return result
        for row in rows:
            count = row[6]
            result.append(_segment(db, row, count, next_index))
            next_index = (
                None if count is None or next_index is None else next_index + count
            )
        after = rows[-1][0]


async def newest_segments(
    db: Database, session_id: str, limit: int, before_id: int | None = None
) -> tuple[list[SegmentInfo], int]:
    """Up to ``limit`` segments of a session older than ``before_id`` (else its
    newest), in run order, and how many older segments remain.

    Costs the same at any session length: the rows come newest first by
    lovia's ``(session_id, id)`` index and the remainder is counted from it.
    Their ``first_index`` is None: it needs every older segment's entry
    count, which :func:`flat_starts` reads (in the background); so is a
    large run's own count where no pass has counted it yet (``uncounted``).
    """
    if not db.stores.session:
        return [], 0
    upper = NO_ID_ABOVE if before_id is None else before_id
    rows = await _segment_rows(db, "id < ?2", "id DESC", (session_id, upper, limit))
    rows.reverse()
    older = rows[0][7] - len(rows) if rows else 0
    return [_segment(db, row, row[6], None, keep_meta=True) for row in rows], older


async def oldest_segments(
    db: Database, session_id: str, limit: int, after_id: int
) -> tuple[list[SegmentInfo], int]:
    """Up to ``limit`` segments of a session newer than ``after_id``, in run
    order, and how many newer ones remain (as :func:`newest_segments`)."""
    if not db.stores.session:
        return [], 0
    rows = await _segment_rows(db, "id > ?2", "id", (session_id, after_id, limit))
    newer = rows[0][7] - len(rows) if rows else 0
    return [_segment(db, row, row[6], None, keep_meta=True) for row in rows], newer


async def flat_starts(db: Database, session_id: str) -> dict[int, int | None]:
    """The first flat index of each of a session's segments, by row id.

    Every segment's entries are counted (``json_array_length`` in SQLite,
    up to ``SEGMENT_CHUNK`` rows a statement); after an unreadable segment the
    indices are unknown and ``None``, never guessed.
    """
    starts: dict[int, int | None] = {}
    if not db.stores.session:
        return starts
    after = 0
    next_index: int | None = 0
    pace = Pace(SEGMENT_CHUNK)
    while True:
        rows = await paced(pace, partial(_counts, db, session_id, after))
        pace.took(len(rows))
        if not rows:
            return starts
        for row_id, count in rows:
            starts[row_id] = next_index
            next_index = (
                None if count is None or next_index is None else next_index + count
            )
        after = rows[-1][0]


async def _segment_rows(
    db: Database,
    where: str,
    order: str,
    params: tuple[str, int, int],
    *,
    matching: bool = True,
    defer: bool = True,
    cut: Cut | None = None,
) -> list[Any]:
    """Segment rows of session ?1 matching ``where`` (about id ?2), at most ?3;
    with ``matching`` each row ends with how many of the session's segments
    match ``where`` (counted from lovia's index, once a statement: the
    subquery is not correlated); a large run not counted yet is left so
    (``defer``: see :func:`count_stored`)."""
    count = f"(SELECT COUNT(*) FROM session_runs WHERE session_id = ?1 AND {where})"
    base = (
        "SELECT id, session_id, run_id, created_at, NULL, meta_json, NULL, "
        f"{count if matching else 'NULL'} FROM session_runs WHERE session_id = ?1 "
        f"AND {where} ORDER BY {order} LIMIT ?3"
    )
    return await _with_counts(db, base, params, 6, 4, defer=defer, cut=cut)


async def _rows_after(
    db: Database, session_id: str, after: int, limit: int, cut: Cut | None
) -> list[Any]:
    """A session's segment rows after id ``after``, counted now (for
    :func:`segments`, which walks to the end: counting what is left at each
    step read the session's index once a step)."""
    return await _segment_rows(
        db,
        "id > ?2",
        "id",
        (session_id, after, limit),
        matching=False,
        defer=False,
        cut=cut,
    )


async def _counts(
    db: Database, session_id: str, after: int, limit: int, cut: Cut | None
) -> list[Any]:
    base = "SELECT id, NULL FROM session_runs WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?"
    return await _with_counts(
        db, base, (session_id, after, limit), 1, keep_parts=True, cut=cut
    )


async def _with_counts(
    db: Database,
    base: str,
    params: tuple[Any, ...],
    count_at: int,
    size_at: int | None = None,
    *,
    keep_parts: bool = False,
    defer: bool = False,
    cut: Cut | None = None,
) -> list[Any]:
    """Run ``base`` (the row id first) with each row's entry count in column
    ``count_at`` and, where given, its stored size in bytes in column
    ``size_at`` (both NULL in ``base``). SQLite knows a TEXT's length only by reading
    it whole (145 ms and 128 MB of its memory for one 128 MB segment, each
    time its session is listed), so the sizes come from the values' headers
    (:meth:`Database.blob_sizes`), and SQLite counts only rows up to
    ``COUNT_IN_SQL_UP_TO`` (its count holds the value twice); a larger one is
    counted by :func:`count_stored`, reading it once (``keep_parts``: that
    pass keeps the part the app holds, for the app to read next; ``defer``:
    a run of many entries not counted before is left uncounted; ``cut``: a
    walk's step, see :func:`~lovia_tui.core.store.pace.paced`)."""
    rows = await db.fetchall(base, params, cut=cut)
    ids = [row[0] for row in rows]
    sizes = await stored_sizes(db, ids)
    counts = await _counted(
        db, [i for i in ids if sizes.get(i, 0) <= COUNT_IN_SQL_UP_TO], cut
    )
    found = []
    for row in rows:
        row_id = row[0]
        count = (
            counts[row_id]
            if row_id in counts
            else await count_stored(db, row_id, keep_part=keep_parts, defer=defer)
        )
        row = (*row[:count_at], count, *row[count_at + 1 :])
        if size_at is not None:
            row = (*row[:size_at], sizes.get(row_id, 0), *row[size_at + 1 :])
        found.append(row)
    return found


async def _counted(
    db: Database, ids: list[int], cut: Cut | None = None
) -> dict[int, int | None]:
    """The entry counts of these rows, in SQL (None for a malformed one)."""
    if not ids:
        return {}
    sql = f"SELECT id, {{}} FROM session_runs WHERE id IN ({', '.join('?' * len(ids))})"
    try:
        rows = await db.fetchall(
            sql.format("json_array_length(entries_json)"), tuple(ids), cut=cut
        )
    except sqlite3.OperationalError as exc:
        if "JSON" not in str(exc):
            raise
        # A malformed row among these: count row by row, guarded.
        rows = await db.fetchall(sql.format(SAFE_ENTRY_COUNT), tuple(ids), cut=cut)
    return dict(rows)


async def segment_entries(db: Database, segment: SegmentInfo) -> list[Entry]:
    """The entries of one segment with their flat indices (raises UnreadableError)."""
    row = await db.fetchone(
        "SELECT entries_json FROM session_runs WHERE id = ?", (segment.row_id,)
    )
    return _entries(segment, None if row is None else row[0])


async def batch_entries(
    db: Database, segments: list[SegmentInfo]
) -> dict[int, list[Entry] | SegmentPart | UnreadableError]:
    """The entries of a batch of segments, by row id, in one statement (one
    round trip a segment kept a screenful waiting on the busy event loop); a
    large segment of many entries held in part (:func:`segment_part`); an
    unreadable or vanished segment maps to the error saying so."""
    in_part = {segment.row_id for segment in segments if held_in_part(segment)}
    large = {
        segment.row_id
        for segment in segments
        if segment.row_id not in in_part and read_by_blob(segment)
    }
    ids = [
        segment.row_id
        for segment in segments
        if segment.row_id not in in_part and segment.row_id not in large
    ]
    stored = (
        dict(
            await db.fetchall(
                f"SELECT id, entries_json FROM session_runs WHERE id IN ({','.join('?' * len(ids))})",
                tuple(ids),
            )
        )
        if ids
        else {}
    )
    found: dict[int, list[Entry] | SegmentPart | UnreadableError] = {}
    for segment in segments:
        try:
            if segment.row_id in in_part:
                found[segment.row_id] = await segment_part(db, segment)
            elif segment.row_id in large:
                found[segment.row_id] = await asyncio.to_thread(
                    _held_whole, db, segment
                )
            else:
                found[segment.row_id] = _entries(segment, stored.get(segment.row_id))
        except UnreadableError as exc:
            found[segment.row_id] = exc
    return found


HELD_CHARS = 65_536
"""Characters of a huge string (a 200 MB tool output) that the app holds: its
start, and a line saying how many more there are (show and export print all)."""
WHOLE_ABOVE = 64 << 20
"""Stored bytes above which a segment with no huge string to leave stored is
not parsed whole by the app (every entry under 4 MB, yet 64 MB of them)."""


def _held_whole(db: Database, segment: SegmentInfo) -> list[Entry]:
    """A large segment of few entries, read by blob I/O (a SELECT held it
    three times) with its huge strings left stored and cut to their start:
    a 200 MB output took the app to 1.5 GB parsed whole. Blocking."""
    value = stored_value(db, segment.row_id)
    if value is None:
        raise UnreadableError("segment no longer exists")
    raw = value.whole()
    spared = spare_entries(raw)
    if spared is None and len(raw) > WHOLE_ABOVE:
        raise UnreadableError(
            f"{size(len(raw))} in one run and no huge string in it to leave stored: "
            "too large to hold here (show or export prints it)"
        )
    data = parse_stored(parse_entries, raw) if spared is None else spared
    del raw, value
    first = segment.first_index
    return [
        Entry(None if first is None else first + offset, _held(entry))
        for offset, entry in enumerate(data)
    ]


def _held(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with each huge string cut to its first ``HELD_CHARS``."""
    for key, value in entry.items():
        if isinstance(value, HugeText):
            more = len(value) - HELD_CHARS
            entry[key] = (
                f"{value[:HELD_CHARS]}\n⋯ {more:,} more characters not held here "
                "(show or export prints them all)"
            )
    return entry


def _entries(segment: SegmentInfo, stored: str | None) -> list[Entry]:
    if stored is None:
        raise UnreadableError("segment no longer exists")
    first = segment.first_index
    return [
        Entry(None if first is None else first + offset, entry)
        for offset, entry in enumerate(parse_entries(stored))
    ]
