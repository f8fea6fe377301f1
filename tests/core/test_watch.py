"""Live tail: a real lovia agent in another process writes, the tail follows.

Subprocess tests use ``agents/slow_writer.py`` (SQLiteSession +
SQLiteCheckpointer, WAL). The tail's own logic (rowid reuse, deletions,
stores appearing) is driven by a plain second connection mirroring lovia's
statements, which keeps those cases exact and fast.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import watchfiles
from support.agents.slow_writer import SlowWriter

from lovia_tui.core.entries import dangling_calls
from lovia_tui.core.live import heads, tail
from lovia_tui.core.live.changes import (
    ChangeFeed,
    Changes,
    HeadChange,
    NewSegment,
    RunEntries,
)
from lovia_tui.core.live.tail import (
    Tail,
    live_changes,
    new_snapshot_entries,
)
from lovia_tui.core.live.watch import CommitWatch
from lovia_tui.core.models import Entry
from lovia_tui.core.store import checkpoint_reads, segment_reads
from lovia_tui.core.store.database import Database, open_database

SESSION = "live"
# Another process: rewinds the session to each keep_entries read from stdin.
REWINDER = """
import asyncio, sys
from lovia import SQLiteSession

async def main():
    session = SQLiteSession(sys.argv[1], wal=True)
    print("READY", flush=True)
    while line := await asyncio.to_thread(sys.stdin.readline):
        print(await session.rewind(sys.argv[2], keep_entries=int(line)), flush=True)

asyncio.run(main())
"""
# lovia 0.9's tables, for the tests that write with a plain connection.
SCHEMA = {
    "session": """
        CREATE TABLE session_runs (
          id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
          run_id TEXT NOT NULL, entries_json TEXT NOT NULL, meta_json TEXT,
          created_at REAL NOT NULL, UNIQUE(session_id, run_id));
        CREATE INDEX idx_session_runs_sid ON session_runs(session_id, id);""",
    "checkpoint": """
        CREATE TABLE snapshot_heads (
          run_id TEXT PRIMARY KEY, head_json TEXT NOT NULL, updated_at REAL NOT NULL);
        CREATE TABLE snapshot_turns (
          run_id TEXT NOT NULL, seq INTEGER NOT NULL, entries_json TEXT NOT NULL,
          PRIMARY KEY (run_id, seq));""",
}


WAIT = 30.0
"""Bound of every wait here: a child process importing lovia on a loaded
machine takes seconds; the bound only ends a test that would hang."""


async def wait_until(predicate: Callable[[], bool], timeout: float = WAIT) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)  # bounded


@dataclass
class Seen:
    """Everything a live worker received."""

    batches: list[Changes] = field(default_factory=list)
    merged: Changes = field(default_factory=Changes)

    def statuses(self, run_id: str) -> list[str]:
        return [h.status for b in self.batches for h in b.heads if h.run_id == run_id]

    def run_batches(self, run_id: str) -> list[RunEntries]:
        return [
            b.run_entries
            for b in self.batches
            if b.run_entries and b.run_entries.run_id == run_id
        ]

    def entries(self, run_id: str) -> list[Entry]:
        return [e for batch in self.run_batches(run_id) for e in batch.entries]


@asynccontextmanager
async def collecting(commits: CommitWatch, cursor: Tail) -> AsyncIterator[Seen]:
    """Run the live loop in a task, as the UI's worker would, while the block runs."""
    seen = Seen()

    async def loop() -> None:
        async for changes in live_changes(commits, cursor):
            seen.batches.append(changes)
            seen.merged = seen.merged.merge(changes)

    task = asyncio.create_task(loop())
    try:
        yield seen
    finally:
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and task.exception():
            raise task.exception()  # the live loop died: that is the failure
    assert task.cancelled(), "the live loop ended on its own"


@pytest.fixture
async def writers() -> AsyncIterator[Callable[..., object]]:
    """Start slow writers; every one still alive is killed at teardown."""
    started: list[SlowWriter] = []

    async def start(*args: object, **kwargs: object) -> SlowWriter:
        writer = await SlowWriter.start(*args, **kwargs)
        started.append(writer)
        return writer

    yield start
    for writer in started:
        await writer.close()


