"""Terminals the app and the CLI meet: 80×24, very wide, resized while still
loading, no colour (``NO_COLOR``), and a non-UTF-8 locale."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.app import snapshot_app, watched_app
from support.reliability import AppWatch, visit_runs, visit_transcript

from lovia_tui.core.models import Entry
from lovia_tui.pilot import settle
from lovia_tui.screens.help import HelpScreen
from lovia_tui.screens.inspector import PANES
from lovia_tui.screens.pager import open_in_pager
from lovia_tui.view.rows import Row

# The SVG window's own chrome (traffic lights, title): not the app's colours.
SVG_CHROME = {"#ff5f57", "#febc2e", "#28c840", "#c5c8c6"}


def shown_panes(screen) -> list[str]:
    """The panes taking space: on a narrow terminal only the focused one."""
    return [
        name for name in PANES if screen.query_one(f"#{name}-pane").region.width > 0
    ]


async def tour(pilot, *, full: bool = True) -> None:
    """Every view once: sessions, transcript, runs and detail, help, filter, search."""
    await pilot.press("down", "up", "enter")
    await settle(pilot)
    await visit_transcript(pilot, most=4)
    if full:
        await visit_runs(pilot)
    await pilot.press("question_mark")
    await pilot.pause()
    assert isinstance(pilot.app.screen, HelpScreen)
    await pilot.press("escape")
    if full:
        await pilot.press("slash", "k", "escape", "s", *"Ky", "enter")
        await settle(pilot)
        await pilot.press("escape", "tab")
    await settle(pilot)


async def test_80x24_then_300x80(snap_dir, monkeypatch) -> None:
    app = snapshot_app(snap_dir, monkeypatch, readonly=True)
    async with watched_app(app, (80, 24)) as (pilot, watch):
        screen = app.screen
        assert screen.has_class("narrow") and shown_panes(screen) == ["sessions"]
        await tour(pilot)
        for key, pane in (("2", "transcript"), ("3", "runs"), ("1", "sessions")):
            await pilot.press(key)
            assert shown_panes(screen) == [pane], "one pane at a time"
        await pilot.resize_terminal(300, 80)
        await settle(pilot)
        assert not screen.has_class("narrow") and shown_panes(screen) == list(PANES)
        await tour(pilot, full=False)
        assert screen.transcript.rows and screen.runs.runs
    watch.assert_healthy(app)


async def test_resizing_while_loading(snap_dir, monkeypatch) -> None:
    """Sizes change before the first results arrive (and to absurdly small ones)."""
    watch = AppWatch()
    app = snapshot_app(snap_dir, monkeypatch, readonly=True)
    async with app.run_test(size=(160, 40), message_hook=watch.hook) as pilot:
        watch.attach(app)
        for width, height in [
            (80, 24),
            (300, 80),
            (12, 4),
            (1, 1),
            (99, 30),
            (100, 30),
            (120, 30),
        ]:
            await pilot.resize_terminal(width, height)
        await settle(pilot)
        screen = app.screen
        assert not screen.has_class("narrow")
        assert screen.transcript.rows and screen.runs.runs and screen.sessions.keys
        await pilot.resize_terminal(90, 20)
        await pilot.press("2", "enter", "r")
        await pilot.resize_terminal(40, 10)
        await pilot.press("3", "r")
        await settle(pilot)
        assert screen.has_class("narrow") and shown_panes(screen) == ["runs"]
    watch.assert_healthy(app)


async def test_no_color(snap_dir, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = snapshot_app(snap_dir, monkeypatch, readonly=True)
    assert app.no_color
    async with watched_app(app, (120, 30)) as (pilot, watch):
        await pilot.press("2", "enter", "3")  # an expanded entry, a focused runs list
        await settle(pilot)
        svg = app.export_screenshot()
    colours = set(re.findall(r"#[0-9a-fA-F]{6}", svg)) - SVG_CHROME
    tinted = {
        c for c in colours if len({c[1:3].lower(), c[3:5].lower(), c[5:7].lower()}) > 1
    }
    assert colours and not tinted, f"colours drawn despite NO_COLOR: {sorted(tinted)}"
    watch.assert_healthy(app)


# -------------------------------------------------------- a non-UTF-8 locale

NARROW_LOCALE = {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"}
# Several commands in one process (start-up costs seconds); the locale is the process's.
DRIVER = (
    "import json, sys\n"
    "from lovia_tui.cli import main\n"
    "for argv in json.loads(sys.argv[1]):\n"
    "    code = main(argv)\n"
    "    sys.stdout.flush()\n"
    "    print(f'\\n=== exit {code}', flush=True)\n"
)


def run_cli(env: dict[str, str], *commands: list[object]) -> tuple[list[bytes], bytes]:
    """Each command's output (its exit status checked: 0), and stderr."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            json.dumps([[str(a) for a in argv] for argv in commands]),
        ],
        env={**os.environ, **env},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    outputs = done.stdout.split(b"\n=== exit ")
    assert [chunk[:1] for chunk in outputs[1:]] == [b"0"] * len(commands), done.stdout[
        -500:
    ]
    return [outputs[0]] + [chunk[2:] for chunk in outputs[1:-1]], done.stderr


def test_cjk_and_emoji_under_a_non_utf8_locale(snap_dir: Path) -> None:
    """Nothing crashes; text shows "?" where the locale cannot encode it, and
    --json stays exact (\\u escapes)."""
    db = snap_dir / "snap.db"
    commands = [
        ["sessions", db],
        ["show", db, "chat-kyoto"],
        ["runs", db],
        ["export", db, "chat-kyoto"],
        ["export", db, "chat-kyoto", "--format", "json"],
        ["show", db, "chat-kyoto", "--json"],
    ]
    outputs, errors = run_cli(NARROW_LOCALE, *commands)
    assert errors == b""
    for output in outputs:
        output.decode("ascii")  # nothing but ASCII reached the terminal
    assert b"Plan two days in Kyoto ?" in outputs[1]
    [utf8], _ = run_cli({"PYTHONIOENCODING": "utf-8"}, commands[-1])
    assert "🗾" in utf8.decode("utf-8")
    assert json.loads(outputs[-1].decode("ascii")) == json.loads(utf8.decode("utf-8"))


class SuspendingApp:
    """An app as ``open_in_pager`` sees it, whose ``suspend`` is Textual's
    shape: resumed only when its block ends without an exception."""

    def __init__(self) -> None:
        self.suspended = False
        self.notices: list[str] = []

    @contextmanager
    def suspend(self) -> Iterator[None]:
        self.suspended = True
        yield
        self.suspended = False

    def notify(self, message: str, **_: object) -> None:
        self.notices.append(message)


@pytest.mark.parametrize(
    ("pager", "said"),
    [("no-such-pager-here", "No such file"), ("less 'unbalanced", "$PAGER")],
)
def test_a_pager_that_cannot_run_leaves_the_app_resumed(
    monkeypatch, pager: str, said: str
) -> None:
    monkeypatch.setenv("PAGER", pager)
    app = SuspendingApp()
    row = Row("entry", "s:0", entry=Entry(0, {"role": "user", "content": "hi"}))
    open_in_pager(app, row)  # type: ignore[arg-type]
    assert not app.suspended
    assert len(app.notices) == 1 and said in app.notices[0]
