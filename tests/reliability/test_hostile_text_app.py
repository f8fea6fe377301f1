"""Stored text that attacks the terminal, in the app: every view shows it, none obeys it.

The app opens the hostile-text database (tests/support/hostile_text_db.py, written by
lovia); the pilot goes through every pane, row, dialog, the palette, the
doctor and the pager text, and every screenshot and notification must hold
the data only in visible form. A real terminal (a pty) then records the
bytes the app writes: none of the data's escape sequences is among them.
Export from the app: asked for, never over a file unasked, never through a link.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time
from pathlib import Path

import pytest
from support.app import confirm
from support.hostile_text_db import (
    BEL,
    CRASHED_RUN,
    DATA_SEQUENCES,
    ESC,
    FAILED_RUN,
    SESSION,
    SESSION_PLAIN_TITLE,
    UNSAFE,
    assert_inert,
    hostile,
    unwritable,
)
from support.reliability import AppWatch, until, visit_runs, visit_transcript
from textual.message import Message
from textual.notifications import Notification, Notify

from lovia_tui.app import make_app
from lovia_tui.core.export import export_name, free_path
from lovia_tui.core.formatting import printable
from lovia_tui.core.markdown_text import code_span
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen, ForceScreen
from lovia_tui.screens.export_dialog import ExportScreen
from lovia_tui.screens.pager import pager_text
from lovia_tui.screens.preflight import PreflightScreen
from lovia_tui.widgets.pane_title import SEPARATOR
from lovia_tui.widgets.run_console import RunConsole

VISIBLE = ("␛]52;c;SElKQUNLRUQ=␇", "␛]0;PWNED-TITLE␇", "␛[6n␛[2J", "\\x9b6n")


class Shots:
    """Screenshots of every step, each checked to hold no control character."""

    def __init__(self, app) -> None:
        self.app = app
        self.taken: list[str] = []

    def take(self, what: str) -> None:
        svg = self.app.export_screenshot()
        assert not UNSAFE.search(svg), (what, UNSAFE.search(svg))
        self.taken.append(svg)

    def shown(self, text: str) -> bool:
        return any(text in svg for svg in self.taken)


async def _loaded(pilot) -> None:
    """Both sessions and every run listed (bounded)."""
    screen = pilot.app.screen
    await until(pilot, lambda: len(screen.sessions.keys) >= 2 and screen.runs.runs)
    await settle(pilot)


async def _open(pilot, session_id: str) -> None:
    screen = pilot.app.screen
    key = next(key for key in screen.sessions.keys if key[1] == session_id)
    screen.go_to_session(key)
    await settle(pilot)
    assert screen.session_key == key


async def _dialog(pilot, keys: list[str], kind: type, shots: Shots) -> None:
    await pilot.press(*keys)
    await until(pilot, lambda: isinstance(pilot.app.screen, kind))
    await pilot.pause()
    shots.take(kind.__name__)
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(pilot.app.screen, kind))


class Watched:
    """The app on the hostile-text database, its failures and what its toasts show."""

    def __init__(self, path: Path) -> None:
        self.watch = AppWatch()
        self.notes: list[Notification] = []
        self.app = make_app([path], stale_after=1e9)  # the crashed run looks live
        self.shots = Shots(self.app)

    def hook(self, message: Message) -> None:
        self.watch.hook(message)
        if isinstance(message, Notify):  # what the toast will show
            self.notes.append(message.notification)

    def check(self, *pieces: str) -> None:
        """Healthy; every piece shown in some screenshot; every toast inert."""
        self.watch.assert_healthy(self.app)
        for piece in pieces:
            assert self.shots.shown(piece), piece
        for note in self.notes:
            assert not note.markup
            assert_inert(note.message)


async def test_sessions_transcripts_and_the_pager_show_hostile_text_literally(
    hostile_text: Path,
) -> None:
    seen = Watched(hostile_text)
    async with seen.app.run_test(size=(160, 45), message_hook=seen.hook) as pilot:
        seen.watch.attach(seen.app)
        await _loaded(pilot)
        screen = seen.app.screen
        seen.shots.take("start")
        assert {SESSION, SESSION_PLAIN_TITLE} <= {k[1] for k in screen.sessions.keys}
        for session_id in (SESSION_PLAIN_TITLE, SESSION):
            await _open(pilot, session_id)
            seen.shots.take(f"session {session_id!r}")
            # Shown literally, cut in the middle to what the pane has room for.
            title = str(screen.query_one("#transcript-title").content)
            assert shows_part(title, session_id), title
            await visit_transcript(pilot)
            seen.shots.take(f"transcript {session_id!r}")
        transcript = screen.transcript
        for position, index in enumerate(transcript.shown_rows):
            row = transcript.rows[index]
            if row.entry is None:
                continue
            assert_inert(pager_text(row).replace("\n", " ").replace("\t", " "))
            transcript.move_cursor(position)
            transcript.action_fold()  # unfolded: its lines on screen
            await pilot.pause()
            seen.shots.take(f"entry {row.key}")
            transcript.action_fold()
    seen.check(
        *VISIBLE[:2], "[/oops]", "red]x[/][/oops]", "[link=https://example.inval"
    )


async def test_runs_dialogs_doctor_and_palette_show_hostile_text_literally(
    hostile_text: Path,
) -> None:
    seen = Watched(hostile_text)
    shots = seen.shots
    async with seen.app.run_test(size=(160, 45), message_hook=seen.hook) as pilot:
        seen.watch.attach(seen.app)
        await _loaded(pilot)
        screen = seen.app.screen
        assert await visit_runs(pilot) >= 3
        shots.take("runs")
        for run_id, keys, kind in (
            (CRASHED_RUN, ["3", "F"], ForceScreen),  # live: type its id to force
            (FAILED_RUN, ["3", "d"], ActionScreen),
            (FAILED_RUN, ["3", "R"], PreflightScreen),
        ):
            assert screen.runs.select_run(run_id)
            await settle(pilot)
            shots.take(f"detail {run_id!r}")
            await _dialog(pilot, keys, kind, shots)
        # Export needs a session: the last run visited may have shown alone.
        await _open(pilot, screen.sessions.keys[0][1])
        await _dialog(pilot, ["1", "x"], ExportScreen, shots)
        await pilot.press("exclamation_mark")
        await settle(pilot)
        shots.take("doctor")
        await pilot.press("escape")
        await pilot.press("ctrl+p", *"run")
        await settle(pilot)
        shots.take("palette")
        await pilot.press("escape")
        await settle(pilot)
    assert seen.notes  # "run … is unlinked", at least
    seen.check(*VISIBLE, "[/oops]", "red]x[/][/oops]")


async def test_the_live_console_shows_a_replay_literally(hostile_text: Path) -> None:
    """A replay's events (the run's agent, its hostile output) in the console."""
    watch = AppWatch()
    app = make_app([hostile_text], stale_after=1e9)
    async with app.run_test(size=(160, 45), message_hook=watch.hook) as pilot:
        await _loaded(pilot)
        assert app.screen.runs.select_run(hostile("r-done"))
        await pilot.press("3", "P")
        await until(pilot, lambda: isinstance(app.screen, PreflightScreen))
        assert app.screen.pf.ok, app.screen.pf.problems
        await confirm(pilot)  # deliberately: the preflight opens on a field
        await settle(pilot)
        console = app.screen.query_one(RunConsole)
        await until(pilot, lambda: not console.running)
        lines = [line.text for line in console.query_one("#console-log").lines]
        shown = "".join(lines)  # the log wraps long lines
        assert f"completed: {printable(hostile('answer'))[:40]}" in shown, lines
        for line in lines:
            assert_inert(line)
        Shots(app).take("console")
        title = str(console.query_one("#console-title").content)
        assert shows_part(title, "replay " + hostile("r-done")), title
        assert title.endswith(" · completed"), title
    watch.assert_healthy(app)


# ------------------------------------------------------------ a real terminal


def shows_part(title: str, stored: str) -> bool:
    """Whether a part of a pane title is ``stored`` made printable: whole, or
    cut in the middle (its start and end kept around a "…")."""
    drawn = printable(stored)
    return any(
        part == drawn
        or ("…" in part and drawn.startswith(part.split("…")[0])
            and drawn.endswith(part.rsplit("…")[-1]))
        for part in title.split(SEPARATOR)
    )  # fmt: skip


def _read(fd: int, out: bytearray, until_bytes: int, timeout: float) -> None:
    """Read what the app writes until ``out`` holds ``until_bytes`` (bounded)."""
    deadline = time.monotonic() + timeout
    while len(out) < until_bytes and time.monotonic() < deadline:  # bounded
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                out.extend(os.read(fd, 1 << 16))
            except OSError:
                return  # the app exited


def _frame_after(fd: int, out: bytearray, keys: bytes) -> None:
    """Send ``keys`` and wait for the app to draw something in answer."""
    before = len(out)
    os.write(fd, keys)
    _read(fd, out, before + 1, timeout=10)
    # The rest of that frame: whatever follows within a short quiet spell.
    while True:
        size = len(out)
        _read(fd, out, size + 1, timeout=0.2)  # bounded
        if len(out) == size:
            return


def _spawn(*argv: object) -> tuple[int, int]:
    """``lovia-tui ARGV...`` in a new 160x45 terminal: its pid and the pty."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [sys.executable, "-m", "lovia_tui", *map(str, argv)])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    return pid, fd


