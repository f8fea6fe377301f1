"""Snapshot tests of the main screens, on the deterministic lovia database.

Each docstring says what the screenshot must show. Update with
``pytest tests/app/test_snapshots.py --snapshot-update`` after an intended change,
and look at the report before accepting it.
"""

from __future__ import annotations

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
    """At 80×24 after `3`: the runs pane alone, the crashed run and its head."""
    app = snapshot_app(snap_dir, monkeypatch)

    async def runs(pilot) -> None:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=runs)
