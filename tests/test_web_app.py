"""The inspector on lovia web's chats: a live run's pending calls are running, a
swept one's dangling (files written by lovia web's own store code)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import settle
from lovia_factory import CRASH, abandoned_run, web_records, web_restart

from lovia_tui.app import make_app
from lovia_tui.core.liveness import DANGLING_CALL, RUNNING_CALL
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
        await pilot.press("3")
        await settle(pilot)
        text = detail_text(app)
        if restarted:
            assert "2 dangling tool call(s)" in text
            assert "lovia web marked it interrupted at restart" in text
        else:
            assert "2 tool call(s) running" in text and "dangling" not in text
