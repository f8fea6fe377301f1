"""Actions from the app: preview, confirm, done through lovia, undone exactly."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from support.app import confirm, snapshot_app, user_rows, watched_app

from lovia_tui.core.actions.journal import Journal
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen, ForceScreen


def _rows(path) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT id, session_id, run_id, quote(entries_json), quote(meta_json), quote(created_at) "
            "FROM session_runs ORDER BY id"
        ).fetchall()
    finally:
        db.close()


@asynccontextmanager
async def _kyoto(snap_dir, monkeypatch) -> AsyncIterator:
    """The app at 160×45 showing chat-kyoto (two runs): its pilot."""
    app = snapshot_app(snap_dir, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await _open_kyoto(pilot)
        yield pilot


async def _open_kyoto(pilot) -> None:
    screen = pilot.app.screen
    key = next(key for key in screen.sessions.keys if key[1] == "chat-kyoto")
    screen.go_to_session(key)
    await settle(pilot)


async def _rewind_second_turn(pilot) -> ActionScreen:
    """W inside the second user turn: the rewind's dialog."""
    transcript = pilot.app.screen.transcript
    transcript.move_cursor(user_rows(transcript)[1] + 1)
    await pilot.press("W")
    await settle(pilot)
    dialog = pilot.app.screen
    assert isinstance(dialog, ActionScreen)
    return dialog


async def test_rewind_before_a_user_turn_then_undo_restores_identical_rows(
    snap_dir, monkeypatch
):
    db = snap_dir / "snap.db"
    before = _rows(db)
    async with _kyoto(snap_dir, monkeypatch) as pilot:
        app = pilot.app
        dialog = await _rewind_second_turn(pilot)
        text = "\n".join(dialog.lines)
        assert "run-kyoto-2" in text and "check_stock" in text, (
            "the removed run and its tool call are listed"
        )
        # The focus is in the Reason: typed without tabbing, it is kept;
        # Enter there moves on to Confirm, and only Enter on Confirm acts.
        await pilot.press(*"resend", "enter")
        assert isinstance(app.screen, ActionScreen) and app.focused.id == "confirm"
        await pilot.press("enter")
        await settle(pilot)
        after = _rows(db)
        assert [row[2] for row in after] == ["run-kyoto-1", "run-export-1"]
        [entry] = await Journal().entries(None, 1)
        assert entry.action == "rewind" and entry.reason == "resend"
        # Every pane re-read: the sessions list counts one run left, not two.
        kyoto = next(key for key in app.screen.sessions.keys if key[1] == "chat-kyoto")
        assert app.screen.sessions.list.summaries[kyoto].runs == 1
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, ActionScreen)
        await confirm(pilot)
        await settle(pilot)
    assert _rows(db) == before


async def test_clearing_a_session_needs_its_id_typed(snap_dir, monkeypatch):
    """C then Enter, Enter clears nothing: Confirm waits for the session's id."""
    db = snap_dir / "snap.db"
    before = _rows(db)
    async with _kyoto(snap_dir, monkeypatch) as pilot:
        app = pilot.app
        await pilot.press("C")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ActionScreen) and dialog.token[0] == "chat-kyoto"
        await pilot.press("enter", "enter", "enter")
        await settle(pilot)
        assert app.screen is dialog and _rows(db) == before
        await pilot.press(*"chat-kyoto", "enter")
        assert app.focused.id == "confirm" and not app.focused.disabled
        await pilot.press("enter")
        await settle(pilot)
    assert [row[1] for row in _rows(db)] == ["chat-export"]


async def test_cancelling_the_preview_changes_nothing(snap_dir, monkeypatch):
    app = snapshot_app(snap_dir, monkeypatch)
    db = snap_dir / "snap.db"
    before = db.read_bytes()
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await _open_kyoto(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, ActionScreen)
        await pilot.press("escape")
        await settle(pilot)
    assert db.read_bytes() == before


async def test_deleting_a_live_checkpoint_needs_its_id_typed(snap_dir, monkeypatch):
    app = snapshot_app(
        snap_dir, monkeypatch, stale_after=1e9
    )  # the crashed run counts as live
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("3", "d")
        await settle(pilot)
        assert isinstance(app.screen, ForceScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, (ForceScreen, ActionScreen))
    heads = (
        sqlite3.connect(snap_dir / "snap.db")
        .execute("SELECT run_id FROM snapshot_heads")
        .fetchall()
    )
    assert heads == [("run-crashed",)]