@pytest.fixture
async def opened() -> AsyncIterator[Callable[[Path], object]]:
    dbs: list[Database] = []

    async def open_(path: Path) -> Database:
        dbs.append(await open_database(path))
        return dbs[-1]

    yield open_
    for db in dbs:
        await db.close()


@asynccontextmanager
async def rewinder(path: Path) -> AsyncIterator[Callable[[int], Awaitable[int]]]:
    """lovia's ``SQLiteSession.rewind`` in another process: ``await rewind(keep)``.

    The process starts (and imports lovia) while the block sets things up.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", REWINDER, str(path), SESSION,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip

    async def answer() -> str:
        return (await asyncio.wait_for(proc.stdout.readline(), WAIT)).decode().strip()

    ready = asyncio.ensure_future(answer())

    async def rewind(keep_entries: int) -> int:
        assert await ready == "READY"
        proc.stdin.write(f"{keep_entries}\n".encode())
        return int(await answer())

    try:
        yield rewind
    finally:
        ready.cancel()
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), WAIT)


@pytest.mark.parametrize("force_polling", [False, True], ids=["watching", "polling"])
async def test_follows_a_live_run_until_its_session_row(
    tmp_path, writers, opened, force_polling
):
    path = tmp_path / "live.db"
    writer = await writers(path, "run-1", 3, 0.15)
    db = await opened(path)
    cursor = await Tail.start(db)
    cursor.follow_run("run-1")
    commits = CommitWatch(db, force_polling=force_polling)
    assert commits.mode == ("polling" if force_polling else "watching")

    async with collecting(commits, cursor) as seen:
        writer.go()
        await writer.expect("TOOL 0")
        await wait_until(lambda: seen.statuses("run-1"))
        await writer.expect("DONE")
        await wait_until(lambda: SESSION in seen.merged.session_ids)

    stored = await new_snapshot_entries(db, "run-1")
    assert [e.data for e in seen.entries("run-1")] == [e.data for e in stored.entries]
    assert [e.kind for e in seen.entries("run-1")] == (
        ["input"] + ["tool_call", "tool_result"] * 3 + ["assistant_text"]
    )
    batches = seen.run_batches("run-1")
    assert [b.after_seq for b in batches[1:]] == [b.last_seq for b in batches[:-1]]
    statuses = seen.statuses("run-1")
    assert statuses[0] == "running" and statuses[-1] == "completed"
    assert set(statuses) == {"running", "completed"}
    [segment] = seen.merged.segments
    assert (segment.session_id, segment.run_id) == (SESSION, "run-1")
    assert not seen.merged.sessions_changed and not seen.merged.runs_removed


async def test_killed_run_stays_running_then_goes_stale(tmp_path, writers, opened):
    path = tmp_path / "crash.db"
    writer = await writers(path, "run-k", 2, 60)
    db = await opened(path)
    cursor = await Tail.start(db)
    cursor.follow_run("run-k")

    async with collecting(CommitWatch(db), cursor) as seen:
        writer.go()
        await writer.expect("TOOL 0")  # saved for good: the tool sleeps a minute
        [run] = await checkpoint_reads.runs(db, ["run-k"])
        # A poll reads the heads, then the run's entries: a commit between
        # them shows its entries first and its head on the next poll.
        await wait_until(
            lambda: (
                len(seen.entries("run-k")) == 2
                and [h.updated_at for b in seen.batches for h in b.heads][-1:]
                == [run.updated_at]
            )
        )
        await writer.close()

    assert run.status == "running" and set(seen.statuses("run-k")) == {"running"}
    assert [
        c.name for c in dangling_calls([e.data for e in seen.entries("run-k")])
    ] == ["pause"]
    await wait_until(lambda: run.is_stale(time.time(), stale_after=0.3), timeout=3)
    assert (await cursor.poll()).empty  # nothing was saved after the kill


async def _newest(db: Database, session_id: str, count: int) -> tuple[list, int]:
    """The newest ``count`` segments as the transcript lists them, and the session's total."""
    shown, older = await segment_reads.newest_segments(db, session_id, count)
    return shown, older + len(shown)


