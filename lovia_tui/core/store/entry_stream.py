"""A large segment's entries one at a time: never the whole segment in memory.

A segment of a million entries parses into gigabytes of dicts; one tool
output of 200 MB into several copies of it. Above ``STREAM_ABOVE`` bytes the
stored JSON is read by ijson's C parser (yajl2_c), entry by entry, with the
same checks as :func:`~lovia_tui.core.entries.parse_entries`; below it,
orjson parses the whole list at once, which is faster for ordinary rows.
The bytes are decoded as the read layer decodes text (invalid UTF-8 becomes
U+FFFD), so a row reads the same either way.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import ijson

from lovia_tui.core.entries import (
    UnreadableError,
    check_entry,
    parse_entries,
    parse_json,
)
from lovia_tui.core.huge_text import spare_entries
from lovia_tui.core.models import Entry, SegmentInfo
from lovia_tui.core.store.database import Database

STREAM_ABOVE = 4 << 20
"""Bytes of stored JSON above which a segment of many entries is parsed as a stream."""
MANY_ENTRIES = 1_000
"""Entries above which a large segment is streamed: a few huge entries are not
(yajl re-reads a value cut by a read from its start, so one 50 MB output took
97 s in 64 KB reads; orjson parses it at once, and it is one entry anyway)."""
COUNT_IN_SQL_UP_TO = 16 << 20
"""Stored bytes up to which SQLite counts a segment's entries
(``json_array_length`` holds twice the value: 400 MB for one 200 MB output)."""
READ_SIZE = 4 << 20
"""Bytes per read of the stream parser (few reads of a huge value: see above)."""


class _Utf8:
    """A file over stored bytes that yields them as valid UTF-8 (U+FFFD for bad bytes)."""

    def __init__(self, raw: bytes) -> None:
        self._view = memoryview(raw)
        self._offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read(self, size: int = READ_SIZE) -> bytes:
        if size == 0:
            return b""  # ijson asks for nothing to learn whether the file is binary
        # Never b"" before the end: a character cut by the chunk needs more bytes.
        size = max(4, READ_SIZE if size < 0 else size)
        chunk = self._view[self._offset : self._offset + size]
        self._offset += len(chunk)
        final = self._offset >= len(self._view)
        return self._decoder.decode(chunk, final=final).encode("utf-8")


def valid_utf8(raw: bytes) -> bool:
    """Whether stored bytes are UTF-8, checked a read at a time (no decoded copy)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(raw)
    try:
        for start in range(0, len(view), READ_SIZE):
            decoder.decode(view[start : start + READ_SIZE])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _text(raw: bytes) -> str:
    """Stored bytes as the read layer's text factory decodes them."""
    return raw.decode("utf-8", errors="replace")


def _parse_whole(raw: bytes) -> list[dict[str, Any]]:
    """:func:`parse_entries` on the bytes (no decoded copy of a 50 MB output),
    decoded as the text factory does only if they are not valid UTF-8."""
    try:
        return parse_entries(raw)
    except UnreadableError:
        return parse_entries(_text(raw))


def _parse_list(raw: bytes) -> list[Any]:
    """The stored list, its items unchecked (what ``json_array_length`` counts)."""
    try:
        data = parse_json(raw)
    except UnreadableError:
        data = parse_json(_text(raw))
    if not isinstance(data, list):
        raise UnreadableError("expected a JSON list of entries")
    return data


def _opens_a_list(raw: bytes) -> bool:
    for byte in raw[:4096]:
        if byte not in b" \t\r\n":
            return byte == ord("[")
    return False


def entries_hint(raw: bytes) -> int:
    """About how many entries stored JSON holds, at the speed of a byte search:
    each entry has a ``"type"`` key, and a string cannot hold those six bytes
    (its quotes are escaped). Chooses how to parse, never what is read."""
    return raw.count(b'"type"')


def streamed(raw: bytes, entries: int | None) -> bool:
    """Whether a stored value is parsed as a stream: large, and of many entries."""
    return len(raw) > STREAM_ABOVE and (entries is None or entries > MANY_ENTRIES)


