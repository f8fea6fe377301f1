"""Resume and replay from the app: preflight dialog, console, refreshed views."""

from __future__ import annotations

import sqlite3

from support.app import snapshot_app

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