def test_the_commands_in_a_terminal_write_no_escape_sequence_from_the_data(
    hostile_text: Path,
) -> None:
    """Colours, and doctor's progress bar on stderr (shown only to a terminal,
    naming the files), with a file name that is hostile too."""
    name = hostile_text.with_name(f"[red]x{BEL}{ESC}]0;PWNED{BEL}.db")
    directory = hostile_text.rename(name).parent
    for argv in (["doctor", directory], ["sessions", directory], ["runs", directory]):
        pid, fd = _spawn(*argv)
        out = bytearray()
        try:
            _read(fd, out, 1 << 30, timeout=30)  # until it exits (bounded)
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
        assert os.waitstatus_to_exitcode(status) in (0, 1), bytes(out)
        for sequence in (*DATA_SEQUENCES, "\x1b]0;PWNED"):
            assert sequence.encode() not in out, (argv[0], sequence)
        assert "␛]52;c;".encode() in out, argv[0]  # shown, not obeyed


def test_a_terminal_receives_no_escape_sequence_from_the_data(
    hostile_text: Path,
) -> None:
    pid, fd = _spawn(hostile_text)
    out = bytearray()
    try:
        deadline = time.monotonic() + 30
        while b"Sessions" not in out and time.monotonic() < deadline:
            _read(fd, out, len(out) + 1, timeout=1)  # bounded: the first frame
        assert b"Sessions" in out, bytes(out[-2000:])
        for keys in (b"2", b"\r", b"j", b"\r", b"j", b"\r", b"r", b"3", b"j", b"\r"):
            _frame_after(fd, out, keys)
        os.write(fd, b"q")
        _read(fd, out, 1 << 30, timeout=10)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, bytes(out[-2000:])
    for sequence in DATA_SEQUENCES:
        assert sequence.encode() not in out, sequence
    for piece in VISIBLE[:2]:  # what fits on this screen, shown
        assert piece.encode() in out, piece


