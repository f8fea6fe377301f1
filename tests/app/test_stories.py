"""A new user's stories on the demo, each counted in keys from launch, at
160x45 and at 80x24 (where one pane shows at a time).

``KEYS`` holds, for each story and size, what it took when first measured by
hand on a fresh demo (in tmux) and what it takes now, asserted exactly so a
change that adds a key shows up here. docs/stories.md tells the same stories
with the same keys.
"""

from __future__ import annotations

import html
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path

import pytest
from support.agents.slow_writer import SlowWriter
from support.app import runs_look_crashed
from support.lovia_factory import rows
from support.reliability import until

from lovia_tui.app import make_app
from lovia_tui.cli.demo import DEMO_STALE_AFTER
from lovia_tui.demo import DemoWorkspace
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen
from lovia_tui.screens.doctor import DoctorScreen

WIDE, NARROW = (160, 45), (80, 24)
SIZES = [WIDE, NARROW]
KEYS = {  # story: {size: (keys when first measured, keys now)}
    "crashed run's dangling call": {WIDE: (5, 2), NARROW: (8, 2)},
    "rewind, read the preview, undo": {WIDE: (13, 13), NARROW: (16, 13)},
    "follow a live run": {WIDE: (2, 2), NARROW: (2, 2)},
    "search and land on the hit": {WIDE: (11, 9), NARROW: (11, 10)},
    "doctor and one fix": {WIDE: (6, 3), NARROW: (6, 3)},
    "fork": {WIDE: (11, 11), NARROW: (11, 11)},
}


def now(story: str, size: tuple[int, int]) -> int:
    return KEYS[story][size][1]


def test_no_story_takes_more_keys_than_before() -> None:
    for story, counts in KEYS.items():
        for size, (before, keys) in counts.items():
            assert keys <= before, (story, size)


class Keys:
    """The pilot's keys, counted: each press is one key a person types."""

    def __init__(self, pilot) -> None:
        self.pilot = pilot
        self.count = 0

    async def __call__(self, *keys: str) -> None:
        for key in keys:
            await self.pilot.press(key)
            self.count += 1
        await settle(self.pilot)

    async def type(self, text: str) -> None:
        await self(*text)