async def test_rewind_by_another_process_is_reported(tmp_path, writers, opened):
    path = tmp_path / "rewind.db"
    async with rewinder(path) as rewind:
        writer = await writers(path, "run-1,run-2", 1, 0)
        writer.go()
        await writer.expect("DONE")  # segments: [q call result a] [q call result a]
        db = await opened(path)
        cursor = await Tail.start(db)
        cursor.follow_session(
            SESSION, *await _newest(db, SESSION, 1)
        )  # run-2's segment
        async with collecting(CommitWatch(db), cursor) as seen:
            assert await rewind(5) == 3  # truncates run-2's segment in place
            await wait_until(lambda: seen.merged.rewritten_sessions)
            assert not seen.merged.sessions_changed
            assert await rewind(2) == 4  # deletes run-2's row, truncates run-1's
            await wait_until(lambda: seen.merged.sessions_changed)

    assert seen.merged.rewritten_sessions == {SESSION}
    assert [s.entry_count for s in await segment_reads.segments(db, SESSION)] == [1]


async def test_falls_back_to_polling_when_watching_fails(tmp_path, opened, monkeypatch):
    def broken_awatch(*args: object, **kwargs: object) -> object:
        raise OSError("inotify unavailable")

    monkeypatch.setattr(watchfiles, "awatch", broken_awatch)  # imported when watching
    path = make_db(tmp_path / "poll.db", "session")
    db = await opened(path)
    commits = CommitWatch(db)
    assert commits.mode == "watching"
    wakes = aiter(commits.commits())
    first = await asyncio.wait_for(anext(wakes), 5)  # at once: the baseline
    with sqlite3.connect(path) as other:
        add_segment(other, "s1", "r1")
    assert await asyncio.wait_for(anext(wakes), 5) != first
    await wakes.aclose()
    assert commits.mode == "polling" and "inotify unavailable" in (commits.reason or "")


async def test_rollback_journal_commits_are_seen(tmp_path):
    """Without WAL a commit writes the file itself (and creates/deletes -journal)."""
    path = tmp_path / "journal.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA["session"])
    db = await open_database(path, readonly=True)  # read-only: no switch to WAL
    try:
        assert db.journal_mode == "delete"
        commits = CommitWatch(db)
        wakes = aiter(commits.commits())
        first = await asyncio.wait_for(anext(wakes), 5)
        with sqlite3.connect(path) as other:
            add_segment(other, "s1", "r1")
        assert await asyncio.wait_for(anext(wakes), 5) != first
        await wakes.aclose()
        assert commits.mode == "watching"
    finally:
        await db.close()


async def test_commits_end_when_stop_is_set(tmp_path, opened):
    db = await opened(make_db(tmp_path / "stop.db", "session"))
    stop = asyncio.Event()

    async def drain() -> None:
        async for _ in CommitWatch(db).commits(stop):
            pass

    task = asyncio.create_task(drain())
    await asyncio.sleep(0)  # bounded: one yield to the loop, not a wait
    stop.set()
    await asyncio.wait_for(task, 2)


async def test_heads_saved_deleted_and_rowid_reused(tmp_path, opened):
    path = make_db(tmp_path / "heads.db", "session", "checkpoint")
    other = sqlite3.connect(path, isolation_level=None)
    save_head(other, "a", "running")
    save_head(other, "b", "running")
    cursor = await Tail.start(await opened(path))
    assert (await cursor.poll()).empty

    save_head(other, "b", "completed")
    changes = await cursor.poll()
    assert [(h.run_id, h.status) for h in changes.heads] == [("b", "completed")]

    # Deleting the highest rowid lets SQLite give a new head a rowid we passed.
    top = other.execute("SELECT MAX(rowid) FROM snapshot_heads").fetchone()[0]
    other.execute("DELETE FROM snapshot_heads WHERE run_id = 'b'")
    save_head(other, "c", "running")
    reused = other.execute("SELECT rowid FROM snapshot_heads WHERE run_id = 'c'")
    assert reused.fetchone()[0] < top
    changes = await cursor.poll()
    assert changes.runs_removed
    assert [(h.run_id, h.status) for h in changes.heads] == [("c", "running")]

    other.execute("DELETE FROM snapshot_heads WHERE run_id = 'a'")
    other.execute("INSERT INTO snapshot_heads VALUES ('d', '{not json', 1.0)")
    changes = await cursor.poll()
    assert changes.runs_removed
    assert changes.heads == (HeadChange("d", "unreadable", 1.0),)
    save_head(other, "d", "running")
    changes = await cursor.poll()
    assert not changes.runs_removed and [h.run_id for h in changes.heads] == ["d"]


