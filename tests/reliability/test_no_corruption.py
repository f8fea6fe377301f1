"""The tool never damages a lovia file: no descriptor on a database but SQLite's.

SQLite's POSIX locks belong to the process and the inode: closing any other
descriptor of the file — a Python ``open()`` to sniff its header — drops every
lock the process's connections hold. The next process that connects and
closes then believes it was the last, checkpoints and deletes the ``-wal``
under the app, and the app's next write corrupts the file. A resume re-opens
the file the app already holds, so "in-app resume, then rewind" did exactly
that (``integrity_check``: "Rowid 18 out of order").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support import open_guard
from support.app import confirm, runs_look_crashed, snapshot_app, user_rows
from support.lovia_factory import copy_db, integrity
from support.reliability import until
from support.writer_process import wait_for, writer

from lovia_tui.cli.demo import DEMO_STALE_AFTER
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.store.connect import wal_path
from lovia_tui.core.store.database import open_database
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen
from lovia_tui.screens.preflight import PreflightScreen
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.run_console import RunConsole


def _commit_elsewhere(path: Path) -> None:
    """Another process connects, commits and closes: lovia's pattern per call."""
    code = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('CREATE TABLE IF NOT EXISTS other_process (x)'); "
        "c.execute('INSERT INTO other_process VALUES (1)'); c.commit(); c.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=30)


def test_the_guard_sees_a_python_open_of_a_database_by_the_tool(tmp_path):
    db = tmp_path / "some.db"
    sqlite3.connect(db).close()
    # Code compiled under the package's directory stands for the tool's own.
    probe = compile(
        "open(path, 'rb').read(16)",
        os.path.join(open_guard.PACKAGE_DIR, "probe.py"),
        "exec",
    )
    exec(probe, {"path": str(db)})
    try:
        assert len(open_guard.violations) == 1 and str(db) in open_guard.violations[0]
    finally:
        open_guard.violations.clear()
    # The same in a process the test starts, through sitecustomize.
    log = tmp_path / "guard.log"
    code = (
        "import os, sys; from support import open_guard; "
        "exec(compile('open(sys.argv[1], \"rb\").read(16)', "
        "os.path.join(open_guard.PACKAGE_DIR, 'probe.py'), 'exec'))"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(db)],
        check=True,
        timeout=60,
        env={**os.environ, open_guard.LOG_ENV: str(log)},
    )
    assert str(db) in log.read_text()


async def test_opening_a_file_again_keeps_the_first_connections_locks(tmp_path):
    """What a resume does beside the app: the file opened a second time."""
    from lovia import SQLiteSession

    path = tmp_path / "sessions.db"
    session = SQLiteSession(path, wal=True)
    await session.append("s", [], run_id="r0")
    first = await open_database(path)
    try:
        assert first.journal_mode == "wal"
        await first.fetchall("SELECT COUNT(*) FROM session_runs")
        second = await open_database(path, readonly=True)
        await second.close()
        _commit_elsewhere(path)
        assert wal_path(path).exists(), "another process deleted the -wal under us"
        await session.append("s", [], run_id="r1")
        rows = await first.fetchall("SELECT run_id FROM session_runs ORDER BY id")
        assert [row[0] for row in rows] == ["r0", "r1"]
    finally:
        await first.close()
    assert integrity(path) == "ok"


ACTING = (Group.ACTION, Group.CONSOLE, Group.TRANSCRIPT)
"""What each step waits for: the panes' other reloads never all rest while
the writer commits twenty times a second."""


async def test_resume_then_rewind_fork_and_trim_in_the_app_beside_a_writer(
    snap_dir, monkeypatch
):
    """The reported sequence, with a lovia writer committing from its own
    process and the search indexer running: the file stays sound after every
    step, and every row the writer committed is still there."""
    db = snap_dir / "snap.db"
    app = snapshot_app(snap_dir, monkeypatch, agent_spec="lovia_tui.demo:agent")
    with writer(db, "writer-session", snap_dir, pace=0.05) as committed:
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)
            await pilot.press("s", *"kyoto", "enter")  # starts the indexer process
            await settle(pilot)
            await pilot.press("escape")
            app.screen.go_to_run("run-crashed")  # the writer's own runs come and go
            await settle(pilot)
            await pilot.press("R")
            await until(pilot, lambda: isinstance(app.screen, PreflightScreen))
            await pilot.press("enter", "enter")
            console = app.screen.query_one(RunConsole)
            await until(pilot, lambda: not console.running, timeout=60)
            lines = [str(line.text) for line in console.query_one("#console-log").lines]
            assert any("completed" in line for line in lines), lines

            async def step(name: str) -> None:
                await settle(pilot, groups=ACTING)
                seen = committed.commits_so_far()
                wait_for(lambda: committed.commits_so_far() > seen + 1)
                assert wal_path(db).exists(), (
                    f"{name}: the -wal was deleted under the app"
                )
                assert integrity(db) == "ok", name

            await step("resume")
            screen = app.screen
            screen.go_to_session(
                next(k for k in screen.sessions.keys if k[1] == "chat-kyoto")
            )
            await settle(pilot)
            screen.transcript.move_cursor(user_rows(screen.transcript)[1] + 1)
            await pilot.press("W")
            await settle(pilot)
            assert isinstance(app.screen, ActionScreen)
            await confirm(pilot)
            await step("rewind")
            for action in ("u", "b", "u", "t", "u"):  # undo, fork, undo, trim, undo
                await settle(pilot, groups=ACTING)
                await pilot.press(action)
                await settle(pilot, groups=ACTING)
                if isinstance(app.screen, ActionScreen):
                    await confirm(pilot)
                await step(action)
    assert integrity(db) == "ok"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        stored = {
            row[0]
            for row in conn.execute(
                "SELECT run_id FROM session_runs WHERE session_id = 'writer-session'"
            )
        }
        kyoto = [
            row[0]
            for row in conn.execute(
                "SELECT run_id FROM session_runs WHERE session_id = 'chat-kyoto' ORDER BY id"
            )
        ]
    finally:
        conn.close()
    assert {run_id for run_id, _, _ in committed.segments} <= stored
    assert kyoto == ["run-kyoto-1", "run-kyoto-2"], "every action was undone"


