"""The runs pane on a fleet's checkpoint file: paged, unfinished first, counted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.lovia_factory import write_heads

from lovia_tui.app import make_app
from lovia_tui.core.runs import listing as run_list
from lovia_tui.core.store import head_reads
from lovia_tui.pilot import settle


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """120 heads written by lovia, walked 16 a range, pages cached 40 at most."""
    monkeypatch.setattr(head_reads, "RANGE", 16)
    monkeypatch.setattr(run_list, "PAGE_CACHE", 40)
    now = time.time()
    path = tmp_path / "runs.db"
    return path, asyncio.run(write_heads(path, 120, now))


def unfinished_in_list_order(written) -> list[str]:
    """Running heads first (live or crashed), then interrupted, then failed:
    newest first in each group, whatever goes stale meanwhile."""
    group = {"running": 0, "interrupted": 1, "failed": 2}
    newest = reversed(written)
    return [
        w[0]
        for w in sorted(
            (w for w in newest if w[1] != "completed"), key=lambda w: group[w[1]]
        )
    ]


async def test_unfinished_first_then_every_completed_run_reachable(fleet):
    path, written = fleet
    newest = list(reversed(written))
    unfinished = unfinished_in_list_order(written)
    completed = [w[0] for w in newest if w[1] == "completed"]
    app = make_app([path], readonly=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        pane = app.screen.runs
        title = str(pane.query_one("#runs-title").content)
        assert f"{len(completed)} completed" in title and "counting" not in title
        assert len(pane.source) == len(written)
        marks = [pane.source.mark(i) for i in range(len(unfinished))]
        assert [mark.run_id for mark in marks] == unfinished
        assert pane.selected.run_id == unfinished[0]
        # Unlinked unfinished runs are read as their rows show, not all at once.
        held = [i for i in range(len(unfinished)) if pane.source.at(i) is not None]
        assert 0 in held and len(held) <= 3 * pane.row_list.size.height < len(
            unfinished
        )
        pane.row_list.focus()
        await pilot.press("end")
        await settle(pilot)
        # Far beyond the first pages and the cache: still read, still in order.
        assert pane.selected.run_id == completed[-1]
        await pilot.press("pageup", "pageup")
        await settle(pilot)
        index = pane.row_list.cursor
        assert pane.selected.run_id == completed[index - len(unfinished)]
        # Paged from the top to the end: what is kept read stays bounded.
        await pilot.press("home")
        for _ in range(len(written) // 10):
            await pilot.press("pagedown")
            await settle(pilot)
        window = 3 * pane.row_list.size.height
        assert pane.source.kept <= run_list.PAGE_CACHE + window


async def test_status_filters_and_going_to_a_run(fleet):
    path, written = fleet
    app = make_app([path], readonly=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.action_runs_filter("failed")
        await settle(pilot)
        failed = [w[0] for w in reversed(written) if w[1] == "failed"]
        assert [run.run_id for run in screen.runs.shown] == failed
        screen.action_runs_filter("completed")
        await settle(pilot)
        assert len(screen.runs.source) == sum(w[1] == "completed" for w in written)
        # A run read already is found; the filter that hid it is cleared.
        assert screen.runs.select_run(failed[-1])
        assert screen.runs.status_filter == "all"
        assert screen.runs.selected.run_id == failed[-1]


async def test_going_to_a_run_not_read_yet_finds_it(fleet):
    path, written = fleet
    oldest_completed = next(w[0] for w in written if w[1] == "completed")
    app = make_app([path], readonly=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        pane = app.screen.runs
        assert pane.find(oldest_completed) is None  # far below the first pages
        assert not pane.select_run(oldest_completed)  # looked for in the background
        await settle(pilot)
        assert pane.selected.run_id == oldest_completed
        assert pane.row_list.cursor == len(written) - 1
        assert pane.select_run(oldest_completed)


async def test_a_reload_asked_for_while_walking_is_walked_after(fleet):
    """Reloads never cancel a walk (a busy file would never finish one): the
    last one asked for is walked once the current walk is done."""
    from lovia import RunHead, SQLiteCheckpointer
    from lovia.transcript import InputEntry, Usage

    path, _ = fleet
    app = make_app([path])
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.runs.load()  # walking...
        screen.runs.load()
        assert screen.runs._again is not None  # queued behind the walk
        head = RunHead(
            agent_name="worker", usage=Usage(1, 1), turns=1, status="failed",
            output=None, error={"type": "E", "message": "boom"},
            last_input_tokens=1, updated_at=time.time(), started_at=time.time(),
        )  # fmt: skip
        await SQLiteCheckpointer(path).append(
            "run-new", [InputEntry("user", "x")], head
        )
        screen.runs.load()  # ...asked again meanwhile: queued, not cancelling
        assert screen.runs._walking or not screen.runs._again
        await settle(pilot)
        assert not screen.runs._walking and not screen.runs._again
        # Below the running and interrupted runs: read once gone to.
        screen.runs.select_run("run-new")
        await settle(pilot)
        found = screen.runs.find("run-new")
        assert found is not None and found.status == "failed"
        assert screen.runs.source.counts()["failed"] == 1 + sum(
            w[1] == "failed" for w in fleet[1]
        )


async def test_an_unfinished_run_off_screen_is_named_by_the_palette(fleet):
    """Unfinished runs are no longer all read whole: one off screen is still
    offered by the palette's goto, and going there reads its row."""
    from lovia_tui.screens.goto import GotoProvider

    path, written = fleet
    unfinished = unfinished_in_list_order(written)
    app = make_app([path], readonly=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        far = unfinished[-1]
        assert screen.runs.find(far) is None  # not read: its row is off screen
        titles = [title for title, _, _ in GotoProvider(screen)._targets()]
        assert any(f"Go to run {far} · " in title for title in titles)
        screen.go_to_run(far)
        await settle(pilot)
        assert screen.runs.selected.run_id == far


async def test_rows_shown_by_opening_the_pane_at_80_columns_are_read(fleet):
    """Below 100 columns the runs pane is hidden until `3`: its rows on screen
    then showed "…" (unread) until the cursor moved."""
    path, _ = fleet
    app = make_app([path], readonly=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.screen.runs
        assert not pane.row_list.size.height
        await pilot.press("3")
        await settle(pilot)
        rows = pane.row_list
        top = int(rows.scroll_offset.y)
        on_screen = range(top, min(len(pane.source), top + rows.size.height))
        assert len(on_screen) > 3
        assert all(pane.source.at(index) is not None for index in on_screen)
