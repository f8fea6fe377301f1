"""Resume and replay from the app: preflight dialog, console, refreshed views."""

from __future__ import annotations

import sqlite3

from support.app import confirm, snapshot_app
from support.reliability import until

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.perform import undo
from lovia_tui.pilot import settle
from lovia_tui.screens.preflight import PreflightScreen
from lovia_tui.widgets.run_console import RunConsole


async def test_resume_from_the_app_finishes_the_crashed_run(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("3", "R")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PreflightScreen)
        assert dialog.pf.ok and [c.name for c in dialog.pf.dangling] == ["run_job"]
        assert (
            dialog.pf.session_id == "chat-export" and dialog.pf.session_source == "web"
        )
        assert app.focused.id == "max-turns", "not the button that starts the run"
        await pilot.press("enter")  # moves on to Resume: it does not start it
        assert isinstance(app.screen, PreflightScreen) and app.focused.id == "go"
        await pilot.press("enter")
        await settle(pilot)
        console = app.screen.query_one(RunConsole)
        assert not console.running and not console.has_class("hidden")
        lines = [str(line.text) for line in console.query_one("#console-log").lines]
        assert any("completed" in line for line in lines)
    db = sqlite3.connect(snap_dir / "snap.db")
    status = db.execute(
        "SELECT json_extract(head_json, '$.status') FROM snapshot_heads WHERE run_id = 'run-crashed'"
    ).fetchone()
    appended = db.execute(
        "SELECT COUNT(*) FROM session_runs WHERE run_id = 'run-crashed' AND session_id = 'chat-export'"
    ).fetchone()
    pointer = db.execute(
        "SELECT active_run_id FROM chat_sessions WHERE id = 'chat-export'"
    ).fetchone()
    # A web chat's run, ended as lovia web ends one: stored, its checkpoint
    # deleted, the chat's pointer cleared.
    assert (status, appended, pointer) == (None, (1,), (None,))


async def test_resume_without_an_agent_explains_how_to_give_one(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("3", "R")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PreflightScreen)
        assert not dialog.pf.ok
        assert any("--agent MODULE:ATTR" in problem for problem in dialog.pf.problems)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, PreflightScreen)


async def test_resume_and_replay_are_hidden_in_readonly_mode(snap_dir, monkeypatch):
    app = snapshot_app(
        snap_dir, monkeypatch, readonly=True, agent_spec="lovia_tui.demo:agent"
    )
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        assert app.screen.check_action("resume", ()) is None
        await pilot.press("R")
        await settle(pilot)
        assert not isinstance(app.screen, PreflightScreen)


def _console_text(console: RunConsole) -> tuple[str, str]:
    """The console's title, and its log (wrapped lines joined)."""
    title = str(console.query_one("#console-title").content)
    lines = [str(line.text) for line in console.query_one("#console-log").lines]
    return title, "\n".join(lines)


async def _resumed(pilot) -> tuple[RunConsole, int]:
    """The demo's crashed run resumed from the Runs pane: its console, and
    its journal entry."""
    await settle(pilot)
    await pilot.press("3", "R", "enter", "enter")
    await settle(pilot)
    console = pilot.app.screen.query_one(RunConsole)
    assert not console.running and console.journal_id is not None
    return console, console.journal_id


async def test_the_console_says_when_its_run_is_undone_and_redone(
    snap_dir, monkeypatch
):
    """u on a resume's journal entry: the console that showed the run says
    so, in its log and its title; that undo undone elsewhere (a commit by
    another process), it says the run is back."""
    app = snapshot_app(snap_dir, monkeypatch, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        console, run_entry = await _resumed(pilot)
        title, lines = _console_text(console)
        assert "completed" in title and "undone" not in title + lines
        await pilot.press("u")
        await settle(pilot)
        await confirm(pilot)
        await settle(pilot)
        undo_entry = Journal().get_sync(run_entry).undone_by
        assert undo_entry is not None
        title, lines = _console_text(console)
        assert title.endswith(f"completed · undone (journal #{undo_entry})"), title
        undone = f"↶ this run was undone (journal #{run_entry}, by #{undo_entry})"
        assert undone in lines, lines
        # Redo: the undo undone by its id, as `lovia-tui undo ID` does from
        # another terminal (u walks back through history, skipping undos).
        await undo(app.screen.workspace, undo_entry, Journal())
        await until(pilot, lambda: "↷" in _console_text(console)[1], what="redo")
        title, lines = _console_text(console)
        assert title.endswith("· completed"), title
        back = (
            f"↷ its undo was undone: what this run did is back (journal #{run_entry})"
        )
        assert lines.index(undone) < lines.index(back), lines


async def test_a_hidden_console_says_its_run_was_undone_when_shown_again(
    snap_dir, monkeypatch
):
    """Undone while the console was hidden (here, as another process or the
    command line would do it): `c` shows the console, saying so."""
    app = snapshot_app(snap_dir, monkeypatch, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        console, run_entry = await _resumed(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert console.has_class("hidden")
        result = await undo(app.screen.workspace, run_entry, Journal())
        await pilot.press("c")
        await settle(pilot)
        title, lines = _console_text(console)
        assert not console.has_class("hidden")
        assert title.endswith(f"undone (journal #{result.undo_entry_id})"), title
        assert f"↶ this run was undone (journal #{run_entry}, by #" in lines, lines