def iter_entries(
    raw: bytes, entries: int | None = None, *, check: bool = True
) -> Iterator[Any]:
    """The entries of one ``entries_json`` value (of ``entries`` entries, if
    known), checked (unless not ``check``), one at a time.

    Raises :class:`UnreadableError` at the first problem, so a caller that
    must not show half a segment runs :func:`check_stream` first.
    """
    if not streamed(raw, entries):
        yield from _parse_whole(raw) if check else _parse_list(raw)
        return
    if not _opens_a_list(raw):
        parse_entries(_text(raw[:4096]))  # raises, saying what the value is instead
        raise UnreadableError("expected a JSON list of entries")
    try:
        items = ijson.items(_Utf8(raw), "item", use_float=True, buf_size=READ_SIZE)
        for position, entry in enumerate(items):
            if check:
                check_entry(position, entry)
            yield entry
    except ijson.JSONError as exc:
        raise UnreadableError(f"invalid JSON ({exc})") from exc


class _Stream:
    """The entries of a large stored value, read again on each iteration, refused
    as :func:`parse_entries` refuses them (invalid UTF-8 too: lovia cannot
    decode it) and in its words where it has words for it."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            if not valid_utf8(self.raw):
                raise UnreadableError("not valid UTF-8")
            yield from iter_entries(self.raw)
        except UnreadableError:
            parse_entries(self.raw)  # the whole parse's words, where it has them
            raise


def read_entries(raw: bytes | None) -> Iterable[dict[str, Any]]:
    """A stored value's entries as :func:`parse_entries` reads them (same
    entries, same refusals), iterable more than once, never held parsed when
    large: many entries stream (a refusal comes while iterating), a huge
    string stays stored (:mod:`~lovia_tui.core.huge_text`)."""
    if raw is None or not streamed(raw, entries_hint(raw)):
        spared = None if raw is None else spare_entries(raw)
        return parse_entries(raw) if spared is None else spared  # type: ignore[arg-type]
    return _Stream(raw)


def check_stream(raw: bytes, entries: int | None = None) -> int:
    """How many entries ``raw`` holds, all checked (raises UnreadableError);
    for a large segment, a pass that holds one entry at a time."""
    count = 0
    for _ in iter_entries(raw, entries):
        count += 1
    return count


async def stored_entries(db: Database, row_id: int, size: int) -> bytes | None:
    """A segment's stored ``entries_json`` bytes (None if it is gone); one of
    ``size`` characters or more through SQLite's incremental blob I/O, which
    keeps no copy of it (a SELECT of it holds the value and its CAST too)."""
    if size > STREAM_ABOVE:
        return await asyncio.to_thread(stored_blob, db, row_id)
    row = await db.fetchone(
        "SELECT CAST(entries_json AS BLOB) FROM session_runs WHERE id = ?", (row_id,)
    )
    return None if row is None else row[0]


def stored_blob(db: Database, row_id: int) -> bytes | None:
    """A segment's stored ``entries_json`` by blob I/O (blocking)."""
    return db.read_blob("session_runs", "entries_json", row_id)


async def count_stored(db: Database, row_id: int) -> int | None:
    """How many items a large stored value's list holds (None: none, or not a
    list), read once, off SQLite and off the event loop."""
    return await asyncio.to_thread(_count_blob, db, row_id)


def _count_blob(db: Database, row_id: int) -> int | None:
    raw = stored_blob(db, row_id)
    if raw is None:
        return None
    spared = None
    if not streamed(raw, entries_hint(raw)):
        # An entry lovia does not know is still an item: counted below.
        with contextlib.suppress(UnreadableError):
            spared = spare_entries(raw)
    if spared is not None:
        return len(spared)
    try:
        return sum(1 for _ in iter_entries(raw, check=False))
    except UnreadableError:
        return None


async def segment_entries_stream(
    db: Database, segment: SegmentInfo, *, spare: bool = False
) -> Iterator[Entry]:
    """A segment's entries with their flat indices, checked whole before the
    first is returned (raises UnreadableError), then one at a time: an export
    never writes half a segment, and never holds a large one parsed. With
    ``spare`` a huge string is a :class:`~lovia_tui.core.huge_text.HugeText`
    (the caller's writer expands it)."""
    raw = await stored_entries(db, segment.row_id, segment.stored_bytes)
    if raw is None:
        raise UnreadableError("segment no longer exists")
    count = segment.entry_count
    if streamed(raw, count):
        check_stream(raw, count)
        entries: Iterator[dict[str, Any]] = iter_entries(raw, count)
    else:
        spared = spare_entries(raw) if spare else None
        entries = iter(_parse_whole(raw) if spared is None else spared)
        del raw  # parsed: only a HugeText keeps the stored bytes
    first = segment.first_index
    return (
        Entry(None if first is None else first + offset, entry)
        for offset, entry in enumerate(entries)
    )
