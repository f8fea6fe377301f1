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
import sqlite3
from collections.abc import Generator, Iterable, Iterator
from typing import Any

import ijson

from lovia_tui.core.entries import (
    UnreadableError,
    check_entry,
    parse_entries,
    parse_json,
    parse_object,
    parse_stored,
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


class Stored:
    """A large segment's stored value, read a chunk at a time each time it is
    iterated (:meth:`Database.blob_chunks`): never held whole, and no read
    held longer than a chunk's. Blocking: iterate it in one thread."""

    def __init__(self, db: Database, row_id: int, size: int) -> None:
        self.db, self.row_id, self.size = db, row_id, size

    def __iter__(self) -> Iterator[bytes]:
        return self.db.blob_chunks(
            "session_runs", "entries_json", self.row_id, READ_SIZE
        )

    def __len__(self) -> int:
        return self.size

    def whole(self) -> bytes:
        """The value at once (a segment of a few huge entries: parsed whole anyway)."""
        raw = self.db.read_blob("session_runs", "entries_json", self.row_id)
        if raw is None or len(raw) != self.size:
            raise self.db.changed("session_runs", self.row_id)
        return raw


Value = bytes | Stored
"""A stored ``entries_json``: its bytes, or where it is large, read as it is needed."""


def _chunks(value: Value) -> Generator[bytes]:
    if isinstance(value, Stored):
        yield from value
        return
    view = memoryview(value)
    for start in range(0, len(view), READ_SIZE):
        yield bytes(view[start : start + READ_SIZE])


def _whole(value: Value) -> bytes:
    return value.whole() if isinstance(value, Stored) else value


def _first(value: Value) -> bytes:
    """The value's first bytes (its first chunk: enough to see what it opens with)."""
    return next(_chunks(value), b"")


class _Utf8:
    """A file over stored bytes that yields them as valid UTF-8 (U+FFFD for
    bad bytes), a chunk per read."""

    def __init__(self, value: Value) -> None:
        self._chunks: Generator[bytes] = _chunks(value)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._done = False

    def read(self, size: int = READ_SIZE) -> bytes:
        if size == 0 or self._done:
            return b""  # ijson asks for nothing to learn whether the file is binary
        # Never b"" before the end: a character cut by the chunk needs more bytes.
        for chunk in self._chunks:
            text = self._decoder.decode(chunk)
            if text:
                return text.encode("utf-8")
        self._done = True
        return self._decoder.decode(b"", final=True).encode("utf-8")

    def close(self) -> None:
        self._chunks.close()


def valid_utf8(value: Value) -> bool:
    """Whether stored bytes are UTF-8, checked a chunk at a time (no decoded copy)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for chunk in _chunks(value):
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _text(raw: bytes) -> str:
    """Stored bytes as the read layer's text factory decodes them."""
    return raw.decode("utf-8", errors="replace")


def _parse_whole(raw: bytes) -> list[dict[str, Any]]:
    """:func:`parse_entries` on the bytes (no decoded copy of a 50 MB output)."""
    return parse_stored(parse_entries, raw)


def _parse_list(raw: bytes) -> list[Any]:
    """The stored list, its items unchecked (what ``json_array_length`` counts)."""
    try:
        data = parse_json(raw)
    except UnreadableError:
        data = parse_json(_text(raw))
    if not isinstance(data, list):
        raise UnreadableError("expected a JSON list of entries")
    return data


def _opens_a_list(value: Value) -> bool:
    for byte in _first(value)[:4096]:
        if byte not in b" \t\r\n":
            return byte == ord("[")
    return False


TYPE_KEY = b'"type"'
"""Six bytes each entry holds (a nested part may too) and no JSON string can."""


def entries_hint(value: Value) -> int:
    """About how many entries stored JSON holds, at the speed of a byte search,
    counted until there are more than ``MANY_ENTRIES`` (all :func:`streamed`
    asks; a 128 MB value's whole count took 0.6 s): each entry has a
    ``"type"`` key, and a string cannot hold those six bytes (its quotes are
    escaped). Chooses how to parse, never what is read."""
    if isinstance(value, bytes):
        return value.count(TYPE_KEY)
    count, tail = 0, b""
    for chunk in value:  # a key cut by two chunks is counted across them
        joined = tail + chunk
        count += joined.count(TYPE_KEY)
        tail = joined[-(len(TYPE_KEY) - 1) :]
        if count > MANY_ENTRIES:
            break
    return count


def streamed(value: Value, entries: int | None) -> bool:
    """Whether a stored value is parsed as a stream: large, and of many entries."""
    return len(value) > STREAM_ABOVE and (entries is None or entries > MANY_ENTRIES)


def iter_entries(
    value: Value, entries: int | None = None, *, check: bool = True
) -> Generator[Any]:
    """The entries of one ``entries_json`` value (of ``entries`` entries, if
    known), checked (unless not ``check``), one at a time.

    Raises :class:`UnreadableError` at the first problem, so a caller that
    must not show half a segment runs :func:`check_stream` first.
    """
    if not streamed(value, entries):
        raw = _whole(value)
        yield from _parse_whole(raw) if check else _parse_list(raw)
        return
    if not _opens_a_list(value):
        parse_entries(_text(_first(value)[:4096]))  # raises, saying what it is instead
        raise UnreadableError("expected a JSON list of entries")
    source = _Utf8(value)
    try:
        items = ijson.items(source, "item", use_float=True, buf_size=READ_SIZE)
        for position, entry in enumerate(items):
            if check:
                check_entry(position, entry)
            yield entry
    except ijson.JSONError as exc:
        raise UnreadableError(f"invalid JSON ({exc})") from exc
    finally:
        source.close()  # the file's blob reads end here, in this thread


class _Stream:
    """The entries of a large stored value, read again on each iteration, refused
    as :func:`parse_entries` refuses them (invalid UTF-8 too: lovia cannot
    decode it) and in its words where it has words for it."""

    def __init__(self, value: Value) -> None:
        self.value = value

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            if not valid_utf8(self.value):
                raise UnreadableError("not valid UTF-8")
            yield from iter_entries(self.value)
        except UnreadableError:
            parse_entries(
                _whole(self.value)
            )  # the whole parse's words, where it has them
            raise


def read_entries(value: Value | None) -> Iterable[dict[str, Any]]:
    """A stored value's entries as :func:`parse_entries` reads them (same
    entries, same refusals), iterable more than once, never held parsed when
    large: many entries stream (a refusal comes while iterating), a huge
    string stays stored (:mod:`~lovia_tui.core.huge_text`). Blocking."""
    # A value of a few MB is never streamed: no need to count its entries.
    if (
        value is None
        or len(value) <= STREAM_ABOVE
        or not streamed(value, entries_hint(value))
    ):
        raw = None if value is None else _whole(value)
        spared = None if raw is None else spare_entries(raw)
        return parse_entries(raw) if spared is None else spared  # type: ignore[arg-type]
    return _Stream(value)


def check_stream(value: Value, entries: int | None = None) -> int:
    """How many entries ``value`` holds, all checked (raises UnreadableError);
    for a large segment, a pass that holds one entry at a time."""
    count = 0
    for _ in iter_entries(value, entries):
        count += 1
    return count


async def stored_sizes(
    db: Database, row_ids: list[int], column: str = "entries_json"
) -> dict[int, int]:
    """Segments' stored ``column`` sizes in bytes, from the values' headers
    (SQLite's ``length()`` of a TEXT reads it whole), off the event loop; a
    segment gone, NULL or a number (which blob I/O cannot open, and lovia
    never writes) is left out."""
    if not row_ids:
        return {}
    readable = await db.fetchall(*_readable(row_ids, column))
    return await asyncio.to_thread(
        db.blob_sizes, "session_runs", column, [row[0] for row in readable]
    )


def stored_sizes_on(
    db: Database, conn: sqlite3.Connection, row_ids: list[int]
) -> dict[int, int]:
    """:func:`stored_sizes` of entries in this thread, its first read on
    ``conn`` (a :meth:`Database.thread_connection`)."""
    if not row_ids:
        return {}
    readable = db.fetchall_in_thread(conn, *_readable(row_ids, "entries_json"))
    return db.blob_sizes("session_runs", "entries_json", [row[0] for row in readable])


def _readable(row_ids: list[int], column: str) -> tuple[str, tuple[int, ...]]:
    """The rows of these whose ``column`` blob I/O can open: typeof() reads
    the record header only, never a large value."""
    return (
        f"SELECT id FROM session_runs WHERE id IN ({','.join('?' * len(row_ids))}) "
        f"AND typeof({column}) IN ('text', 'blob')",
        tuple(row_ids),
    )


def stored_value(db: Database, row_id: int) -> Stored | None:
    """A segment's stored ``entries_json``, to be read by blob I/O (blocking);
    None if it is gone or NULL."""
    size = db.blob_sizes("session_runs", "entries_json", [row_id]).get(row_id)
    return None if size is None else Stored(db, row_id, size)


BATCH_ROWS = 256
"""Segments whose meta and entries :class:`SegmentReader` reads in one statement."""


class SegmentReader:
    """Each segment's meta and entries as ``show`` and export print them, the
    segments asked for in order. Small segments are read ahead, a batch a
    statement, their stored meta and entries together at most
    ``STREAM_ABOVE`` bytes: a statement and two thread hops a segment took a
    100,000-segment export 19-26 s. A large one is read alone, by blob I/O."""

    def __init__(self, db: Database, segments: list[SegmentInfo]) -> None:
        self.db = db
        self.segments = segments
        self._position = {segment.row_id: n for n, segment in enumerate(segments)}
        self._ahead: dict[int, tuple[Any, bytes | None]] = {}
        """Row id → (stored meta, stored entries) of the batch read last."""

    async def meta(self, segment: SegmentInfo) -> dict[str, Any] | None:
        """The segment's meta as stored (None: none, or the segment is gone);
        raises UnreadableError for a meta that is not a JSON object."""
        if read_by_blob(segment):
            row = await self.db.fetchone(
                "SELECT meta_json FROM session_runs WHERE id = ?", (segment.row_id,)
            )
            return None if row is None else parse_stored(parse_object, row[0])
        stored = (await self._read(segment))[0]
        return parse_stored(parse_object, stored)

    async def entries(
        self, segment: SegmentInfo, *, spare: bool = False
    ) -> Iterator[Entry]:
        """The segment's entries with their flat indices, checked whole before
        the first is returned (raises UnreadableError), then one at a time:
        an export never writes half a segment, and never holds a large one,
        read or parsed. With ``spare`` a huge string is a
        :class:`~lovia_tui.core.huge_text.HugeText` (the caller's writer expands it)."""
        value: Value | None
        if read_by_blob(segment):
            value = await asyncio.to_thread(stored_value, self.db, segment.row_id)
        else:
            value = (await self._read(segment))[1]
        if value is None:
            raise UnreadableError("segment no longer exists")
        count = segment.entry_count
        if streamed(value, count):
            check_stream(value, count)
            entries: Iterator[dict[str, Any]] = iter_entries(value, count)
        else:
            raw = _whole(value)
            del value
            spared = spare_entries(raw) if spare else None
            entries = iter(_parse_whole(raw) if spared is None else spared)
            del raw  # parsed: only a HugeText keeps the stored bytes
        first = segment.first_index
        return (
            Entry(None if first is None else first + offset, entry)
            for offset, entry in enumerate(entries)
        )

    async def _read(self, segment: SegmentInfo) -> tuple[Any, bytes | None]:
        """A small segment's stored meta and entries (None, None: it is gone),
        read with the small ones after it when not read ahead already."""
        if segment.row_id not in self._ahead:
            self._ahead = await self._batch(self._position[segment.row_id])
        return self._ahead.get(segment.row_id, (None, None))

    async def _batch(self, start: int) -> dict[int, tuple[Any, bytes | None]]:
        following = []
        for segment in self.segments[start : start + BATCH_ROWS]:
            if read_by_blob(segment):
                break
            following.append(segment)
        metas = await stored_sizes(
            self.db, [segment.row_id for segment in following], "meta_json"
        )
        ids: list[int] = []
        held = 0
        for segment in following:
            held += segment.stored_bytes + metas.get(segment.row_id, 0)
            if ids and held > STREAM_ABOVE:
                break  # a large meta too is held alone (the first is always read)
            ids.append(segment.row_id)
        rows = await self.db.fetchall(
            "SELECT id, meta_json, CAST(entries_json AS BLOB) FROM session_runs "
            f"WHERE id IN ({','.join('?' * len(ids))})",
            tuple(ids),
        )
        return {row_id: (meta, entries) for row_id, meta, entries in rows}


def read_by_blob(segment: SegmentInfo) -> bool:
    """Whether a segment is read from the file by blob I/O, a piece at a time,
    never by a SELECT of its value (which holds it two or three times)."""
    return segment.stored_bytes > STREAM_ABOVE
