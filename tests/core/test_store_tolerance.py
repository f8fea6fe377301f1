"""Tolerance by store, as lovia has it: a store a newer lovia wrote is refused
alone (one line) and the rest of the file is shown; an entry of a type the
installed lovia does not know is shown as stored and never hides its segment,
while the actions, like lovia's own methods, refuse to load it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.exceptions import LoviaError
from support.cli_errors import without_json_error
from support.lovia_factory import SCRIPTS, copy_db, integrity, raw, rows, write_session

from lovia_tui.cli import main
from lovia_tui.core.actions.session_plans import preview_rewind
from lovia_tui.core.doctor.audit import file_info
from lovia_tui.core.errors import ActionError, OpenError
from lovia_tui.core.lovia_facts import installed
from lovia_tui.core.store import database, segment_reads
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import RowKind
from lovia_tui.view.rows import Row
from lovia_tui.widgets.transcript_rows import detail_lines, summary_line

pytestmark = pytest.mark.usefixtures("private_journal")


def newer(path: Path, store: str) -> None:
    """What a newer lovia leaves: the store's version past the installed one's."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO lovia_schema (store, version) VALUES (?, ?)",
            (store, installed().versions[store] + 1),
        )
        conn.commit()


async def both_stores(path: Path) -> Path:
    """Session "s" (SCRIPTS) with its completed checkpoints kept, in one file."""
    await write_session(path, "s", SCRIPTS, checkpoint_path=path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS lovia_schema "
            "(store TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        conn.commit()
    return path


def write(path: Path, *statements: str) -> None:
    """Another writer's raw statements, committed."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for statement in statements:
            conn.execute(statement)
        conn.commit()


@contextlib.asynccontextmanager
async def only_database(path: Path) -> AsyncIterator[Database]:
    """``path`` opened read-only, alone: its one database."""
    ws = await Workspace.open([path], readonly=True)
    try:
        [db] = ws.databases
        yield db
    finally:
        await ws.close()


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


async def test_a_newer_store_is_refused_alone_as_lovia_refuses_it(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = await both_stores(scratch / "mixed.db")
    newer(path, "checkpoint")
    # lovia: the checkpointer refuses, the session store reads on.
    with pytest.raises(LoviaError, match="newer than this lovia knows"):
        await SQLiteCheckpointer(copy_db(path, scratch / "copy.db")).load("s-0")
    lovia_segments = await SQLiteSession(scratch / "copy.db").segments("s")

    ws = await Workspace.open([path], readonly=True)
    try:
        [db] = ws.databases
        assert (db.stores.session, db.stores.checkpoint) == (True, False)
        assert db.stores.refused == {"checkpoint"}
        assert db.notice is not None and "checkpoint tables" in db.notice
        ours = await segment_reads.segments(db, "s")
    finally:
        await ws.close()
    assert [s.run_id for s in ours] == [s.run_id for s in lovia_segments]

    code, out, err = await asyncio.to_thread(cli, capsys, "sessions", path, "--json")
    assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == ["s"]
    [line] = err.splitlines()
    assert str(path) in line and "newer than the installed lovia knows" in line
    code, out, err = await asyncio.to_thread(cli, capsys, "runs", path, "--json")
    assert (code, json.loads(out)) == (0, {"runs": []})
    assert raw(path, "PRAGMA integrity_check") == [("ok",)]


async def test_tables_named_in_another_case_are_lovias_and_acted_on(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite compares names in ASCII case: lovia reads and writes a
    ``SESSION_RUNS`` table as its ``session_runs`` (a ``Session_Id`` column as
    its ``session_id``), and so does lovia-tui."""
    path = await both_stores(scratch / "upper.db")
    for table in ("session_runs", "snapshot_heads", "snapshot_turns"):
        write(
            path,
            f"ALTER TABLE {table} RENAME TO renamed",
            f"ALTER TABLE renamed RENAME TO {table.upper()}",
        )
    for table, column in (
        ("session_runs", "session_id"),
        ("snapshot_heads", "head_json"),
    ):
        write(
            path,
            f"ALTER TABLE {table} RENAME COLUMN {column} TO renamed",
            f"ALTER TABLE {table} RENAME COLUMN renamed TO {column.title()}",
        )
    lovia_entries = await SQLiteSession(copy_db(path, scratch / "copy.db")).load("s")

    code, out, _ = await asyncio.to_thread(cli, capsys, "sessions", path, "--json")
    assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == ["s"]
    code, out, _ = await asyncio.to_thread(cli, capsys, "show", path, "s", "--json")
    segments = json.loads(out)["segments"]
    assert code == 0 and sum(s["entry_count"] for s in segments) == len(lovia_entries)
    code, out, _ = await asyncio.to_thread(cli, capsys, "runs", path, "--json")
    assert code == 0 and len(json.loads(out)["runs"]) == len(SCRIPTS)

    before = rows(path)
    code, _, _ = await asyncio.to_thread(
        cli, capsys, "rewind", path, "s", "--keep", 3, "--yes"
    )
    assert code == 0 and len(await SQLiteSession(path).load("s")) == 3
    code, _, _ = await asyncio.to_thread(cli, capsys, "undo", path, "--yes")
    assert code == 0 and rows(path) == before and integrity(path) == "ok"


def test_a_view_named_as_lovias_table_is_named_not_called_foreign(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A view bears lovia's table name (lovia reads it, has no rowid to read
    it by): the one line says so, not that the file has no such table."""
    path = scratch / "view.db"
    write(
        path,
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, session_id TEXT, run_id TEXT, "
        "entries_json TEXT, meta_json TEXT, created_at REAL)",
        "CREATE VIEW Session_Runs AS SELECT * FROM runs",
    )
    code, out, err = cli(capsys, "sessions", path, "--readonly")
    assert (code, out) == (2, "")
    assert err == (
        f"lovia-tui: {path}: session_runs is a view, not a table as lovia makes it "
        "(lovia-tui reads lovia's tables by rowid); not shown\n"
    )


async def test_a_web_file_with_newer_chat_tables_shows_its_sessions(
    web_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newer(web_file, "chat")
    ws = await Workspace.open([web_file])
    try:
        [db] = ws.databases
        assert (db.stores.session, db.stores.checkpoint, db.stores.chat) == (
            True,
            True,
            False,
        )
        assert [r.run_id for r in await ws.runs_named(["inflight"])] == ["inflight"]
    finally:
        await ws.close()
    code, out, err = await asyncio.to_thread(cli, capsys, "show", web_file, "chat")
    assert code == 0 and "web UI tables are at schema version" in err


async def test_a_schema_version_lovia_cannot_read_refuses_that_store_alone(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A version another writer left as a blob or text: lovia's ``int()``
    fails on it, so that store is refused; the others are shown."""
    path = await both_stores(scratch / "odd.db")
    write(path, "INSERT OR REPLACE INTO lovia_schema VALUES ('checkpoint', X'00')")
    async with only_database(path) as db:
        assert (db.stores.session, db.stores.checkpoint) == (True, False)
        assert db.notice is not None and "not a number" in db.notice
        info = await file_info(db)
        assert (info.stores, info.schema_versions) == (("session",), {})
    code, out, err = await asyncio.to_thread(cli, capsys, "doctor", path, "--json")
    assert code == 0 and json.loads(out) == {"findings": []} and "not a number" in err
    write(path, "INSERT OR REPLACE INTO lovia_schema VALUES ('session', 'two')")
    code, out, err = await asyncio.to_thread(cli, capsys, "sessions", path, "--json")
    assert code == 2 and "not a number" in err
    assert without_json_error(["--json"], out, err) == ""
    assert raw(path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_schema_table_another_writer_made_without_rowid_is_read(
    scratch: Path,
) -> None:
    """lovia_schema is read in its scan order: a table with no rowid reads too."""
    path = await both_stores(scratch / "norowid.db")
    write(
        path,
        "DROP TABLE lovia_schema",
        "CREATE TABLE lovia_schema (store TEXT PRIMARY KEY, version INTEGER) "
        "WITHOUT ROWID",
        "INSERT INTO lovia_schema VALUES ('checkpoint', X'00')",
    )
    async with only_database(path) as db:
        assert (db.stores.session, db.stores.checkpoint) == (True, False)


async def test_a_file_that_fails_to_open_leaves_no_connection_open(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong while a file is opened, its connection is closed:
    aiosqlite's thread would keep the process alive (a CLI that never exits)."""
    path = await both_stores(scratch / "s.db")
    threads = threading.active_count()

    def broken(*args: object) -> dict[str, str]:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(database, "refusals", broken)
    with pytest.raises(RuntimeError, match="unexpected"):
        await Workspace.open([path], readonly=True)
    for _ in range(100):  # a closed connection's thread ends just after
        if threading.active_count() == threads:
            break
        await asyncio.sleep(0.02)
    assert threading.active_count() == threads


async def unknown_entry_session(path: Path) -> Path:
    """Session "s" whose first segment holds an entry a newer lovia wrote."""
    await write_session(path, "s", SCRIPTS[:2])
    [(row_id, stored)] = raw(
        path, "SELECT id, entries_json FROM session_runs ORDER BY id LIMIT 1"
    )
    entries = json.loads(stored)
    entries.insert(1, {"type": "citation", "url": "https://example.com/\x1b[31m"})
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "UPDATE session_runs SET entries_json = ? WHERE id = ?",
            (json.dumps(entries), row_id),
        )
        conn.commit()
    return path


async def test_an_unknown_entry_type_is_shown_as_stored(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = await unknown_entry_session(scratch / "app.db")
    # lovia cannot load the session at all.
    with pytest.raises(ValueError, match="Unknown entry type"):
        await SQLiteSession(copy_db(path, scratch / "copy.db")).segments("s")
    ws = await Workspace.open([path])
    try:
        db = ws.database(path)
        first, second = await segment_reads.segments(db, "s")
        assert first.unreadable is None and first.entry_count == 5
        entries = await segment_reads.segment_entries(db, first)
        with pytest.raises(ActionError, match="'citation'.* lovia cannot rewind"):
            await preview_rewind(ws, "s", 2)
    finally:
        await ws.close()
    unknown = entries[1]
    assert unknown.data["type"] == "citation"
    row = Row(RowKind.ENTRY, "k", entry=unknown)
    assert (row.label, row.component) == ("unknown", "transcript--unknown")
    line = summary_line(row, [row], False).plain
    assert '"type": "citation"' in line and "\x1b" not in line
    assert any('"url"' in text.plain for text in detail_lines(row, False, False))
    code, out, _ = await asyncio.to_thread(cli, capsys, "show", path, "s", "--json")
    shown = json.loads(out)
    assert code == 0 and "citation" in json.dumps(shown)
    assert raw(path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_file_with_another_name_is_not_opened(tmp_path: Path) -> None:
    """A hard link: SQLite finds a hot journal only under the name it opens,
    so through another name a writer's unfinished transaction was read past
    (shown as stored) and a write there corrupted the file once lovia rolled
    that transaction back by the real name. Refused, read-only too."""
    path = tmp_path / "real.db"
    await write_session(path, "s", SCRIPTS[:1])
    other = tmp_path / "other.db"
    other.hardlink_to(path)
    before = path.read_bytes()
    for name in (path, other):
        for readonly in (False, True):
            with pytest.raises(OpenError) as caught:
                await Workspace.open([name], readonly=readonly)
            assert "has 2 names (hard links)" in str(caught.value)
    assert path.read_bytes() == before  # not even switched to WAL
    other.unlink()
    workspace = await Workspace.open([path], readonly=True)  # one name: opened
    await workspace.close()
