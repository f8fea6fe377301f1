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

import codecs
from collections.abc import Iterator
from typing import Any

import ijson

from lovia_tui.core.entries import UnreadableError, check_entry, parse_entries
from lovia_tui.core.models import Entry, SegmentInfo
from lovia_tui.core.store.database import Database

STREAM_ABOVE = 4 << 20
"""Bytes of stored JSON above which a segment of many entries is parsed as a stream."""
MANY_ENTRIES = 1_000
"""Entries above which a large segment is streamed: a few huge entries are not
(yajl re-reads a value cut by a read from its start, so one 50 MB output took
97 s in 64 KB reads; orjson parses it at once, and it is one entry anyway)."""
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


def _opens_a_list(raw: bytes) -> bool:
    for byte in raw[:4096]:
        if byte not in b" \t\r\n":
            return byte == ord("[")
    return False


def streamed(raw: bytes, entries: int | None) -> bool:
    """Whether a stored value is parsed as a stream: large, and of many entries."""
    return len(raw) > STREAM_ABOVE and (entries is None or entries > MANY_ENTRIES)


def iter_entries(raw: bytes, entries: int | None = None) -> Iterator[dict[str, Any]]:
    """The entries of one ``entries_json`` value (of ``entries`` entries, if
    known), checked, one at a time.

    Raises :class:`UnreadableError` at the first problem, so a caller that
    must not show half a segment runs :func:`check_stream` first.
    """
    if not streamed(raw, entries):
        yield from _parse_whole(raw)
        return
    if not _opens_a_list(raw):
        parse_entries(_text(raw[:4096]))  # raises, saying what the value is instead
        raise UnreadableError("expected a JSON list of entries")
    try:
        items = ijson.items(_Utf8(raw), "item", use_float=True, buf_size=READ_SIZE)
        for position, entry in enumerate(items):
            check_entry(position, entry)
            yield entry
    except ijson.JSONError as exc:
        raise UnreadableError(f"invalid JSON ({exc})") from exc


def check_stream(raw: bytes, entries: int | None = None) -> int:
    """How many entries ``raw`` holds, all checked (raises UnreadableError);
    for a large segment, a pass that holds one entry at a time."""
    count = 0
    for _ in iter_entries(raw, entries):
        count += 1
    return count


async def segment_entries_stream(db: Database, segment: SegmentInfo) -> Iterator[Entry]:
    """A segment's entries with their flat indices, checked whole before the
    first is returned (raises UnreadableError), then one at a time: an export
    never writes half a segment, and never holds a large one parsed."""
    row = await db.fetchone(
        "SELECT CAST(entries_json AS BLOB) FROM session_runs WHERE id = ?",
        (segment.row_id,),
    )
    if row is None or row[0] is None:
        raise UnreadableError("segment no longer exists")
    raw, count = row[0], segment.entry_count
    del row
    if streamed(raw, count):
        check_stream(raw, count)
        entries: Iterator[dict[str, Any]] = iter_entries(raw, count)
    else:
        entries = iter(_parse_whole(raw))
        del raw  # parsed: the stored bytes need not stay beside the entries
    first = segment.first_index
    return (
        Entry(None if first is None else first + offset, entry)
        for offset, entry in enumerate(entries)
    )
