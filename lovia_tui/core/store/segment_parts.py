"""The part of a large segment the app holds: its first and last entries.

A segment of a million entries parsed took the app to 1.3 GB; it holds
``HELD_ENTRIES`` of them and a row for those between (``show`` and ``export``
print all). Counting such a segment is a stream pass of its own: the pass
that counts it for its session's listing keeps the part too, so opening it
is one pass, not two.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.entries import UnreadableError, check_entry
from lovia_tui.core.huge_text import spare_entries
from lovia_tui.core.models import Entry, SegmentInfo
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.entry_stream import (
    Stored,
    Value,
    entries_hint,
    iter_entries,
    read_by_blob,
    stored_value,
    streamed,
)

NOT_COUNTED = -1
"""The count of a large run not counted yet (:func:`count_stored` with ``defer``)."""


async def count_stored(
    db: Database, row_id: int, *, keep_part: bool = False, defer: bool = False
) -> int | None:
    """How many items a large stored value's list holds (None: none, or not a
    list), read once, off SQLite and off the event loop; with ``keep_part``
    (the app reads its entries next) the pass that counts it keeps what the
    app holds, else :func:`segment_part` makes a pass of its own. With
    ``defer``, a value of many entries not counted before is not counted now
    (``NOT_COUNTED``): a million entries took a 6 s pass before any row showed."""
    return await asyncio.to_thread(_count_stored, db, row_id, keep_part, defer)


_COUNTED: dict[tuple[Path, int, int], int | None] = {}
"""Counts of large values, by file, row id and stored size (a row lovia
rewrites, by trim, changes size): a segment of a million entries took a
3.5 s pass to count, and the app counts it for its listing, then for the
flat indices of its session, then each time the session is listed again."""
COUNTED = 64


def _count_stored(
    db: Database, row_id: int, keep_part: bool, defer: bool
) -> int | None:
    value = stored_value(db, row_id)
    if value is None:
        return None
    key = (db.path, row_id, value.size)
    if key not in _COUNTED:
        many = streamed(value, entries_hint(value))
        if defer and many:
            return NOT_COUNTED
        _remember(_COUNTED, key, _count(db, value, many, keep_part), COUNTED)
    return _COUNTED[key]


def _remember(found: dict[Any, Any], key: Any, value: Any, most: int) -> None:
    """``found[key] = value``, the oldest let go beyond ``most``."""
    found.pop(key, None)
    if len(found) >= most:
        del found[next(iter(found))]
    found[key] = value


def _count(db: Database, value: Stored, many: bool, keep_part: bool) -> int | None:
    """The items of a large value (``many``: streamed, see :func:`streamed`)."""
    if many and keep_part:
        return _count_and_keep_part(db, value)
    if not many:  # an entry lovia does not know is still an item: counted below
        with contextlib.suppress(UnreadableError):
            spared = spare_entries(value.whole())
            if spared is not None:
                return len(spared)
    try:
        return sum(1 for _ in iter_entries(value, check=False))
    except UnreadableError:
        return None


HELD_ENTRIES = 2_000
"""Entries of a large segment the app holds: its first and its last half of
them (a million entries parsed took 1.3 GB); ``show`` and ``export`` print all."""


@dataclass(frozen=True)
class SegmentPart:
    """A large segment's entries as the app holds them: its first and last
    ones, and how many between them are not held."""

    first: list[Entry]
    skipped: int
    """Entries between ``first`` and ``last`` (0 where the run is uncounted:
    its first ones are held, the rest not read yet)."""
    last: list[Entry]


def held_in_part(segment: SegmentInfo) -> bool:
    """Whether the app holds only a part of this segment's entries."""
    return read_by_blob(segment) and (
        segment.uncounted or (segment.entry_count or 0) > HELD_ENTRIES
    )


async def segment_part(db: Database, segment: SegmentInfo) -> SegmentPart:
    """The first and last ``HELD_ENTRIES`` entries of a large segment, with
    their flat indices: one stream pass off the event loop, never more held
    (raises UnreadableError at a bad entry, as the whole parse would), or
    none where the pass that counted the segment kept them."""
    kept = _KEPT_PARTS.pop((db.path, segment.row_id, segment.stored_bytes), None)
    if kept is None:
        read = _read_head if segment.uncounted else _read_part
        kept = await asyncio.to_thread(read, stored_value(db, segment.row_id))
    if kept.error is not None:
        raise kept.error
    start = segment.first_index

    def entries(items: Iterable[Any], offset: int) -> list[Entry]:
        return [
            Entry(None if start is None else start + offset + n, data)
            for n, data in enumerate(items)
        ]

    skipped = max(kept.count - len(kept.first) - len(kept.last), 0)
    return SegmentPart(
        entries(kept.first, 0), skipped, entries(kept.last, len(kept.first) + skipped)
    )


@dataclass(frozen=True)
class _KeptPart:
    """A large segment's item count and its first and last entries, as one
    pass read them; the first check that failed, if one did."""

    count: int
    first: list[Any]
    last: list[Any]
    error: UnreadableError | None


_KEPT_PARTS: dict[tuple[Path, int, int], _KeptPart] = {}
"""Parts kept by the pass that counted a segment, by file, row id and stored
size, for the read of its entries that follows (a million entries took
3.5 s a pass, and the app listed, then read). Taken once; a few at most."""
KEPT_PARTS = 2


def _count_and_keep_part(db: Database, value: Stored) -> int | None:
    """The items of a streamed value, counted unchecked (None: not a list of
    them); its part kept for :func:`segment_part`."""
    part = _read_part(value)
    if part.count > HELD_ENTRIES:  # the app holds it in part
        _remember(_KEPT_PARTS, (db.path, value.row_id, value.size), part, KEPT_PARTS)
    return None if part.count < 0 else part.count


def _read_part(value: Value | None) -> _KeptPart:
    """One stream pass: every item counted, the first and last
    ``HELD_ENTRIES // 2`` kept, each checked (the first failure kept; a count
    of -1 where the value is no list of items). Blocking."""
    if value is None:
        return _KeptPart(-1, [], [], UnreadableError("segment no longer exists"))
    half = HELD_ENTRIES // 2
    first: list[Any] = []
    last: deque[Any] = deque(maxlen=HELD_ENTRIES - half)
    error: UnreadableError | None = None
    count = 0
    try:
        for count, item in enumerate(iter_entries(value, check=False), 1):
            if error is None:
                try:
                    check_entry(count - 1, item)
                except UnreadableError as exc:
                    error = exc
            (first if count <= half else last).append(item)
    except UnreadableError as exc:
        return _KeptPart(-1, [], [], error or exc)
    return _KeptPart(count, first, list(last), error)


def _read_head(value: Value | None) -> _KeptPart:
    """The first ``HELD_ENTRIES // 2`` entries of an uncounted value, each
    checked, and no more read (a count of -1: the rest is not counted); the
    whole value where it ends before. Blocking."""
    if value is None:
        return _KeptPart(-1, [], [], UnreadableError("segment no longer exists"))
    half = HELD_ENTRIES // 2
    first: list[Any] = []
    items = iter_entries(value, check=False)
    try:
        for item in items:
            if len(first) == half:
                return _KeptPart(-1, first, [], None)
            check_entry(len(first), item)
            first.append(item)
    except UnreadableError as exc:
        return _KeptPart(-1, [], [], exc)
    finally:
        items.close()  # the value's blob reads end here, in this thread
    return _KeptPart(len(first), first, [], None)