async def test_heads_are_followed_in_bounded_memory(tmp_path, opened, monkeypatch):
    """A fleet's file holds a million heads: the tail remembers the newest few,
    yet lists every save, a save reusing a deleted head's rowid included, and
    asks for a reload when it cannot list them."""
    monkeypatch.setattr(heads, "RECENT_HEADS", 3)
    path = make_db(tmp_path / "fleet.db", "checkpoint")
    other = sqlite3.connect(path, isolation_level=None)
    for n in range(20):
        save_head(other, f"run-{n}", "completed")
    cursor = await Tail.start(await opened(path))
    assert len(cursor._heads.recent) == 3

    save_head(other, "run-0", "running")  # older than memory: still a save
    changes = await cursor.poll()
    assert [(h.run_id, h.status) for h in changes.heads] == [("run-0", "running")]

    other.execute("DELETE FROM snapshot_heads WHERE run_id = 'run-0'")
    save_head(other, "run-5", "failed")  # takes the deleted top's rowid
    changes = await cursor.poll()
    assert [(h.run_id, h.status) for h in changes.heads] == [("run-5", "failed")]
    assert changes.runs_removed and not changes.stores_changed
    assert len(cursor._heads.recent) == 3

    other.execute("DELETE FROM snapshot_heads WHERE run_id = 'run-7'")  # below memory
    changes = await cursor.poll()
    assert changes.runs_removed and not changes.heads

    top = other.execute("SELECT MAX(rowid) FROM snapshot_heads").fetchone()[0]
    other.execute("DELETE FROM snapshot_heads WHERE rowid > ?", (top - 5,))
    save_head(other, "after-bulk-delete", "running")  # below all it remembered
    changes = await cursor.poll()
    assert changes.stores_changed  # cannot tell which rows are new: reload
    save_head(other, "next", "running")
    changes = await cursor.poll()
    assert [h.run_id for h in changes.heads] == ["next"] and not changes.stores_changed


async def test_segments_appended_deleted_and_too_many(tmp_path, opened, monkeypatch):
    path = make_db(tmp_path / "segments.db", "session")
    other = sqlite3.connect(path, isolation_level=None)
    add_segment(other, "s1", "r1")
    cursor = await Tail.start(await opened(path))

    add_segment(other, "s2", "r2")
    changes = await cursor.poll()
    assert (
        changes.segments == (NewSegment(2, "s2", "r2"),)
        and not changes.sessions_changed
    )

    other.execute("DELETE FROM session_runs WHERE id = 1")
    assert (await cursor.poll()).sessions_changed

    monkeypatch.setattr(tail, "NEW_SEGMENTS_LIMIT", 2)
    for n in range(3):
        add_segment(other, "s3", f"bulk-{n}")
    changes = await cursor.poll()
    assert changes.segments == () and changes.sessions_changed
    add_segment(other, "s3", "after")
    assert [s.run_id for s in (await cursor.poll()).segments] == ["after"]


async def test_store_created_after_opening(tmp_path, opened):
    path = make_db(tmp_path / "late.db", "session")
    db = await opened(path)
    cursor = await Tail.start(db)
    other = sqlite3.connect(path, isolation_level=None)
    other.executescript(SCHEMA["checkpoint"])
    save_head(other, "late", "running")
    changes = await cursor.poll()
    assert changes.stores_changed and db.stores.checkpoint
    assert [h.run_id for h in changes.heads] == ["late"]