async def test_actions_are_shown_disabled_when_read_only(snap_dir, monkeypatch):
    """Every mutation is shown dimmed in its own pane (None), never enabled."""
    app = snapshot_app(snap_dir, monkeypatch, readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        for pane, actions in (
            ("1", ("trim", "clear_session", "undo")),
            ("2", ("rewind_here", "rewind_turn", "trim", "undo")),
            (
                "3",
                (
                    "delete_run",
                    "delete_runs_by_filter",
                    "finalize",
                    "keep_partial",
                    "undo",
                ),
            ),
        ):
            await pilot.press(pane)
            for action in actions:
                assert app.screen.check_action(action, ()) is None, (pane, action)


async def test_rows_moved_on_before_confirm_show_the_new_preview(snap_dir, monkeypatch):
    """An agent appends between the preview and Confirm: nothing is done, the app
    says so and shows the clear as it would be now; confirming that one clears all."""
    from support.lovia_factory import append_entries

    app = snapshot_app(snap_dir, monkeypatch)
    db = snap_dir / "snap.db"
    async with watched_app(app, (160, 45)) as (pilot, watch):
        await _open_kyoto(pilot)
        await pilot.press("C")
        await settle(pilot)
        first = app.screen
        assert isinstance(first, ActionScreen)
        assert "remove 2 segments" in "\n".join(first.lines)
        await append_entries(db, "chat-kyoto", 1, prefix="meanwhile")
        await confirm(pilot)
        await settle(pilot)
        again = app.screen
        assert isinstance(again, ActionScreen) and again is not first
        assert any("rows moved on since the preview" in t for _, t in watch.notes)
        assert "remove 3 segments" in "\n".join(again.lines)  # the new run too
        assert any(row[1] == "chat-kyoto" for row in _rows(db))  # nothing was done
        await confirm(pilot)
        await settle(pilot)
        assert not isinstance(app.screen, ActionScreen)
    assert not any(row[1] == "chat-kyoto" for row in _rows(db))


async def test_through_serve_confirm_without_a_reason_keeps_the_dialog_and_asks(
    snap_dir, monkeypatch
):
    from textual.widgets import Label

    from lovia_tui.core.actions.actor import SERVE_USER_ENV

    monkeypatch.setenv(SERVE_USER_ENV, "alice from 10.0.0.7")
    db = snap_dir / "snap.db"
    before = _rows(db)
    async with _kyoto(snap_dir, monkeypatch) as pilot:
        app = pilot.app
        dialog = await _rewind_second_turn(pilot)
        why = dialog.query_one("#reason-why", Label)
        assert "required through serve" in str(why.content)
        await pilot.press("enter", "enter")  # to Confirm, and Confirm: refused here
        assert app.screen is dialog and _rows(db) == before
        assert "A reason is required" in str(why.content)
        assert app.focused is not None and app.focused.id == "reason"
        await pilot.press(*"ticket 7", "enter", "enter")
        await settle(pilot)
        assert app.screen is not dialog
    assert [row[2] for row in _rows(db)] == ["run-kyoto-1", "run-export-1"]
    [entry] = await Journal().entries(None, 1)
    assert (entry.reason, entry.user) == ("ticket 7", "alice from 10.0.0.7 (serve)")


async def test_a_placeholder_reads_as_one_typed_text_does_not(snap_dir, monkeypatch):
    """The clear dialog's fields show what to type as placeholders ("why",
    the session's id): drawn italic and faint; text typed is drawn plain."""
    from textual.widgets import Input

    def drawn(field: Input) -> list:
        return [
            segment.style
            for segment in field.render_line(0)
            if segment.text.strip() and segment.style is not None
        ]

    async with _kyoto(snap_dir, monkeypatch) as pilot:
        await pilot.press("C")
        await settle(pilot)
        screen = pilot.app.screen
        reason, typed = (
            screen.query_one("#reason", Input),
            screen.query_one("#typed", Input),
        )
        assert (reason.placeholder, typed.placeholder) == ("why", "chat-kyoto")
        for field in (reason, typed):
            shown = drawn(field)
            assert shown and all(s.italic and s.dim for s in shown), shown
        assert pilot.app.focused is reason
        await pilot.press(*"why not")
        await settle(pilot)
        shown = drawn(reason)
        assert reason.value == "why not"
        assert shown and not any(s.italic or s.dim for s in shown), shown
        await pilot.press("escape")
