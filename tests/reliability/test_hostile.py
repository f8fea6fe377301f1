"""Hostile databases at the app and CLI level (the read layer's own cases are in
test_read_layer.py).

Files that cannot be opened: every command prints one line and exits 2, the
app exits 2 with that line, and the file is left as it was. Files that open
with hostile rows: the app starts, shows the readable rest, marks what does
not parse, and survives the cursor on every bad row (fold, unfold, raw JSON,
run detail); the CLI prints them without a traceback. Every base database is
written by lovia; the hostile parts are raw writes into copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.app import watched_app
from support.cli_errors import without_json_error
from support.hostile_db import (
    BAD_HEADS,
    BAD_META_SESSION,
    BAD_SEGMENTS,
    BAD_SEGMENTS_SESSION,
    HOSTILE_SESSIONS,
    HUGE_CHARS,
    HUGE_SESSION,
    MANY_ENTRIES,
    MANY_SESSION,
    PARSES,
    UTF8_SESSION,
    build_hostile_db,
)
from support.lovia_factory import append_entries, copy_db, scratch_directory
from support.reliability import (
    AppWatch,
    assert_untouched,
    detail_text,
    digests,
    until,
    visit_runs,
    visit_transcript,
)
from textual.worker import WorkerState

from lovia_tui.app import make_app
from lovia_tui.cli import main
from lovia_tui.core.store import connect, run_segments, session_reads, workspace
from lovia_tui.core.store.segment_parts import HELD_ENTRIES
from lovia_tui.core.store.segment_reads import HELD_CHARS
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import decode_text, stored_key
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen, ForceScreen
from lovia_tui.widgets.status_line import StatusLine

# ------------------------------------------------------------------ helpers


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def app_command(*argv: object) -> tuple[int, str, str]:
    """``lovia-tui PATH...`` (the app) as a user runs it, in its own process:
    the app opens the files itself and refuses them before it draws."""
    found = subprocess.run(
        [sys.executable, "-m", "lovia_tui", *map(str, argv)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return found.returncode, found.stdout, found.stderr


def assert_one_line_error(code: int, out: str, err: str, fragment: str) -> None:
    assert code == 2, (out, err)
    assert out == ""
    assert err.startswith("lovia-tui: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert fragment in err, err


def write(path: Path, sql: str, *params: object) -> None:
    """A raw write: the hostile input, always into a copy."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(sql, params)
        conn.commit()


@pytest.fixture(scope="module")
def hostile_template() -> Iterator[Path]:
    with scratch_directory() as directory:
        yield asyncio.run(build_hostile_db(directory))


@pytest.fixture
def hostile(hostile_template: Path, scratch: Path) -> Path:
    """A private copy of the hostile database."""
    (scratch / "hostile").mkdir()
    return copy_db(hostile_template, scratch / "hostile" / hostile_template.name)


# ------------------------------------------------------- files that cannot open


def _truncated(good: Path, bad: Path) -> str:
    data = good.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    return "malformed"


def _zero_length(good: Path, bad: Path) -> str:
    bad.write_bytes(b"")
    return "empty file"


def _text_file(good: Path, bad: Path) -> str:
    bad.write_text("# notes\nnot a database at all\n")
    return "not a SQLite database"


def _wrong_columns(good: Path, bad: Path) -> str:
    write(
        bad,
        "CREATE TABLE session_runs (id INTEGER PRIMARY KEY, session_id TEXT, body TEXT)",
    )
    write(bad, "CREATE TABLE snapshot_heads (run_id TEXT, head TEXT)")
    write(
        bad, "CREATE TABLE snapshot_turns (run_id TEXT, seq INTEGER, entries_json TEXT)"
    )
    write(bad, "INSERT INTO session_runs (session_id, body) VALUES ('chat', '[]')")
    return "lacks lovia's columns"


