"""``--readonly`` shows exactly what was committed, or says why it cannot.

A rollback-journal writer killed mid-transaction leaves a hot journal: its
half-written pages sit in the file until a connection that may write rolls
them back, which ``mode=ro`` cannot do; ``immutable=1`` would read them as
if committed. A WAL database whose ``-shm`` cannot be made (a read-only
directory) opens only as immutable, which does not see its ``-wal``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.reliability import digests

from lovia_tui.cli import main

SESSION = "committed"
COMMITTED_RUNS = 3


def _lovia_file(path: Path, *, wal: bool) -> Path:
    """Three runs of one session, appended by lovia's own SQLiteSession."""
    from lovia import SQLiteSession

    async def write() -> None:
        session = SQLiteSession(path, wal=wal)
        for n in range(COMMITTED_RUNS):
            entry = {"type": "input", "role": "user", "content": f"question {n}"}
            await session.append(SESSION, [_entry(entry)], run_id=f"run-{n}")

    asyncio.run(write())
    return path


def _entry(data: dict):
    from lovia.transcript import entry_from_dict

    return entry_from_dict(data)


def _killed_mid_transaction(path: Path, change: str) -> None:
    """A writer that changes rows in a transaction it never ends (SIGKILL), its
    cache small enough that the uncommitted pages reach the file."""
    statements = {
        "insert": "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
        "SELECT 'uncommitted', 'u' || value, '[' || printf('%.4000c', 'x') || ']', 0 "
        "FROM generate_series(1, 400)",
        "delete": "DELETE FROM session_runs",
    }
    code = f"""
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size=1")
conn.execute("BEGIN IMMEDIATE")
try:
    conn.execute({statements[change]!r})
except sqlite3.OperationalError:  # no generate_series: insert row by row
    for n in range(400):
        conn.execute("INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
                     "VALUES ('uncommitted', ?, ?, 0)", (f"u{{n}}", "[" + "x" * 4000 + "]"))
os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    journal = path.with_name(path.name + "-journal")
    assert journal.is_file() and journal.stat().st_size > 0, "no hot journal left"


@pytest.mark.parametrize("change", ["insert", "delete"])
def test_a_hot_journal_is_refused_not_read_past(change, tmp_path, capsys):
    db = _lovia_file(tmp_path / "sessions.db", wal=False)
    _killed_mid_transaction(db, change)
    before = digests(tmp_path)
    for command in (["show", str(db), SESSION], ["sessions", str(db)]):
        code = main([*command, "--readonly"])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", (out, err)
        assert "interrupted mid-transaction" in err and err.count("\n") == 1, err
    assert digests(tmp_path) == before, "--readonly wrote"
    # Without --readonly SQLite rolls the journal back: the committed runs, exactly.
    code = main(["show", str(db), SESSION, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    shown = json.loads(out)
    assert [s["run_id"] for s in shown["segments"]] == [
        f"run-{n}" for n in range(COMMITTED_RUNS)
    ]


async def test_a_hot_journal_left_after_the_open_is_said_as_at_open(tmp_path):
    """A writer killed mid-transaction while the file is open read-only: the
    next read says what the open would have said, not "attempt to write a
    readonly database"."""
    from lovia_tui.core.errors import LoviaTuiError
    from lovia_tui.core.store.database import open_database

    db_path = await asyncio.to_thread(_lovia_file, tmp_path / "sessions.db", wal=False)
    db = await open_database(db_path, readonly=True)
    try:
        assert await db.fetchall("SELECT COUNT(*) FROM session_runs") == [
            (COMMITTED_RUNS,)
        ]
        await asyncio.to_thread(_killed_mid_transaction, db_path, "delete")
        before = digests(tmp_path)
        with pytest.raises(LoviaTuiError, match="interrupted mid-transaction"):
            await db.fetchall("SELECT COUNT(*) FROM session_runs")
    finally:
        await db.close()
    assert digests(tmp_path) == before, "--readonly wrote"


async def test_a_hot_journal_met_by_every_read_is_said_once(tmp_path):
    """In the app, every read meets it (Ctrl+R three times here): one
    notification while it is up, not a toast a read (the live tail says once
    that it waits)."""
    from support.app import watched_app

    from lovia_tui.app import make_app
    from lovia_tui.pilot import settle

    db_path = await asyncio.to_thread(_lovia_file, tmp_path / "sessions.db", wal=False)
    app = make_app([db_path], readonly=True)
    async with watched_app(app, (120, 30)) as (pilot, watch):
        await asyncio.to_thread(_killed_mid_transaction, db_path, "delete")
        for _ in range(3):
            await pilot.press("ctrl+r")
            await settle(pilot)
        said = [text for _, text in watch.notes if "mid-transaction" in text]
    reads = [text for text in said if not text.endswith("once it is released")]
    assert len(reads) == 1 and len(said) <= 2, [text[-60:] for text in said]


def _without_dac_override() -> list[str]:
    """Run a command as root without the capability that ignores file modes."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0:
        return []
    if setpriv is None:
        pytest.skip("setpriv is needed to make root respect a read-only directory")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


def _readonly_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_without_dac_override(), sys.executable, "-m", "lovia_tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_commits_in_a_wal_immutable_cannot_see_are_refused(tmp_path):
    directory = tmp_path / "readonly"
    directory.mkdir()
    db = _lovia_file(directory / "sessions.db", wal=True)
    # A writer that dies with its commits still in the -wal (no checkpoint).
    code = (
        "import os, signal, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('PRAGMA wal_autocheckpoint=0'); "
        'c.execute("INSERT INTO session_runs (session_id, run_id, entries_json, created_at) '
        "VALUES ('in-wal', 'w1', '[]', 0)\"); c.commit(); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], timeout=60)
    wal = db.with_name(db.name + "-wal")
    assert wal.stat().st_size > 0
    db.with_name(db.name + "-shm").unlink()
    before = digests(directory)
    directory.chmod(0o555)
    try:
        done = _readonly_cli("show", "--readonly", str(db), "in-wal")
        assert done.returncode == 2, done
        assert "-wal holds commits" in done.stderr and done.stdout == "", done
        assert done.stderr.count("\n") == 1, done.stderr
    finally:
        directory.chmod(0o755)
    assert digests(directory) == before


def test_an_immutable_open_says_so_on_every_command(tmp_path):
    directory = tmp_path / "readonly"
    directory.mkdir()
    db = _lovia_file(directory / "sessions.db", wal=True)
    with sqlite3.connect(db) as conn:  # every commit in the main file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for name in ("-wal", "-shm"):
        db.with_name(db.name + name).unlink(missing_ok=True)
    directory.chmod(0o555)
    try:
        done = _readonly_cli("show", "--readonly", str(db), SESSION, "--json")
    finally:
        directory.chmod(0o755)
    assert done.returncode == 0, done
    assert "opened immutable" in done.stderr, done.stderr
    shown = json.loads(done.stdout)
    assert len(shown["segments"]) == COMMITTED_RUNS
