"""The inspector on lovia web's chats: a live run's pending calls are running, a
swept one's dangling (files written by lovia web's own store code)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lovia.web.store import ChatStore
from support.app import confirm, snapshot_app, user_rows
from support.lovia_factory import (
    CRASH,
    SCRIPTS,
    abandoned_run,
    rows,
    web_records,
    web_restart,
    write_session,
)

from lovia_tui.app import make_app
from lovia_tui.core.formatting import PIN
from lovia_tui.core.run_status import DANGLING_CALL, RUNNING_CALL
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen
from lovia_tui.widgets.run_detail import RunDetail
from lovia_tui.widgets.transcript_rows import summary_line


def detail_text(app) -> str:
    from rich.console import Console

    body = app.screen.query_one(RunDetail).query_one("#run-detail-body")
    console = Console(width=120, record=True, color_system=None)
    console.print(body.content)
    return console.export_text()


def pending_lines(screen) -> list[str]:
    rows = screen.transcript.rows
    return [
        summary_line(row, rows, False).plain
        for row in rows
        if row.kind == "entry"
        and row.entry.data.get("type") == "tool_call"
        and row.partner is None
    ]


@pytest.mark.parametrize("restarted", [False, True])
async def test_pending_calls_are_running_only_while_the_run_is_live(
    scratch: Path, restarted: bool
) -> None:
    path = scratch / "web.db"
    await web_records(path, "chat", "inflight", title="Jobs")
    await abandoned_run(path, "inflight", CRASH, session_path=path, session_id="chat")
    if restarted:
        await web_restart(path)
    app = make_app([path], stale_after=3600)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.session_key[1] == "chat"
        lines = pending_lines(screen)
        assert len(lines) == 2
        marker = DANGLING_CALL if restarted else RUNNING_CALL
        assert all(marker in line for line in lines), lines
        [seam] = [r for r in screen.transcript.rows if r.kind == "seam"]
        why = "(lovia web marked it interrupted at restart)"
        assert (
            why in summary_line(seam, screen.transcript.rows, False).plain
        ) is restarted
        await pilot.press("3")
        await settle(pilot)
        text = detail_text(app)
        if restarted:
            assert "2 dangling tool calls" in text
            assert "lovia web marked it interrupted at restart" in text
        else:
            assert "2 tool calls running" in text and "dangling" not in text


async def test_the_rewind_dialog_offers_a_fork_that_undo_removes(
    snap_dir, monkeypatch
) -> None:
    app = snapshot_app(snap_dir, monkeypatch)
    db = snap_dir / "snap.db"
    before = rows(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.go_to_session(
            next(k for k in screen.sessions.keys if k[1] == "chat-kyoto")
        )
        await settle(pilot)
        # inside the second user turn
        screen.transcript.move_cursor(user_rows(screen.transcript)[1] + 1)
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, ActionScreen)
        await pilot.click("#alternative")
        await settle(pilot)
        fork_dialog = app.screen
        assert isinstance(fork_dialog, ActionScreen)
        assert fork_dialog.lines[0].startswith("fork chat-kyoto: copy its first")
        await confirm(pilot)  # the focus starts in the Reason
        await settle(pilot)
        store = ChatStore.sqlite(db)
        [fork] = [c for c in await store.list() if c.origin_session_id == "chat-kyoto"]
        assert any(f"fork into {fork.id}: " in n.message for n in app._notifications)
        assert [s.run_id for s in await store.session.segments(fork.id)] == [
            "run-kyoto-1"
        ]
        assert (
            rows(db)["session_runs"][: len(before["session_runs"])]
            == before["session_runs"]
        ), "the source is untouched"
        await pilot.press("u")
        await settle(pilot)
        await confirm(pilot)
        await settle(pilot)
    assert rows(db) == before


async def test_pinned_chats_come_first_with_their_badge(scratch: Path) -> None:
    path = scratch / "web.db"
    store = ChatStore.sqlite(path)
    for sid in ("older", "newer"):
        await store.upsert(sid, agent="worker", title=sid.title())
        await write_session(path, sid, SCRIPTS[2:])
    await store.set_pinned("older", True)
    app = make_app([path])
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        pane = app.screen.sessions
        assert [key[1] for key in pane.keys] == ["older", "newer"]
        first, second = (pane.list.render_row(n, 60).plain for n in (0, 1))
        assert f"{PIN}Older" in first and PIN not in second


async def test_the_app_splices_every_chat_as_show_does(demo_dir, capsys) -> None:
    """Below each session, the app's seams are the runs ``show --json`` puts
    in flight there, with the same status (one spliced model, two callers)."""
    import asyncio
    import json

    from lovia_tui.cli import main

    app = make_app([demo_dir.directory], readonly=True)
    seams: dict[tuple[str, str], list[tuple[str, str]]] = {}
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        for key in list(screen.sessions.keys):
            screen.go_to_session(key)
            await settle(pilot)
            assert screen.session_key == key
            seams[key] = [
                (row.run.run_id, row.status)
                for row in screen.transcript.rows
                if row.kind == "seam"
            ]
    for (file, session_id), shown_by_app in seams.items():
        argv = ["show", file, session_id, "--json", "--readonly"]
        assert await asyncio.to_thread(main, argv) == 0  # it runs its own loop
        shown = json.loads(capsys.readouterr().out)
        flights = [shown["in_flight"], *shown["in_flight_more"]]
        expected = [(f["run_id"], f["status"]) for f in flights if f]
        assert shown_by_app == expected, session_id
    assert sum(bool(found) for found in seams.values()) >= 4  # crashed, interrupted, …