def _future_schema(good: Path, bad: Path) -> str:
    """Every store newer than lovia knows: nothing is left to show (one newer
    store alone is left out and the rest shown: test_store_tolerance.py)."""
    copy_db(good, bad)
    for store in ("session", "checkpoint"):
        write(
            bad,
            "INSERT OR REPLACE INTO lovia_schema (store, version) VALUES (?, 99)",
            store,
        )
    return "newer than the installed lovia"


UNOPENABLE = {
    "truncated": _truncated,
    "zero-length": _zero_length,
    "text-file": _text_file,
    "wrong-columns": _wrong_columns,
    "future-schema": _future_schema,
}


@pytest.mark.parametrize("kind", UNOPENABLE)
async def test_a_file_that_cannot_open_is_one_line_everywhere(
    kind: str, web_file: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (scratch / "bad").mkdir()
    bad = scratch / "bad" / "bad.db"
    fragment = UNOPENABLE[kind](web_file, bad)
    before = digests(bad.parent)
    commands = [
        ["sessions", bad],
        ["sessions", "--readonly", bad],
        ["runs", bad, "--json"],
        ["show", bad, "chat"],
        ["export", bad, "chat", "--format", "json"],
        ["sessions", web_file, bad],  # one bad file among good ones
    ]
    for argv in commands:
        code, out, err = await asyncio.to_thread(cli, capsys, *argv)
        out = without_json_error(argv, out, err)
        assert_one_line_error(code, out, err, fragment)
        assert str(bad) in err
    for argv in ([bad], ["--readonly", bad.parent]):  # refused before it draws
        code, out, err = await asyncio.to_thread(app_command, *argv)
        assert_one_line_error(code, out, err, fragment)
        assert str(bad) in err
    # The app itself (as the tests and the screenshot script start it): it
    # ends before its first screen. run_test re-raises what reached the app.
    for readonly in (False, True):
        app = make_app([web_file, bad], readonly=readonly)
        async with app.run_test(size=(100, 30)):
            pass
        assert app.return_code == 2 and str(bad) in app.open_error
    # Refused files stay as they were and are not switched to WAL. (A mode=ro
    # open of the truncated WAL-format file leaves SQLite's empty companions.)
    assert_untouched(bad.parent, before, ["bad.db"])


# ------------------------------------------------------- rows that do not parse


def _rows(screen, kind: str) -> list:
    return [row for row in screen.transcript.rows if row.kind == kind]


async def _open(pilot, session_id: str):
    screen = pilot.app.screen
    key = next(key for key in screen.sessions.keys if key[1] == session_id)
    screen.go_to_session(key)
    await settle(pilot)
    assert screen.session_key == key
    return screen


async def test_the_app_shows_the_readable_rest_and_survives_every_bad_row(
    hostile: Path,
) -> None:
    app = make_app([hostile], readonly=True, stale_after=1e9)
    async with watched_app(app, (160, 45)) as (pilot, watch):
        screen = app.screen
        assert {key[1] for key in screen.sessions.keys} == {"chat", *HOSTILE_SESSIONS}

        # good, every kind of bad segment, good: each bad one marked, the rest
        # shown, flat indices unknown after the first bad one.
        screen = await _open(pilot, BAD_SEGMENTS_SESSION)
        bad = _rows(screen, "unreadable")
        assert len(bad) == len(BAD_SEGMENTS) - len(PARSES)
        assert {str(row.problem).split("(run ")[1].split(")")[0] for row in bad} == set(
            BAD_SEGMENTS
        ) - PARSES
        entries = _rows(screen, "entry")
        assert [row.entry.index for row in entries] == [0] + [None] * 12
        # The cursor on every bad row and every entry of the odd one.
        await visit_transcript(
            pilot,
            lambda row: (
                row.kind == "unreadable" or row.segment and row.segment.run_id in PARSES
            ),
        )

        # Meta that does not parse marks its segment; every entry still shows.
        screen = await _open(pilot, BAD_META_SESSION)
        marked = {
            row.segment.run_id
            for row in _rows(screen, "segment")
            if row.segment.unreadable
        }
        assert marked == {"meta-bad-json", "meta-list"}
        assert [row.entry.index for row in _rows(screen, "entry")] == list(range(10))
        await visit_transcript(
            pilot, lambda row: row.kind == "segment" or row.entry.index == 0
        )

        screen = await _open(pilot, UTF8_SESSION)
        assert _rows(screen, "entry")[0].entry.data["content"] == "\ufffd latte"
        await visit_transcript(pilot)

        # A 10 MB tool output (many lines, and one line): held by its start
        # with a line saying how many characters more; folded, unfolded, raw.
        screen = await _open(pilot, HUGE_SESSION)
        big = [
            r
            for r in _rows(screen, "entry")
            if f"{HUGE_CHARS - HELD_CHARS:,} more characters not held here"
            in str(r.entry.data.get("output", ""))
        ]
        assert len(big) == 2
        started = time.monotonic()
        assert await visit_transcript(pilot, lambda row: row in big) == 2
        assert time.monotonic() - started < 15, "a 10 MB entry must not freeze the app"

        # Search still finds text in a row with invalid UTF-8.
        await pilot.press("s", *"latte", "enter")
        await settle(pilot)
        assert {key[1] for key in screen.sessions.shown} == {UTF8_SESSION}
        await pilot.press("escape")
        await settle(pilot)

        # Heads that do not parse are listed as unreadable; odd ones still show.
        by_id = {run.run_id: run for run in screen.runs.runs}
        assert set(by_id) == set(BAD_HEADS) | {"inflight"}
        for run_id in ("run-bad-json", "run-list", "run-no-status"):
            assert by_id[run_id].status == "unreadable"
        assert by_id["run-odd-fields"].status == "running"
        assert await visit_runs(pilot, jump=False) == len(by_id)
        screen.runs.select_run("run-list")
        await settle(pilot)
        assert "⚠ unreadable" in detail_text(app)
        for run_id in ("run-list", "run-odd-fields"):  # unlinked: shown alone
            await pilot.press("3")
            screen.runs.select_run(run_id)
            await pilot.press("enter")
            await settle(pilot)
            assert screen.transcript_pane.run_view == run_id
        # The in-flight run: its unreadable batches reported, the odd call listed as dangling.
        screen.runs.select_run("inflight")
        await settle(pilot)
        text = detail_text(app)
        assert "seq 50:" in text and "seq 51:" in text and "seq 52:" not in text
        assert "x  ([9])" in text

        # 100k entries in one segment: held by its first and last entries,
        # both ends reachable, the count between them said.
        screen = await _open(pilot, MANY_SESSION)
        entries = _rows(screen, "entry")
        assert len(entries) == HELD_ENTRIES
        [held] = _rows(screen, "held-back")
        assert held.older == MANY_ENTRIES - HELD_ENTRIES
        assert entries[-1].key.endswith(f":{MANY_ENTRIES - 1}")
        await pilot.press(
            "2", "home", "enter", "r", "end", "enter", "r", "pageup", "enter"
        )
        await settle(pilot)
    watch.assert_healthy(app)
    assert watch.errors() == []


def not_utf8(raw: bytes) -> str:
    """The key of an id stored as these bytes, TEXT that is not UTF-8."""
    return stored_key(decode_text(raw))


async def test_ids_of_invalid_utf8_end_every_keyset_walk(
    hostile: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ids another writer stored as invalid UTF-8, sorting after every other:
    read back with U+FFFD they compare below what is stored, and a walk
    continued from one read the same row again, for ever (``runs`` hung)."""
    for session, run in (
        ("FFFE", "FFFE"),
        ("'bad-runs'", "FFFD"),
        ("'bad-runs'", "FFFE"),
    ):
        session = session if session.startswith("'") else f"CAST(X'{session}' AS TEXT)"
        write(
            hostile,
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
            f"VALUES ({session}, CAST(X'{run}' AS TEXT), '[]', 1)",
        )
    for module, name in (
        (run_segments, "WALK_CHUNK"),
        (session_reads, "INDEX_CHUNK"),
        (workspace, "RUN_IDS_CHUNK"),
    ):
        monkeypatch.setattr(module, name, 1)  # a step for every row
    ws = await Workspace.open([hostile], readonly=True)
    try:
        [db] = ws.databases

        async def index() -> dict[str, tuple[int, int]]:
            counted = {}
            async for chunk, _ in session_reads.session_index(db):
                counted.update(chunk)
            return counted

        counted = await asyncio.wait_for(index(), 10)
        assert counted["bad-runs"][0] == 2 and counted[not_utf8(b"\xff\xfe")][0] == 1
        run_ids = await asyncio.wait_for(ws.session_run_ids("bad-runs"), 10)
        assert run_ids == {not_utf8(b"\xff\xfd"), not_utf8(b"\xff\xfe")}
        assert "\ufffd\ufffd" not in run_ids  # the text id spelled as they read
        await asyncio.wait_for(ws.links(list(run_ids)), 10)
    finally:
        await ws.close()
    code, out, err = await asyncio.wait_for(
        asyncio.to_thread(cli, capsys, "runs", hostile, "--json", "--readonly"), 30
    )
    assert code == 0 and json.loads(out)["runs"], err


async def test_actions_on_hostile_rows_refuse_in_one_line(hostile: Path) -> None:
    """Previews need rows lovia can parse: they refuse, and the app carries on."""
    app = make_app([hostile], stale_after=1e9)
    async with watched_app(app, (160, 45)) as (pilot, watch):
        screen = await _open(pilot, BAD_SEGMENTS_SESSION)
        await pilot.press("2")
        first = next(
            n
            for n, i in enumerate(screen.transcript.shown_rows)
            if screen.transcript.rows[i].entry
        )
        for key in ("t", "W", "w"):
            screen.transcript.move_cursor(first)
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, ActionScreen)
        assert len(watch.errors()) == 3 and all(
            "is unreadable" in text for text in watch.errors()
        )
        await _open(pilot, BAD_META_SESSION)
        await pilot.press(
            "t"
        )  # odd context state in the meta: nothing to trim, nothing breaks
        await until(pilot, lambda: isinstance(app.screen, ActionScreen))
        await pilot.press("escape")
        for run_id in ("run-list", "run-odd-fields"):
            app.screen.runs.select_run(run_id)
            await pilot.press("3", "d")
            await until(
                pilot, lambda: isinstance(app.screen, ActionScreen | ForceScreen)
            )
            await pilot.press("escape")
            await settle(pilot)
    watch.assert_healthy(app)


def test_the_cli_prints_hostile_rows_without_a_traceback(
    hostile: Path, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "sessions", hostile, "--json")
    assert (code, err) == (0, "")
    assert {s["session_id"] for s in json.loads(out)["sessions"]} == {
        "chat",
        *HOSTILE_SESSIONS,
    }
    for session_id in (BAD_SEGMENTS_SESSION, BAD_META_SESSION, UTF8_SESSION):
        for argv in (
            ["show", hostile, session_id],
            ["show", hostile, session_id, "--json"],
        ):
            code, out, err = cli(capsys, *argv)
            assert (code, err) == (0, ""), session_id
        for fmt in ("md", "json"):
            code, out, err = cli(
                capsys,
                "export",
                hostile,
                session_id,
                "--format",
                fmt,
                "-o",
                scratch / "out",
                "--force",  # one file, replaced each time
            )
            assert code == 0 and "Traceback" not in err, session_id
    shown = json.loads(cli(capsys, "show", hostile, BAD_SEGMENTS_SESSION, "--json")[1])
    assert ["unreadable" in s for s in shown["segments"]] == [
        False, *(run_id not in PARSES for run_id in BAD_SEGMENTS), False
    ]  # fmt: skip
    runs = {
        r["run_id"]: r
        for r in json.loads(cli(capsys, "runs", hostile, "--json")[1])["runs"]
    }
    assert runs["run-list"]["status"] == "unreadable"
    # Exactly as stored, odd shapes and all (the app shows such a count as "?").
    assert runs["run-odd-fields"]["usage"] == {
        "input_tokens": "lots",
        "output_tokens": None,
    }
    assert runs["run-odd-fields"]["last_input_tokens"] == "many"
    code, out, err = cli(capsys, "runs", hostile)
    assert (code, err) == (0, "")
    code, out, err = cli(capsys, "show", hostile, HUGE_SESSION)
    assert (code, err) == (0, "") and len(out) < 10_000
    code, out, err = cli(
        capsys, "export", hostile, HUGE_SESSION, "-o", scratch / "huge.md"
    )
    assert code == 0 and (scratch / "huge.md").stat().st_size > 2 * HUGE_CHARS


# -------------------------------------------------------------- a damaged page


def _damaged(directory: Path) -> Path:
    """A lovia file whose middle pages were overwritten (the schema still reads)."""
    path = directory / "damaged.db"
    asyncio.run(append_entries(path, "bulk", 300))
    write(path, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    middle = len(data) // 4096 // 2 * 4096
    data[middle : middle + 3 * 4096] = b"\xde\xad" * (3 * 2048)
    path.write_bytes(data)
    return path


async def test_a_damaged_page_is_one_line_not_a_traceback(
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = await asyncio.to_thread(_damaged, scratch)
    for argv in (
        ["sessions", bad],
        ["show", bad, "bulk"],
        ["sessions", bad, "--search", "w 1"],
    ):
        code, out, err = await asyncio.to_thread(cli, capsys, *argv)
        assert_one_line_error(code, out, err, "damaged")
    # Past the check at open (as a file too large for it would be): the reads
    # meet the damage, and the app shows one banner for the file, no toasts.
    monkeypatch.setattr(connect, "QUICK_CHECK_AT_OPEN_BYTES", 0)
    app = make_app([bad], readonly=True)
    async with watched_app(app, (120, 30)) as (pilot, watch):
        await pilot.press("2", "1", "down", "s", *"w 1", "enter")
        await settle(pilot)
        assert app.is_running  # no exception reached the app (run_test re-raises one)
        banner = app.screen.query_one(StatusLine)
        assert banner.has_class("-damaged") and "DAMAGED" in str(banner.render())
    assert not [text for text in watch.errors() if "damaged" in text], watch.notes


# ----------------------------------------------------------------- locks

HOLD = (
    "import sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "conn.execute('BEGIN EXCLUSIVE')\n"
    "if len(sys.argv) > 2:\n"
    "    conn.execute('INSERT INTO session_runs (session_id, run_id, entries_json, created_at) '\n"
    "                 'VALUES (?, ?, ?, 1.0)', (sys.argv[2], sys.argv[2], '[]'))\n"
    "print('LOCKED', flush=True)\n"
    "sys.stdin.readline()\n"
    "conn.execute('COMMIT')\n"
)


@contextlib.contextmanager
def exclusive_lock(path: Path, writes: str | None = None) -> Iterator[None]:
    """Another process holding an exclusive lock on ``path`` until the block ends
    (and, with ``writes``, adding a session of that id, committed at the end)."""
    argv = [sys.executable, "-c", HOLD, str(path), *([writes] if writes else [])]
    holder = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert (
            holder.stdout is not None and holder.stdout.readline().strip() == "LOCKED"
        )
        yield
    finally:
        holder.communicate("release\n", timeout=30)


@pytest.fixture
def rollback_file(web_file: Path) -> Path:
    """The web file in rollback-journal mode: there a writer's lock blocks readers."""
    write(web_file, "PRAGMA journal_mode=DELETE")
    return web_file


async def test_a_locked_rollback_file_is_one_line_and_the_app_recovers(
    rollback_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connect, "BUSY_TIMEOUT_MS", 200)
    with exclusive_lock(rollback_file):
        for argv in (
            ["sessions", rollback_file],
            ["runs", "--readonly", rollback_file],
        ):
            code, out, err = await asyncio.to_thread(cli, capsys, *argv)
            assert_one_line_error(code, out, err, "locked")
        app = make_app([rollback_file])  # refused before it draws: said by the CLI
        async with app.run_test(size=(160, 40)):
            pass
        assert app.return_code == 2 and "locked" in app.open_error
    # Locked while the app is open (read-only keeps the rollback journal).
    app = make_app([rollback_file], readonly=True)
    async with watched_app(app, (160, 40)) as (pilot, watch):
        shown = len(app.screen.transcript.rows)
        assert shown
        with exclusive_lock(rollback_file, writes="written-while-locked"):
            await pilot.press("ctrl+r")
            await settle(pilot)
            assert app.is_running and any("locked" in text for text in watch.errors())
            assert all("locked" in str(error) for _, error in watch.worker_errors)
        # The live tail outlived the lock: the holder's session shows up by itself.
        await until(
            pilot,
            lambda: (
                "written-while-locked" in {key[1] for key in app.screen.sessions.keys}
            ),
        )
        watch.notes.clear()
        await pilot.press("ctrl+r", "2", "enter")
        await settle(pilot)
        assert watch.errors() == [] and len(app.screen.transcript.rows) == shown
        assert all(worker.state != WorkerState.ERROR for worker in app.workers)


async def test_a_locked_wal_file_still_reads(
    web_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    watch = AppWatch()
    with exclusive_lock(web_file):
        code, out, err = await asyncio.to_thread(
            cli, capsys, "sessions", web_file, "--json"
        )
        assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == [
            "chat"
        ]
        app = make_app([web_file])
        async with app.run_test(size=(160, 40), message_hook=watch.hook) as pilot:
            watch.attach(app)
            await settle(pilot)
            assert app.screen.transcript.rows and app.screen.runs.runs
    watch.assert_healthy(app)
    assert watch.errors() == []


# ------------------------------------------------ a read-only WAL directory


@pytest.fixture
def readonly_wal_dir(web_file: Path, scratch: Path) -> Path:
    """A WAL database as a read-only directory leaves it without -wal/-shm.

    Tests run as root, which ignores directory modes, so the -wal name is
    occupied by a directory instead: a mode=ro open then fails just the same
    and only immutable=1 reads (as in test_read_layer)."""
    directory = scratch / "ro"
    directory.mkdir()
    path = copy_db(web_file, directory / "web.db")
    write(path, "PRAGMA journal_mode=WAL")
    (directory / "web.db-wal").mkdir()
    return directory


async def test_a_read_only_wal_directory_opens_immutable_in_readonly_mode(
    readonly_wal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digests(readonly_wal_dir)
    code, out, err = await asyncio.to_thread(
        cli, capsys, "sessions", "--readonly", readonly_wal_dir, "--json"
    )
    assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == [
        "chat"
    ]
    code, out, err = await asyncio.to_thread(cli, capsys, "sessions", readonly_wal_dir)
    assert_one_line_error(code, out, err, "cannot open")
    app = make_app([readonly_wal_dir], readonly=True)
    async with watched_app(app, (160, 40)) as (pilot, watch):
        screen = app.screen
        assert "static (immutable" in str(screen.query_one("#status-line").content)
        assert [key[1] for key in screen.sessions.keys] == ["chat"]
        await visit_transcript(pilot, most=4)
        await visit_runs(pilot, jump=False)
    watch.assert_healthy(app)
    assert_untouched(readonly_wal_dir, before, [])
    shutil.rmtree(readonly_wal_dir / "web.db-wal")
