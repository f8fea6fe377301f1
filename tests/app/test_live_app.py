"""The live tail in the app: a real lovia agent in another process writes while
the app, under the pilot, shows each turn and status change without a key press."""

from __future__ import annotations

import asyncio
import sys
from contextlib import asynccontextmanager
from pathlib import Path

from support.agents.slow_writer import SlowWriter
from support.reliability import until

from lovia_tui.app import make_app
from lovia_tui.pilot import settle


@asynccontextmanager
async def writing(tmp_path: Path, runs: str, steps: int, delay: float, session: str):
    """The app on a file a SlowWriter writes ``runs`` into, once the last of
    them is listed: (pilot, writer)."""
    db = tmp_path / "live.db"
    writer = await SlowWriter.start(db, runs, steps, delay, session)
    try:
        app = make_app([db], stale_after=30)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            writer.go()
            last = runs.split(",")[-1]
            await until(
                pilot, lambda: app.screen.runs.find(last) is not None, timeout=30.0
            )
            yield pilot, writer
    finally:
        await writer.close()


def seams(screen) -> list[str]:
    return [row.key for row in screen.transcript.rows if row.kind == "seam"]


async def test_a_running_run_is_followed_until_it_lands_in_its_session(tmp_path):
    async with writing(tmp_path, "r1", 10, 0.5, "sess-live") as (pilot, writer):
        screen = pilot.app.screen
        await pilot.press("3", "f")
        await until(
            pilot,
            lambda: (
                screen.transcript_pane.run_view == "r1"
                and screen.transcript_pane.followed is not None
            ),
            timeout=30.0,
        )

        def shown() -> int:
            return sum(1 for row in screen.transcript.rows if row.kind == "entry")

        first = shown()
        await until(pilot, lambda: shown() > first, timeout=30.0)
        await writer.expect("DONE", timeout=30)
        await until(
            pilot, lambda: screen.runs.find("r1").status == "completed", timeout=30.0
        )
        await until(
            pilot,
            lambda: "sess-live" in {key[1] for key in screen.sessions.keys},
            timeout=30.0,
        )
        calls = [
            row.entry.data.get("name")
            for row in screen.transcript.rows
            if row.kind == "entry" and row.entry.data.get("type") == "tool_call"
        ]
        assert calls == ["pause"] * 10, "every tool call arrived, in order, once"
        # Landed in its session: shown there, the seam gone, also after ctrl+r.
        await until(
            pilot,
            lambda: screen.session_key is not None and not seams(screen),
            timeout=30.0,
        )
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert (
            screen.session_key[1] == "sess-live"
            and screen.transcript_pane.run_view is None
        )
        assert not seams(screen)


async def test_a_run_followed_alone_moves_into_its_session_once_it_lands(tmp_path):
    """r2 runs after r1 in a session already listed; nothing links r2 to it
    while it runs, so it is followed alone behind a seam. Once it is stored
    in the session the transcript shows the session, without the seam, and
    ctrl+r does not bring the seam back (it used to)."""
    async with writing(tmp_path, "r1,r2", 4, 0.3, "sess-two") as (pilot, writer):
        screen = pilot.app.screen
        assert screen.sessions.keys, "r1 is stored: the session is listed"
        await pilot.press("3")
        assert screen.runs.select_run("r2")
        await pilot.press("f")
        await until(
            pilot, lambda: screen.transcript_pane.run_view == "r2", timeout=30.0
        )
        await writer.expect("DONE", timeout=30)
        await until(
            pilot,
            lambda: screen.session_key is not None and not seams(screen),
            timeout=30.0,
        )
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert screen.session_key[1] == "sess-two" and not seams(screen)
        runs = {row.segment.run_id for row in screen.transcript.rows if row.segment}
        assert runs == {"r1", "r2"}


REWIND = (
    "import asyncio, sys\n"
    "from lovia import SQLiteSession\n"
    "asyncio.run(SQLiteSession(sys.argv[1], wal=True).rewind(sys.argv[2], keep_entries=int(sys.argv[3])))\n"
)


async def test_a_rewind_by_another_process_shows_up(snap_dir, monkeypatch):
    from support.app import snapshot_app

    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        key = next(key for key in screen.sessions.keys if key[1] == "chat-kyoto")
        screen.go_to_session(key)
        await settle(pilot)

        def entries() -> list:
            return [
                row.entry.index for row in screen.transcript.rows if row.kind == "entry"
            ]

        assert len(entries()) > 3
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", REWIND, str(snap_dir / "snap.db"), "chat-kyoto", "3"
        )
        assert await child.wait() == 0
        await until(pilot, lambda: entries() == [0, 1, 2], timeout=30.0)
