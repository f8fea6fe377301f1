"""Snapshot tests of the main screens, on the deterministic lovia database.

Each docstring says what the screenshot must show. Update with
``pytest tests/app/test_snapshots.py --snapshot-update`` after an intended change,
and look at the report before accepting it.
"""

from __future__ import annotations

import pytest
from support.app import snapshot_app

from lovia_tui.pilot import settle

WIDE = (160, 40)


def test_main_screen(snap_dir, monkeypatch, snap_compare):
    """Sessions, transcript and runs side by side: two sessions (one with a
    live/stale badge), the newest session's transcript with the seam of its
    unfinished run, and the stale crashed run selected with its dangling call."""
    app = snapshot_app(snap_dir, monkeypatch)
    assert snap_compare(app, terminal_size=WIDE, run_before=settle)


def test_crashed_run_jumps_to_its_session(snap_dir, monkeypatch, snap_compare):
    """After choosing the crashed run (3, Enter): the transcript of chat-export
    with the cursor on the seam "not yet in the session — run run-crashed,
    status stale", the run_job call flagged as having no result, and the run
    detail listing the dangling call with its arguments and the resume warning."""
    app = snapshot_app(snap_dir, monkeypatch)

    async def choose_run(pilot) -> None:
        await settle(pilot)
        await pilot.press("3", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=choose_run)


def test_expanded_tool_call_and_raw_entry(snap_dir, monkeypatch, snap_compare):
    """The transcript focused, the last entry expanded (pretty arguments),
    then shown as raw JSON with `r`."""
    app = snapshot_app(snap_dir, monkeypatch)

    async def expand(pilot) -> None:
        await settle(pilot)
        await pilot.press("2", "up", "enter", "down", "enter", "r")
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=expand)


def test_help_screen(snap_dir, monkeypatch, snap_compare):
    """The help screen over the inspector, listing every key and command."""
    app = snapshot_app(snap_dir, monkeypatch)

    async def open_help(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=open_help)


def test_narrow_layout(snap_dir, monkeypatch, snap_compare):
    """At 80×24 only one pane shows: the sessions list, full width."""
    app = snapshot_app(snap_dir, monkeypatch)
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_narrow_layout_runs_pane(snap_dir, monkeypatch, snap_compare):
    """At 80×24 after `3`: the runs pane alone, the crashed run selected, its
    dangling call first in the detail (with its arguments), then its head; the
    key bar cut at a whole key, `y Copy id` on it."""
    app = snapshot_app(snap_dir, monkeypatch)

    async def runs(pilot) -> None:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=runs)


async def _rewind_dialog(pilot) -> None:
    """chat-kyoto's transcript, the cursor on its last assistant answer, `w`."""
    await settle(pilot)
    screen = pilot.app.screen
    await pilot.press("1")
    screen.sessions.row_list.cursor = [key[1] for key in screen.sessions.shown].index(
        "chat-kyoto"
    )
    await settle(pilot)
    await pilot.press("2", "up", "up", "w")
    await settle(pilot)


@pytest.mark.parametrize(
    "size", [(60, 15), (80, 24), (160, 45)], ids=["60x15", "80x24", "160x45"]
)
def test_rewind_dialog(snap_dir, monkeypatch, snap_compare, size):
    """The rewind dialog over chat-kyoto at each size: its title, then the
    preview from its first line ("rewind chat-kyoto: keep …"), wrapped, never
    cut, in a scroll of its own at the top; the Reason field below it; the
    buttons (Confirm, Fork, Cancel) on one line at the bottom, all on screen,
    at 60x15 too."""
    app = snapshot_app(snap_dir, monkeypatch)
    assert snap_compare(app, terminal_size=size, run_before=_rewind_dialog)


def test_clear_dialog_asks_for_the_id_in_place(snap_dir, monkeypatch, snap_compare):
    """At 60x15, Clear on chat-kyoto, then Enter in the Reason and Enter in the
    empty confirmation: the dialog stays, its line "…type chat-kyoto below to
    confirm (Confirm stays off until it matches)" now in the warning colour,
    the typed field focused and Confirm greyed out."""
    app = snapshot_app(snap_dir, monkeypatch)

    async def clear(pilot) -> None:
        await settle(pilot)
        screen = pilot.app.screen
        await pilot.press("1")
        names = [key[1] for key in screen.sessions.shown]
        screen.sessions.row_list.cursor = names.index("chat-kyoto")
        await settle(pilot)
        await pilot.press("C")
        await settle(pilot)
        await pilot.press("enter", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(60, 15), run_before=clear)