# ------------------------------------------------------------ export from the app


def _identity(path: Path) -> tuple[int, ...]:
    status = path.stat()
    return status.st_ino, status.st_size, status.st_mtime_ns, status.st_mode


async def _export_dialog(pilot, keys: str = "x") -> ExportScreen:
    await pilot.press("1", keys)
    await until(pilot, lambda: isinstance(pilot.app.screen, ExportScreen))
    return pilot.app.screen


async def _submit(pilot, path: Path | None = None) -> None:
    dialog = pilot.app.screen
    if path is not None:
        dialog.query_one("#export-path").value = str(path)
    await pilot.press("enter")

    def answered() -> bool:  # asked again, or the export ended
        app = pilot.app
        return app.screen is not dialog and (
            isinstance(app.screen, ExportScreen)
            or all(w.is_finished for w in app.workers if w.group == "action-export")
        )

    await until(pilot, answered)
    await pilot.pause()


async def test_the_app_asks_where_and_never_overwrites_or_follows(
    hostile_text: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(scratch)
    first = scratch / export_name(SESSION, "md")
    victim = scratch / "victim.txt"
    victim.write_text("precious")
    link = scratch / "planted.md"
    link.symlink_to(victim)
    watch = AppWatch()
    app = make_app([hostile_text], stale_after=1e9)
    async with app.run_test(size=(160, 45), message_hook=watch.hook) as pilot:
        watch.attach(app)
        await _loaded(pilot)
        await _open(pilot, SESSION)
        dialog = await _export_dialog(pilot)
        assert dialog.path == first  # a safe, unique name in the current directory
        await _submit(pilot)
        header = first.read_bytes().split(b"\n")[0]
        assert header == f"# Session {code_span(SESSION)}".encode()  # one line
        assert first.stat().st_mode & 0o777 == 0o600  # a new export is private
        dialog = await _export_dialog(pilot)
        assert dialog.path == free_path(scratch, SESSION, "md") != first
        first.write_text("mine")
        first.chmod(0o640)
        await _submit(pilot, first)  # taken: asked again, Replace offered
        dialog = app.screen
        assert isinstance(dialog, ExportScreen) and dialog.taken
        assert first.read_text() == "mine"
        await _submit(pilot)  # Replace
        assert first.read_bytes().startswith(b"# Session ")
        assert first.stat().st_mode & 0o777 == 0o640  # the replaced file's mode
        dialog = await _export_dialog(pilot)
        await _submit(pilot, link)  # a planted link: refused, no Replace
        dialog = app.screen
        assert isinstance(dialog, ExportScreen) and not dialog.taken
        assert "symbolic link" in str(dialog.query_one("#export-problem").content)
        # stat only: the app holds the file, and closing a descriptor of ours
        # on it would drop its SQLite locks.
        database = _identity(hostile_text)
        await _submit(pilot, hostile_text)  # the open database: refused, no Replace
        dialog = app.screen
        assert isinstance(dialog, ExportScreen) and not dialog.taken
        assert "a database being read" in str(
            dialog.query_one("#export-problem").content
        )
        assert _identity(hostile_text) == database
        # Any other SQLite database, and a name SQLite uses beside a file.
        other = scratch / "other.sqlite"
        other.touch()
        for target, why in (
            (other, "is a SQLite database"),
            (Path(f"{other}-shm"), f"the -shm file of {other}"),
        ):
            await _submit(pilot, target)
            dialog = app.screen
            assert isinstance(dialog, ExportScreen) and not dialog.taken
            assert why in str(dialog.query_one("#export-problem").content)
        assert other.stat().st_size == 0 and not Path(f"{other}-shm").exists()
        # No such directory: asked again, the typed name kept (it was lost to
        # an error notification, the dialog closed).
        missing = scratch / "missing" / "x.md"
        await _submit(pilot, missing)
        dialog = app.screen
        assert isinstance(dialog, ExportScreen) and dialog.path == missing
        assert "no directory" in str(dialog.query_one("#export-problem").content)
        await pilot.press("escape")
        watch.notes.clear()
        await _export_dialog(pilot)
        await _submit(pilot, unwritable(scratch) / "x.md")  # fails: one notification
        await until(pilot, lambda: watch.errors() != [])
        assert len(watch.errors()) == 1 and "Permission denied" in watch.errors()[0]
        dialog = await _export_dialog(pilot, "X")
        await _submit(pilot)
        assert (scratch / export_name(SESSION, "json")).exists()
    watch.assert_healthy(app)
    assert victim.read_text() == "precious" and link.is_symlink()
    assert not [p for p in scratch.iterdir() if p.name.endswith(".tmp")]
