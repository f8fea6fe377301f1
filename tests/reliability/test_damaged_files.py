"""A damaged file is said to be damaged — never shown as empty, never changed.

Small files are checked by SQLite's ``quick_check`` as they open; any read
that meets ``SQLITE_CORRUPT``/``SQLITE_NOTADB`` later is tried once more on a
fresh connection (a long-lived one can hold a stale view), then the file is
called damaged: every command exits 2 with one line naming it, the app shows
one banner for it, no action changes it, and ``doctor --integrity`` says
which store is damaged.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.app import snapshot_app
from support.cli_errors import without_json_error
from support.damage import clobbered_page, swapped_pages, unindexed_segment
from support.reliability import digests

from lovia_tui.cli import main
from lovia_tui.core.actions.session_plans import preview_rewind
from lovia_tui.core.errors import ActionError, DamagedError
from lovia_tui.core.store import connect
from lovia_tui.core.store.database import Database, open_database
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.pilot import settle
from lovia_tui.widgets.status_line import StatusLine

COMMANDS = [
    ["sessions"],
    ["sessions", "--search", "kyoto"],
    ["show", "{db}", "chat-kyoto"],
    ["show", "{db}", "chat-kyoto", "--json"],
    ["runs"],
    ["search", "{db}", "kyoto"],
    ["export", "{db}", "chat-kyoto", "--format", "json"],
    ["doctor"],
    ["undo"],
    ["rewind", "{db}", "chat-kyoto", "--keep", "1"],
]


def _argv(command: list[str], db: Path) -> list[str]:
    argv = [part.replace("{db}", str(db)) for part in command]
    return argv if "{db}" in command else [argv[0], str(db), *argv[1:]]


@pytest.fixture(params=["swapped", "clobbered"])
def damaged(request, demo_dir, tmp_path) -> Path:
    make = swapped_pages if request.param == "swapped" else clobbered_page
    return make(demo_dir.web_db, tmp_path / "assistant.db")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_stops_on_a_damaged_file(damaged, command, capsys):
    argv = _argv(command, damaged)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert without_json_error(argv, out, err) == "" and err.count("\n") == 1, err
    assert str(damaged) in err and "damaged" in err, err


def test_a_large_damaged_file_stops_at_the_read_that_meets_the_damage(
    demo_dir, tmp_path, monkeypatch, capsys
):
    """Too large for the check at open: the first read of the damaged page."""
    monkeypatch.setattr(connect, "QUICK_CHECK_AT_OPEN_BYTES", 0)
    db = clobbered_page(demo_dir.web_db, tmp_path / "assistant.db")
    for command in (
        ["show", str(db), "chat-kyoto"],
        ["sessions", str(db)],
        ["runs", str(db), "--json"],  # streamed: nothing before its first row
        ["show", str(db), "chat-kyoto", "--json"],
    ):
        code = main(command)
        out, err = capsys.readouterr()
        assert code == 2 and without_json_error(command, out, err) == "", (out, err)
        assert f"{db}: damaged (" in err and err.count("\n") == 1, err


def test_doctor_integrity_names_the_damaged_store(damaged, capsys):
    code = main(["doctor", "--integrity", str(damaged), "--json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    [report] = json.loads(out)["files"]
    bad = {check["store"] for check in report["checks"] if not check["ok"]}
    assert "session" in bad and "checkpoint" not in bad and "web" not in bad
    assert not report["ok"]


def test_doctor_integrity_finds_a_segment_missing_from_its_index(
    demo_dir, tmp_path, capsys
):
    """An index that misses a row: `quick_check` called the file sound while
    the session showed a run less; the check is SQLite's `integrity_check`."""
    damaged = unindexed_segment(demo_dir.web_db, tmp_path / "assistant.db")
    code = main(["doctor", "--integrity", str(damaged), "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    [report] = json.loads(out)["files"]
    [session_runs] = [c for c in report["checks"] if c["table"] == "session_runs"]
    assert not session_runs["ok"] and "idx_session_runs_sid" in str(session_runs)


def test_doctor_integrity_on_a_file_whose_schema_does_not_read(
    demo_dir, tmp_path, capsys
):
    """Cut in half, the file's schema does not read: the check says so (it
    had answered with the line that sends the user to the check itself)."""
    data = demo_dir.web_db.read_bytes()
    cut = tmp_path / "assistant.db"
    cut.write_bytes(data[: len(data) // 2])
    code = main(["doctor", "--integrity", str(cut), "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    [report] = json.loads(out)["files"]
    assert not report["ok"] and [c["table"] for c in report["checks"]] == [
        "(the schema)"
    ]


def test_doctor_integrity_on_a_sound_file(demo_dir, capsys):
    code = main(["doctor", "--integrity", str(demo_dir.web_db)])
    out, _ = capsys.readouterr()
    assert code == 0 and "sound" in out


async def test_a_stale_connection_is_reopened_before_the_file_is_called_damaged(
    demo_dir, tmp_path, monkeypatch
):
    path = tmp_path / "assistant.db"
    path.write_bytes(demo_dir.web_db.read_bytes())
    db = await open_database(path, readonly=True)
    failures = iter([sqlite3.DatabaseError("database disk image is malformed")])
    real = connect.rows

    async def stale_once(conn, sql, params=(), cut=None):
        if (failure := next(failures, None)) is not None:
            raise failure
        return await real(conn, sql, params, cut)

    monkeypatch.setattr("lovia_tui.core.store.database.rows", stale_once)
    try:
        first = db.conn
        assert await db.fetchall("SELECT COUNT(*) FROM chat_sessions")
        assert db.conn is not first and db.damage is None
    finally:
        await db.close()


async def test_no_action_changes_a_file_called_damaged(demo_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(connect, "QUICK_CHECK_AT_OPEN_BYTES", 0)
    db_path = clobbered_page(demo_dir.web_db, tmp_path / "assistant.db")
    ws = await Workspace.open([db_path])  # switches the file to WAL, as any open
    before = digests(tmp_path)
    try:
        with pytest.raises(DamagedError):
            await ws.databases[0].fetchall("SELECT * FROM session_runs")
        assert ws.databases[0].damage
        with pytest.raises(ActionError, match="damaged"):
            await preview_rewind(ws, "chat-kyoto", 0)
    finally:
        await ws.close()
    assert digests(tmp_path) == before


async def test_the_app_shows_one_banner_for_a_damaged_file(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    notes: list[str] = []
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        real = Database.fetchall

        async def damaged(self, sql, params=(), *, cut=None):
            raise DamagedError(self.path, "database disk image is malformed")

        original_notify = app.notify

        def noting(message, *args, **kwargs):
            notes.append(str(message))
            return original_notify(message, *args, **kwargs)

        monkeypatch.setattr(app, "notify", noting)
        db = app.workspace.databases[0]
        db.damage = "database disk image is malformed"
        monkeypatch.setattr(Database, "fetchall", damaged)
        for _ in range(3):
            await pilot.press("ctrl+r")
            await settle(pilot)
        status = app.screen.query_one(StatusLine)
        assert status.has_class("-damaged")
        assert "snap.db is DAMAGED" in str(status.render())
        assert not [note for note in notes if "damaged" in note], notes
        # Readable again: Ctrl+R reads it on a new connection, the banner goes.
        monkeypatch.setattr(Database, "fetchall", real)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert not status.has_class("-damaged") and db.damage is None


async def test_a_blob_read_of_a_damaged_page_calls_the_file_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite says "malformed" as a DatabaseError, no operational error: a
    blob read (sizes, large values, chunks) of a page damaged since the open
    fails as every read does, so the file gets its banner, not a raw error."""
    from lovia import SQLiteSession
    from lovia.transcript import InputEntry

    path = tmp_path / "s.db"
    await SQLiteSession(path).append("s", [InputEntry("user", "hi")], run_id="r1")
    db = await open_database(path, readonly=True)
    try:
        [(row_id,)] = await db.fetchall("SELECT id FROM session_runs")
        real = db.thread_connection

        def damaged() -> _Wrapped:
            conn = real()

            def blobopen(*args: object, **kwargs: object) -> sqlite3.Blob:
                raise sqlite3.DatabaseError("database disk image is malformed")

            return _Wrapped(conn, blobopen)

        monkeypatch.setattr(db, "thread_connection", damaged)
        with pytest.raises(DamagedError):
            db.blob_sizes("session_runs", "entries_json", [row_id])
        assert db.damage == "database disk image is malformed"
    finally:
        await db.close()


class _Wrapped:
    """A connection whose ``blobopen`` is replaced."""

    def __init__(self, conn: sqlite3.Connection, blobopen) -> None:
        self._conn, self.blobopen = conn, blobopen

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


async def test_a_damaged_file_leaves_the_others_listed_and_says_what_it_could_not_read(
    demo_dir, tmp_path, monkeypatch
):
    """Files called damaged as their sessions and checkpoints are read: the
    other file's sessions and runs are still listed (and its sessions open),
    the banner names both; a session whose rows cannot be read says so in its
    title, never "loading…" for good over the rows of the one shown before."""
    from support.lovia_factory import copy_db

    from lovia_tui.app import make_app
    from lovia_tui.widgets.pane_title import PaneTitle

    web = copy_db(demo_dir.web_db, tmp_path / "assistant.db")
    cli = copy_db(demo_dir.sessions_db, tmp_path / "sessions.db")
    runs = copy_db(demo_dir.runs_db, tmp_path / "runs.db")
    broken = {cli.name: "session_runs", runs.name: "snapshot_heads"}
    real = Database.fetchall

    async def damaging(self, sql, params=(), *, cut=None):
        if (table := broken.get(self.path.name)) and table in sql:
            self.damage = "database disk image is malformed"
            raise DamagedError(self.path, self.damage)
        return await real(self, sql, params, cut=cut)

    monkeypatch.setattr(Database, "fetchall", damaging)
    app = make_app([web, cli, runs])
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        keys = screen.sessions.keys
        assert keys and {Path(file).name for file, _ in keys} == {web.name}
        assert len(screen.runs.source) > 0  # the web file's runs
        status = str(screen.query_one(StatusLine).render())
        assert "sessions.db is DAMAGED" in status and "runs.db is DAMAGED" in status
        first, second = keys[0], keys[1]
        screen.go_to_session(first)
        await settle(pilot)
        assert screen.transcript.rows
        broken[web.name] = "session_runs"
        screen.go_to_session(second)
        await settle(pilot)
        title = str(screen.query_one("#transcript-title", PaneTitle).render())
        assert f"{second[1]} · not read" in title and "loading" not in title
        assert not screen.transcript.rows