def on_screen(app) -> str:
    """The text on the terminal now, as a person reads it."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def integrity(db: Path) -> str:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


@asynccontextmanager
async def launched(demo: DemoWorkspace, size: tuple[int, int]) -> AsyncIterator:
    """The app as ``lovia-tui demo`` opens it: (app, pilot, keys).

    The demo is built once per test session, perhaps just before: its crashed
    runs are waited for until they look crashed."""
    await runs_look_crashed(demo.directory, DEMO_STALE_AFTER)
    app = make_app(
        [demo.directory],
        stale_after=DEMO_STALE_AFTER,
        agent_spec="lovia_tui.demo:agent",
    )
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot, Keys(pilot)


@pytest.mark.parametrize("size", SIZES, ids=["160x45", "80x24"])
async def test_the_crashed_run_and_its_dangling_call(demo, size) -> None:
    """3 to the runs, j to the crashed run: its dangling call is on screen,
    first in the detail, at 80x24 too."""
    async with launched(demo, size) as (app, pilot, keys):
        await keys("3")
        while app.screen.runs.selected.run_id != demo.crashed_run:
            await keys("j")
        await until(pilot, lambda: app.screen.runs.detail.run is not None)
        await settle(pilot)
        shown = on_screen(app)
        assert "1 dangling tool call" in shown
        assert "call_run-crashed_job" in shown
        # The demo's two crashed runs are first, newest first: which one saved
        # last depends on its build, so j is needed once or not at all.
        assert keys.count <= now("crashed run's dangling call", size)


@pytest.mark.parametrize("size", SIZES, ids=["160x45", "80x24"])
async def test_rewind_read_the_preview_and_undo(demo, size) -> None:
    """/kyoto Enter, 2, w: the preview at the top of the dialog with what
    undo restores; Enter Enter rewinds; u Enter undoes: every row is back."""
    before = rows(demo.web_db)
    async with launched(demo, size) as (app, pilot, keys):
        await keys("slash")
        await keys.type("kyoto")
        await keys("enter", "2", "w")
        dialog = app.screen
        assert isinstance(dialog, ActionScreen)
        shown = on_screen(app)
        assert f"rewind {demo.trip_session}: keep" in shown  # the preview's first line
        assert "Confirm" in shown and "Cancel" in shown
        await keys("enter", "enter")
        await until(pilot, lambda: rows(demo.web_db) != before)
        await keys("u")
        assert isinstance(app.screen, ActionScreen)
        assert "undo" in on_screen(app).lower()
        await keys("enter")
        await until(pilot, lambda: rows(demo.web_db) == before)
        assert keys.count == now("rewind, read the preview, undo", size)
    assert integrity(demo.web_db) == "ok"


@pytest.mark.parametrize("size", SIZES, ids=["160x45", "80x24"])
async def test_follow_a_live_run(tmp_path, size) -> None:
    """A real lovia run writing in another process: 3 f follows it, its
    entries arriving in the transcript without a key."""
    db = tmp_path / "live.db"
    writer = await SlowWriter.start(db, "r1", 8, 0.3, "sess-live")
    try:
        app = make_app([db], stale_after=30)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            writer.go()
            await until(pilot, lambda: app.screen.runs.find("r1") is not None)
            keys = Keys(pilot)
            await keys("3", "f")
            pane = app.screen.transcript_pane
            await until(pilot, lambda: pane.followed is not None, timeout=30.0)

            def entries() -> int:
                return sum(1 for row in pane.transcript.rows if row.kind == "entry")

            first = entries()
            await until(pilot, lambda: entries() > first, timeout=30.0)
            assert keys.count == now("follow a live run", size)
    finally:
        await writer.close()


@pytest.mark.parametrize("size", SIZES, ids=["160x45", "80x24"])
async def test_search_lands_on_the_hit(demo, size) -> None:
    """s Kinkaku Enter: the first session listed is chat-jobs, whose only hit
    is in its in-flight run; the transcript's cursor is on it and its title
    says "hit 1/1" (at 80x24, 2 shows the transcript)."""
    async with launched(demo, size) as (app, pilot, keys):
        await keys("s")
        await keys.type("Kinkaku")
        await keys("enter")
        pane = app.screen.transcript_pane
        await until(pilot, lambda: bool(pane.hits.rows))
        if size == NARROW:
            await keys("2")
        await settle(pilot)
        assert pane.session_key[1] == demo.batch_session
        assert pane.transcript.current_row.key == pane.hits.rows[0]
        shown = on_screen(app)
        assert "hit 1/1" in shown and "Kinkaku" in shown
        assert keys.count == now("search and land on the hit", size)


@pytest.mark.parametrize("size", SIZES, ids=["160x45", "80x24"])
async def test_the_doctor_and_one_fix(demo, size) -> None:
    """! Enter Enter: the worst finding (the crash window's completed run that
    no session holds) is replayed into its chat, and the doctor, run again,
    no longer finds it."""
    async with launched(demo, size) as (app, pilot, keys):
        await keys("exclamation_mark")
        doctor = app.screen
        assert isinstance(doctor, DoctorScreen)
        await until(pilot, lambda: doctor.audits == 1)
        assert doctor.current.kind == "crash-window"
        await keys("enter", "enter")
        await until(pilot, lambda: app.screen is doctor and doctor.audits >= 2, 30.0)
        assert "crash-window" not in {f.kind for f in doctor.findings}
        assert keys.count == now("doctor and one fix", size)
    assert integrity(demo.web_db) == "ok"


@pytest.mark.parametrize("size", SIZES, ids=["160x45", "80x24"])
async def test_fork(demo, size) -> None:
    """/kyoto Enter, 2, b Enter Enter: a new chat holding the trip up to the
    last user turn, listed under the filter; chat-kyoto is left as it was."""
    trip = [
        row for row in rows(demo.web_db)["session_runs"] if demo.trip_session in row
    ]
    async with launched(demo, size) as (app, pilot, keys):
        sessions = len(app.screen.sessions.keys)
        await keys("slash")
        await keys.type("kyoto")
        await keys("enter", "2", "b")
        assert isinstance(app.screen, ActionScreen)
        assert on_screen(app).count("fork chat-kyoto: copy its first") == 1
        await keys("enter", "enter")
        await until(pilot, lambda: len(app.screen.sessions.keys) == sessions + 1)
        assert keys.count == now("fork", size)
        # The copy, titled as the trip, passes the filter still typed: its
        # title is read for the filter though the filter hid it at first.
        await until(pilot, lambda: len(app.screen.sessions.shown) == 2)
    after = [
        row for row in rows(demo.web_db)["session_runs"] if demo.trip_session in row
    ]
    assert after == trip
    assert integrity(demo.web_db) == "ok"