DEMO_REPRO_RUNS = int(os.environ.get("DEMO_REPRO_RUNS", "1"))


@pytest.mark.parametrize("attempt", range(DEMO_REPRO_RUNS))
async def test_the_reported_sequence_on_a_fresh_demo(attempt, demo_dir, tmp_path):
    """As reported: on the demo, resume run-crashed in the app, another process
    connects and commits, then rewind chat-kyoto before a user turn with the
    session filter open (``DEMO_REPRO_RUNS=50`` repeats it on 50 fresh copies)."""
    from lovia_tui.app import make_app

    for name in ("assistant.db", "sessions.db", "runs.db"):
        copy_db(demo_dir.directory / name, tmp_path / name)
    db = tmp_path / "assistant.db"
    # else it may see a live run, and no resume
    await runs_look_crashed(tmp_path, DEMO_STALE_AFTER)
    app = make_app(
        [tmp_path], stale_after=DEMO_STALE_AFTER, agent_spec="lovia_tui.demo:agent"
    )
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.go_to_run("run-crashed")
        await settle(pilot)
        await pilot.press("R", "enter", "enter")
        await settle(pilot)
        _commit_elsewhere(db)
        assert wal_path(db).exists(), "another process deleted the -wal under the app"
        await pilot.press("c", "1", "slash", *"kyoto", "enter", "enter")
        await settle(pilot)
        await pilot.press("W")
        await settle(pilot)
        assert isinstance(app.screen, ActionScreen)
        await confirm(pilot)
        await settle(pilot)
        _commit_elsewhere(db)
        assert app.return_code in (None, 0)
    rewound, resumed = await Journal().entries(None, 5)
    assert (rewound.action, rewound.status) == ("rewind", "done"), rewound
    assert (resumed.action, resumed.status) == ("resume", "done"), resumed
    for name in ("assistant.db", "sessions.db", "runs.db"):
        assert integrity(tmp_path / name) == "ok", name
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        status = conn.execute(
            "SELECT count(*) FROM snapshot_heads WHERE run_id = 'run-crashed'"
        ).fetchone()
    finally:
        conn.close()
    assert status == (0,), "the resume finished the crashed run (lovia web deletes it)"


async def test_a_file_moved_over_the_open_one_is_never_read_through_the_old_ones_wal(
    snap_dir, tmp_path, monkeypatch
):
    """``mv other.db snap.db`` while the app reads snap.db: the ``-wal`` and
    ``-shm`` at the name stay the old file's while its connections live, and
    a connection to the new file would read (and checkpoint) them as its own.
    The app says the file was replaced, keeps showing the old one, refuses
    every action, and opens nothing on the new file; the new file is
    byte-identical afterwards."""
    from lovia_tui.core.actions.session_plans import preview_rewind
    from lovia_tui.core.errors import ActionError, LoviaTuiError
    from lovia_tui.widgets.status_line import StatusLine

    path = snap_dir / "snap.db"
    other = copy_db(path, tmp_path / "other.db")
    with contextlib.closing(sqlite3.connect(other)) as conn:
        conn.execute("DELETE FROM session_runs WHERE session_id = 'chat-kyoto'")
        conn.commit()
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        db = app.workspace.databases[0]
        _commit_elsewhere(path)  # frames in the -wal the app's reads keep there
        moved_in = other.read_bytes()
        os.replace(other, path)
        status = app.screen.query_one(StatusLine)
        await until(pilot, lambda: "REPLACED" in str(status.render()), timeout=30.0)
        assert status.has_class("-damaged") and db.replaced()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "REPLACED" in str(status.render())
        # The old file, as it was: its sessions are still there to read.
        assert await db.fetchall(
            "SELECT COUNT(*) FROM session_runs WHERE session_id = 'chat-kyoto'"
        ) != [(0,)]
        with pytest.raises(ActionError, match="replaced on disk"):
            await preview_rewind(app.workspace, "chat-kyoto", 1)
        with pytest.raises(LoviaTuiError, match="replaced on disk"):
            db.thread_connection()
        with pytest.raises(LoviaTuiError, match="replaced on disk"):
            await db.reconnect()
    assert path.read_bytes() == moved_in