def test_merge_keeps_every_delta_and_the_latest_head():
    def entries(after: int, last: int) -> RunEntries:
        return RunEntries(
            "r", after, last, (Entry(None, {"type": "input", "n": last}),)
        )

    first = Changes(
        heads=(HeadChange("r", "running", 1.0), HeadChange("x", "running", 1.0)),
        run_entries=entries(-1, 0),
        segments=(NewSegment(1, "s", "q"),),
    )
    later = Changes(
        heads=(HeadChange("r", "completed", 2.0),),
        runs_removed=True,
        run_entries=entries(0, 3),
    )
    merged = first.merge(later)
    assert merged.heads == (
        HeadChange("x", "running", 1.0),
        HeadChange("r", "completed", 2.0),
    )
    assert merged.runs_removed
    assert merged.run_entries == RunEntries(
        "r", -1, 3, first.run_entries.entries + later.run_entries.entries
    )
    assert merged.segments == first.segments

    feed = ChangeFeed()
    assert feed.put(first) and not feed.put(later)
    assert feed.take() == merged and feed.take().empty


def make_db(path: Path, *stores: str) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        for store in stores:
            conn.executescript(SCHEMA[store])
    return path


def add_segment(conn: sqlite3.Connection, session_id: str, run_id: str) -> None:
    conn.execute(
        "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
        "VALUES (?, ?, '[]', 0)",
        (session_id, run_id),
    )


def save_head(conn: sqlite3.Connection, run_id: str, status: str) -> None:
    """What lovia's SQLiteCheckpointer does for a save."""
    conn.execute(
        "INSERT OR REPLACE INTO snapshot_heads VALUES (?, ?, ?)",
        (run_id, f'{{"status": "{status}"}}', time.time()),
    )


async def test_the_session_watch_covers_the_segments_shown_and_no_more(
    tmp_path, opened
):
    """The view holds a window of a long session's segments; a rewrite inside
    it is reported, one outside is not (it would reload for nothing), and
    moving the window reports nothing by itself."""
    from lovia import SQLiteSession
    from support.lovia_factory import call, text, write_session

    path = tmp_path / "window.db"
    dumps = [
        [call("dump", {"lines": 60}, call_id=f"d{n}"), text("ok")] for n in range(3)
    ]
    await write_session(path, "w", dumps)
    store = SQLiteSession(path, wal=True)
    db = await opened(path)
    ids = [
        row_id
        for (row_id,) in await db.fetchall("SELECT id FROM session_runs ORDER BY id")
    ]
    cursor = await Tail.start(db)
    cursor.follow_session(
        "w", *await _newest(db, "w", 1)
    )  # the newest segment is shown

    assert await store.trim_tool_results("w", keep_chars=10, keep_runs=2)  # the oldest
    assert not (await cursor.poll()).rewritten_sessions
    await cursor.watch_older(1)  # the middle one comes into view
    assert not (await cursor.poll()).rewritten_sessions
    assert await store.trim_tool_results("w", keep_chars=10, keep_runs=1)  # the middle
    assert (await cursor.poll()).rewritten_sessions == {"w"}
    await cursor.watch_ids(ids[0], ids[1])  # the newest leaves the view
    assert not (await cursor.poll()).rewritten_sessions
    assert await store.trim_tool_results("w", keep_chars=10, keep_runs=0)  # the newest
    assert not (await cursor.poll()).rewritten_sessions


async def test_a_session_of_any_script_is_not_reported_rewritten_by_itself(
    tmp_path, opened
):
    """The watch weighs the segments shown as the listing did (bytes, not
    characters): a session in Japanese, untouched, is not reloaded per poll."""
    from support.lovia_factory import text, write_session

    path = tmp_path / "kyoto.db"
    await write_session(path, "k", [[text("京都: 金閣寺 ☀️ 9:00")], [text("大阪 🍜")]])
    db = await opened(path)
    cursor = await Tail.start(db)
    cursor.follow_session("k", *await _newest(db, "k", 2))
    assert not (await cursor.poll()).rewritten_sessions
    await cursor.watch_older(1)
    assert not (await cursor.poll()).rewritten_sessions
