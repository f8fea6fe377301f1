"""Large segments parsed as a stream: the same entries, the same refusals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
)
from support.lovia_factory import raw as read_raw

from lovia_tui.cli import main
from lovia_tui.core.entries import UnreadableError, parse_entries
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.store import entry_stream, segment_parts
from lovia_tui.core.store.database import Database, open_database


@pytest.fixture
def streamed_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stream every segment over 2 KB of more than 5 entries."""
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 2_000)
    monkeypatch.setattr(entry_stream, "MANY_ENTRIES", 5)


@pytest.fixture
def long_segment(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    entries = [InputEntry("user", "check every ticket")]
    for n in range(200):
        entries += [
            ToolCallEntry(f"c{n}", "ticket", json.dumps({"id": n})),
            ToolResultEntry(f"c{n}", f"ticket {n}: résolu ✓"),
        ]
    entries.append(AssistantTextEntry("done"))

    async def write() -> None:
        session = SQLiteSession(path)
        await session.append("s", [InputEntry("user", "hi")], run_id="r0")
        await session.append("s", entries, run_id="r1")

    asyncio.run(write())
    return path


def stored_r1(path: Path) -> list[tuple]:
    """Run r1's row id and stored bytes."""
    return read_raw(
        path,
        "SELECT id, CAST(entries_json AS BLOB) FROM session_runs WHERE run_id = 'r1'",
    )


def _show(capsys, path: Path) -> dict:
    assert main(["show", str(path), "s", "--json", "--readonly"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_streamed_segment_reads_as_a_parsed_one(long_segment, capsys, monkeypatch):
    whole = _show(capsys, long_segment)
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 2_000)
    monkeypatch.setattr(entry_stream, "MANY_ENTRIES", 5)
    assert _show(capsys, long_segment) == whole
    assert [len(s["entries"]) for s in whole["segments"]] == [1, 402]
    assert main(["export", str(long_segment), "s", "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [e["index"] for e in exported["segments"][1]["entries"]] == list(
        range(1, 403)
    )


def test_a_large_segment_is_read_a_chunk_at_a_time(long_segment, capsys, monkeypatch):
    """Read from the file in chunks (characters cut by them, a ``"type"`` key
    cut too), the segment shows as parsed whole; never held whole."""
    whole = _show(capsys, long_segment)
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 2_000)
    monkeypatch.setattr(entry_stream, "MANY_ENTRIES", 5)
    monkeypatch.setattr(entry_stream, "READ_SIZE", 61)
    reads: list[int] = []
    chunks = Database.blob_chunks

    def counted(self, *args):
        for chunk in chunks(self, *args):
            reads.append(len(chunk))
            yield chunk

    monkeypatch.setattr(Database, "blob_chunks", counted)
    monkeypatch.setattr(Database, "read_blob", None)  # never the whole value
    assert _show(capsys, long_segment) == whole
    assert reads and max(reads) == 61
    [(row_id, raw)] = stored_r1(long_segment)
    db = asyncio.run(open_database(long_segment, readonly=True))
    try:
        value = entry_stream.stored_value(db, row_id)
        assert value is not None and len(value) == len(raw)
        assert 5 < entry_stream.entries_hint(value) < 402  # enough to choose: many
        monkeypatch.setattr(entry_stream, "MANY_ENTRIES", 1_000)
        assert entry_stream.entries_hint(value) == entry_stream.entries_hint(raw) == 402
    finally:
        asyncio.run(db.close())


async def test_a_segment_rewound_while_it_is_read_is_refused(long_segment):
    """Chunks are reads of their own: lovia rewinding the segment between two
    of them is seen (its size changes), never read as a mix of both."""
    db = await open_database(long_segment, readonly=True)
    try:
        [(row_id, _)] = stored_r1(long_segment)
        chunks = db.blob_chunks("session_runs", "entries_json", row_id, 100)
        next(chunks)
        await SQLiteSession(long_segment).rewind("s", keep_entries=10)
        with pytest.raises(LoviaTuiError, match="changed while it was read"):
            list(chunks)
    finally:
        await db.close()


def test_an_unknown_entry_deep_in_a_streamed_segment_is_shown_as_stored(
    long_segment, capsys, streamed_small
):
    with sqlite3.connect(long_segment) as conn:  # a hostile row, as no lovia writes it
        conn.execute(
            "UPDATE session_runs SET entries_json = json_set(entries_json, "
            "'$[300].type', 'mystery') WHERE run_id = 'r1'"
        )
    conn.close()
    shown = _show(capsys, long_segment)
    segment = shown["segments"][1]
    assert "unreadable" not in segment
    assert [e["type"] for e in segment["entries"]].count("mystery") == 1


def test_the_stream_checks_as_the_parser_does(streamed_small):
    pad = b" " * 3_000
    for raw in (b'{"type": "input"}' + pad, b"[1, 2]" + pad, b'[{"type": 7}]' + pad):
        with pytest.raises(UnreadableError) as streamed:
            entry_stream.check_stream(raw)
        with pytest.raises(UnreadableError) as parsed:
            parse_entries(raw)
        assert str(streamed.value) == str(parsed.value)
    # An entry of a type lovia does not know (a newer lovia's) reads in both.
    unknown = b'[{"type": "x"}]' + pad
    assert list(entry_stream.read_entries(unknown)) == parse_entries(unknown)
    with pytest.raises(UnreadableError, match="invalid JSON"):
        entry_stream.check_stream(b'[{"type": "input"' + pad)
    # Invalid UTF-8 reads as the text factory decodes it, cut reads or not.
    raw = b'[{"type": "assistant_text", "content": "caf\xe9 \xc3\xa9"}' + pad + b"]"
    monkey = entry_stream.READ_SIZE
    try:
        entry_stream.READ_SIZE = 7
        [entry] = entry_stream.iter_entries(raw)
    finally:
        entry_stream.READ_SIZE = monkey
    assert entry["content"] == "caf\ufffd é"


def test_json_bytes_are_escaped_as_json_text_is():
    """The streamed writer escapes orjson's bytes exactly as ``printable_json``
    escapes text, for every character around the ranges it acts on."""
    from lovia_tui.core.formatting import printable_json, printable_json_bytes

    ranges = [range(0x20, 0x3000), range(0xFE00, 0x10000), range(0xDFFFF, 0xE0100)]
    for code in (c for r in ranges for c in r if not 0xD800 <= c <= 0xDFFF):
        dumped = json.dumps(f"a{chr(code)}b", ensure_ascii=False)
        assert printable_json_bytes(dumped.encode()) == printable_json(dumped).encode()


@pytest.mark.parametrize("counted_by", ["sqlite", "stream"])
async def test_a_segment_held_in_part_is_refused_whole_for_a_bad_entry(
    long_segment, streamed_small, monkeypatch, counted_by
):
    """The app's part of a large segment (its first and last entries) is read
    with the checks of the whole parse: a bad entry in the part not held
    still makes the segment unreadable, as lovia would find it (read on its
    own, or kept by the pass that counted it)."""
    from lovia_tui.core.store import segment_reads

    monkeypatch.setattr(segment_parts, "HELD_ENTRIES", 20)
    if counted_by == "stream":  # the listing's pass keeps the part
        monkeypatch.setattr(segment_reads, "COUNT_IN_SQL_UP_TO", 0)
    with contextlib.closing(sqlite3.connect(long_segment)) as conn, conn:
        conn.execute(  # a hostile row, as no lovia writes it
            "UPDATE session_runs SET entries_json = json_set(entries_json, "
            "'$[300]', 42) WHERE run_id = 'r1'"
        )
    db = await open_database(long_segment, readonly=True)
    try:
        await segment_reads.flat_starts(db, "s")  # as the app counts, then reads again
        segments, _ = await segment_reads.newest_segments(db, "s", 30)  # the app's
        assert segment_parts.held_in_part(segments[1])
        found = await segment_reads.batch_entries(db, segments)
    finally:
        await db.close()
    assert isinstance(found[segments[1].row_id], UnreadableError)
    assert "entry 300 is not an object" in str(found[segments[1].row_id])


async def test_a_large_segment_shows_its_first_entries_before_it_is_counted(
    long_segment, streamed_small, monkeypatch
):
    """A large run listed before any pass counted it is left uncounted and
    its first entries are read alone (a million entries took 6 s to count
    before a row showed); the pass that counts it for the flat indices keeps
    the part the app holds, so reading it again is no pass of its own, and
    that part is the one a read of its own would give."""
    from lovia_tui.core.store import segment_reads

    monkeypatch.setattr(segment_parts, "HELD_ENTRIES", 20)
    monkeypatch.setattr(segment_reads, "COUNT_IN_SQL_UP_TO", 0)
    passes = 0
    chunks = Database.blob_chunks

    def counted(self, *args):
        nonlocal passes
        passes += 1
        yield from chunks(self, *args)

    [(_, raw)] = stored_r1(long_segment)
    stored = json.loads(raw)
    db = await open_database(long_segment, readonly=True)
    try:
        listed, _ = await segment_reads.newest_segments(db, "s", 30)  # the app's
        assert listed[1].uncounted and listed[1].entry_count is None
        assert segment_parts.held_in_part(listed[1])
        head = (await segment_reads.batch_entries(db, listed))[listed[1].row_id]
        assert isinstance(head, segment_parts.SegmentPart)
        assert [e.data for e in head.first] == stored[:10] and not head.last
        starts = await segment_reads.flat_starts(db, "s")  # counts, keeps the part
        assert starts == {listed[0].row_id: 0, listed[1].row_id: 1}
        segments, _ = await segment_reads.newest_segments(db, "s", 30)
        assert segments[1].entry_count == 402 and not segments[1].uncounted
        monkeypatch.setattr(Database, "blob_chunks", counted)
        kept = (await segment_reads.batch_entries(db, segments))[segments[1].row_id]
        assert passes == 0  # the counting pass kept it
        assert (await segment_reads.segments(db, "s"))[1].entry_count == 402
        again = (await segment_reads.batch_entries(db, segments))[segments[1].row_id]
        assert passes > 0  # taken once: read afresh
    finally:
        await db.close()
    assert kept == again
    assert isinstance(kept, segment_parts.SegmentPart) and kept.skipped == 382
    assert [e.data for e in kept.first + kept.last] == stored[:10] + stored[-10:]
