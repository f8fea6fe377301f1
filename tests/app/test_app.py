"""Driving the inspector with the pilot, on a database written by lovia."""

from __future__ import annotations

import hashlib

import pytest
from support.app import snapshot_app, watched_app
from support.reliability import until
from textual.widgets import Input

from lovia_tui.app import make_app
from lovia_tui.core.export import export_name
from lovia_tui.pilot import settle
from lovia_tui.screens.export_dialog import ExportScreen
from lovia_tui.screens.help import HelpScreen
from lovia_tui.view.kinds import Pane
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.run_detail import RunDetail


def _detail_text(app) -> str:
    body = app.screen.query_one(RunDetail).query_one("#run-detail-body")
    return str(body.render()) if not hasattr(body, "content") else _plain(body)


def _plain(static) -> str:
    from rich.console import Console

    console = Console(width=100, record=True, color_system=None)
    console.print(static.content)
    return console.export_text()


async def _select_run(pilot, run_id: str) -> None:
    screen = pilot.app.screen
    await pilot.press("3")
    index = [run.run_id for run in screen.runs.shown].index(run_id)
    screen.runs.row_list.cursor = index
    await settle(pilot)


async def test_three_panes_show_sessions_transcript_and_runs(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert {key[1] for key in screen.sessions.keys} == {"chat-kyoto", "chat-export"}
        assert [run.run_id for run in screen.runs.runs] == ["run-crashed"]
        assert screen.transcript.rows, "the selected session's transcript is shown"


async def test_crashed_run_shows_dangling_call_and_jumps_to_the_seam(
    snap_dir, monkeypatch
):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await _select_run(pilot, "run-crashed")
        text = _detail_text(app)
        assert "stale" in text
        assert "run_job" in text and "nightly-export" in text
        assert "executes each of these again" in text
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert screen.session_key[1] == "chat-export"
        assert screen.transcript.current_row.key == "seam:run-crashed"
        assert app.focused is screen.transcript
        dangling = [
            r
            for r in screen.transcript.rows
            if r.kind == "entry" and r.entry.data.get("name") == "run_job"
        ]
        assert len(dangling) == 1 and dangling[0].partner is None


async def test_filter_narrows_sessions_by_id_and_title(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert app.screen.session_key[1] != "chat-kyoto"
        await pilot.press("slash", *"kyoto")
        await settle(pilot)
        assert [key[1] for key in app.screen.sessions.shown] == ["chat-kyoto"]
        # The transcript follows the list: the one session left is shown.
        assert app.screen.session_key[1] == "chat-kyoto"
        assert any(
            row.segment and row.segment.session_id == "chat-kyoto"
            for row in app.screen.transcript.rows
        )
        await pilot.press("escape")
        await settle(pilot)
        assert len(app.screen.sessions.shown) == 2


async def test_content_search_finds_message_text(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s", *"金閣寺", "enter")
        await settle(pilot)
        assert [key[1] for key in app.screen.sessions.shown] == ["chat-kyoto"]
        assert app.screen.transcript.needle == "金閣寺"


async def test_help_lists_every_command_and_closes(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_the_key_bar_follows_the_focus_and_its_keys_click(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(KeyBar)
        assert "Fold/unfold" not in str(bar.render())
        await pilot.press("2")  # the transcript's own keys join the screen's
        await pilot.pause()
        line = str(bar.render())
        assert "Fold/unfold" in line and line.rstrip().endswith("^p palette")
        await pilot.click(KeyBar, offset=(line.index("? Help") + 2, 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_export_writes_the_transcript(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        key = app.screen.session_key
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.press("enter")  # the name it proposes
        await settle(pilot)
    exported = (snap_dir / export_name(key[1], "md")).read_text(encoding="utf-8")
    assert exported.startswith(f"# Session `{key[1]}`")


async def test_entries_fold_unfold_and_show_raw_json(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        transcript = app.screen.transcript
        lines_before = transcript.virtual_size.height
        await pilot.press("enter")
        assert transcript.virtual_size.height > lines_before
        await pilot.press("r")
        assert transcript.shows_raw(transcript.current_row.key)
        await pilot.press("enter")
        assert transcript.virtual_size.height == lines_before, (
            "a short entry folds again"
        )


async def test_narrow_terminal_shows_one_pane_at_a_time(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.has_class("narrow")
        shown = [
            pane.id
            for pane in screen.query(".pane")
            if pane.display
            and pane.styles.display != "none"
            and pane.has_class("focused")
        ]
        assert shown == ["sessions-pane"]
        await pilot.press("tab")
        await settle(pilot)
        assert screen.query_one("#transcript-pane").has_class("focused")


async def test_readonly_browsing_leaves_the_file_byte_identical(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch, readonly=True)
    db = snap_dir / "snap.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press(
            "2", "enter", "r", "3", "enter", "1", "down", "s", *"Kyoto", "enter"
        )
        await settle(pilot)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    leftovers = {p.name for p in snap_dir.iterdir()} - {"snap.db"}
    assert leftovers <= {"snap.db-wal", "snap.db-shm"}
    wal = snap_dir / "snap.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


@pytest.mark.parametrize("opener", ["s", "slash"])
async def test_the_keys_typed_in_the_burst_that_opens_the_box_are_its_text(
    snap_dir, monkeypatch, opener: str
):
    """`s` then "tokyo" in one burst (a fast typist; tmux ``send-keys stokyo``):
    every letter goes to the box. They reached the pane first, as commands:
    `t` opened Trim and `o` the pager, twice."""
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        inspector = app.screen
        for key in (opener, *"tokyo"):
            app.simulate_key(key)
        await settle(pilot)
        box = inspector.query_one("#session-filter", Input)
        assert app.screen is inspector and app.focused is box
        assert box.value == "tokyo"
        await pilot.press("s")  # in the box, `s` is text too
        assert box.value == "tokyos"


@pytest.mark.parametrize("to_runs", [("3",), ("tab", "tab")])
async def test_the_keys_typed_in_the_burst_that_moves_the_focus_go_to_its_pane(
    demo_dir, to_runs: tuple[str, ...]
):
    """`3` then Down Down J in one burst (tmux ``send-keys 3 Down Down R``):
    the runs cursor moves and J acts on that run. The Downs reached the
    sessions list first, and `R` then resumed the run at the top, not the
    one the user went down to; later, `R` was answered "acts in the Runs (3)
    pane: go there first" by the pane the keys were passing through."""
    app = make_app(demo_dir.files, readonly=True)  # the shared demo: never written
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        inspector = app.screen
        sessions, runs = inspector.sessions.row_list, inspector.runs.row_list
        before = (sessions.cursor, runs.cursor)
        assert runs.count > runs.cursor + 2
        for key in (*to_runs, "down", "down"):
            app.simulate_key(key)
        await settle(pilot)
        assert app.focused is runs
        assert (sessions.cursor, runs.cursor) == (before[0], before[1] + 2)
        await pilot.press("1")
        for key in ("3", "J"):  # J: show the run under the cursor in its session
            app.simulate_key(key)
        await settle(pilot)
        assert [n.message for n in app._notifications if "go there" in n.message] == []
        assert inspector.focused_pane is Pane.TRANSCRIPT


async def test_palette_paged_in_the_same_burst_that_opens_it(snap_dir, monkeypatch):
    """ctrl+p then PgUp/PgDn in one burst (tmux ``send-keys C-p PPage``): the
    palette's list has no size yet; the app must keep running (it used to end
    with KeyError in OptionList._move_page)."""
    from textual.command import CommandPalette

    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        for keys in (["ctrl+p", "pageup"], ["ctrl+p", "pagedown", "pageup"]):
            for key in keys:
                app.simulate_key(key)
            await pilot.pause()
            await pilot.pause()
            assert app.is_running and isinstance(app.screen, CommandPalette)
            await pilot.press("pagedown", "pageup")  # laid out now: pages as usual
            await pilot.press("escape")
            await settle(pilot)
        assert app.is_running and app.return_code is None


async def test_ctrl_c_says_which_key_quits_in_plain_words(snap_dir, monkeypatch):
    """Textual's own "Press [b]q[/b] to quit" showed its markup as text."""
    app = snapshot_app(snap_dir, monkeypatch)
    async with watched_app(app, (120, 30)) as (pilot, watch):
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert watch.notes == [("information", "Press q to quit the app")]
        assert app.is_running
