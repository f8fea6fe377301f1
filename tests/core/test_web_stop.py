"""Finalize is lovia web's Stop on a web chat; rewind reaches into the in-flight
run as lovia web's does; previews name a pending handoff and list only calls
that ran. Each compared with lovia web's own server code (its FastAPI app,
driven in-process over HTTP) or lovia's events on a copy of the same file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from lovia import (
    Agent,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import InputEntry
from support.lovia_factory import (
    CRASH,
    SCRIPTS,
    abandoned_run,
    agent,
    copy_db,
    echo,
    raw,
    rows,
    settled_rows,
    web_records,
    web_restart,
    web_wind_down,
    write_session,
)

from lovia_tui.core.actions.describe import describe
from lovia_tui.core.actions.perform import perform
from lovia_tui.core.actions.run_plans import preview_delete_runs, preview_finalize
from lovia_tui.core.actions.session_plans import preview_rewind, user_turn_start
from lovia_tui.core.store.workspace import Workspace

pytestmark = pytest.mark.usefixtures("private_journal")


@tool
async def pause(seconds: float) -> str:
    """Return after ``seconds``: the run is abandoned before its result is saved."""
    await asyncio.sleep(seconds)
    return "woke"


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (needs approval; nobody approves it here)."""
    return f"refunded {order}"


async def lovia_web(path: Path, method: str, url: str, **kwargs: Any) -> Any:
    """One request to lovia web's own app on ``path``, served in-process."""
    from lovia.web.app import create_app

    app = create_app(agent(SCRIPTS[0]), db_path=path, titles=False, ui=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://web") as client:
        response = await client.request(method, url, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def same_file(ours: Path, theirs: Path) -> None:
    assert rows(ours) == rows(theirs)
    for path in (ours, theirs):
        assert raw(path, "PRAGMA integrity_check") == [("ok",)]


async def in_flight_chat(path: Path, *, stored: bool, restarted: bool) -> Path:
    """Chat "chat" (one finished run if ``stored``), then "inflight" killed mid-tool."""
    if stored:
        await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "inflight")
    await abandoned_run(path, "inflight", CRASH, session_path=path, session_id="chat")
    if restarted:
        await web_restart(path)
    return path


@pytest.mark.parametrize("restarted", [True, False], ids=["swept", "not-swept"])
async def test_finalize_of_a_stranded_web_run_is_lovia_webs_stop(
    scratch: Path, restarted: bool
) -> None:
    """No live task: the checkpoint and the chat's pointer go and nothing is
    appended, as ``POST /api/chat/cancel`` does; the run record is
    ``interrupted``, as lovia web's restart (which must come before its Stop
    can reach a run its dead server left) makes it."""
    path = await in_flight_chat(scratch / "web.db", stored=True, restarted=restarted)
    copy = copy_db(path, scratch / "copy.db")
    ws = await Workspace.open([path])
    try:
        preview = await preview_finalize(ws, "inflight", stale_after=0)
        lines = describe(preview)
        result = await perform(ws, preview)
    finally:
        await ws.close()
    record = "interrupted" if restarted else "running"
    assert (preview.mode, preview.live, preview.entries_appended) == ("stop", False, 0)
    assert (preview.web_record, preview.web_record_after) == (
        (record, None) if restarted else (record, "interrupted")
    )
    assert preview.entries_left_out == 3  # the user's message and two dangling calls
    assert result.counts == {"entries_appended": 0, "checkpoints_deleted": 1}
    assert "stranded run: its checkpoint goes, nothing is appended" in lines[0]
    assert lines[-1].startswith("undo restores the checkpoint and web records")
    assert (
        "the web UI's run record stays interrupted"
        if restarted
        else "the web UI's run record: running → interrupted"
    ) in "\n".join(lines)
    await web_restart(copy)  # a no-op when the file was swept already
    assert await lovia_web(
        copy, "POST", "/api/chat/cancel", params={"session_id": "chat"}
    )
    assert settled_rows(path) == settled_rows(copy)
    assert [r[4] for r in rows(path)["chat_runs"]] == ["'interrupted'"]
    for file in (path, copy):
        assert raw(file, "PRAGMA integrity_check") == [("ok",)]


async def partial_turn_run(path: Path) -> list[int]:
    """Run "inflight" of chat "chat": a whole turn (c1), then a turn whose first
    call (k1) is saved with its result while the second (k2) is not: the
    stream is abandoned as k2 returns, before lovia saves its result. Returns the run's own entry counts (system input aside) saved
    at each ``TurnEnded``: what lovia web's Stop keeps is the last."""
    checkpointer = SQLiteCheckpointer(path, wal=True)
    worker = Agent(
        name="worker",
        instructions="Do as asked.",
        model=ScriptedProvider(
            [
                call("echo", {"message": "first"}, call_id="c1"),
                batch(
                    ("echo", {"message": "a"}, "k1"), ("pause", {"seconds": 0.2}, "k2")
                ),
                text("never"),
            ]
        ),
        tools=[echo, pause],
    )
    handle = Runner.stream(
        worker,
        "Start the job.",
        session=SQLiteSession(path, wal=True),
        session_id="chat",
        checkpoint=CheckpointOptions(checkpointer, "inflight"),
    )
    whole = []
    async for event in handle:
        if isinstance(event, events.TurnEnded):
            snapshot = await checkpointer.load("inflight")
            assert snapshot is not None
            whole.append(
                sum(
                    1
                    for e in snapshot.entries
                    if not (isinstance(e, InputEntry) and e.role == "system")
                )
            )
        if isinstance(event, events.ToolCallCompleted) and event.call.id == "k2":
            break
    return whole


@pytest.mark.parametrize("keep_partial", [False, True], ids=["stop", "keep-partial"])
async def test_a_live_web_run_stops_on_whole_turns(
    scratch: Path, keep_partial: bool
) -> None:
    """Forced on a live run, Stop keeps whole turns only (what lovia web's
    ``completed_mirror`` holds: entries up to the last ``TurnEnded``) and
    closes the record cancelled; keep-partial keeps the finished call k1 of
    the unfinished turn too."""
    path = scratch / "web.db"
    await web_records(path, "chat", "inflight")
    whole = await partial_turn_run(path)
    copy = copy_db(path, scratch / "copy.db")
    ws = await Workspace.open([path])
    try:
        preview = await preview_finalize(
            ws, "inflight", keep_partial=keep_partial, force=True
        )
        lines = describe(preview)
        await perform(ws, preview)
    finally:
        await ws.close()
    checkpointer = SQLiteCheckpointer(copy, wal=True)
    snapshot = await checkpointer.load("inflight")
    assert snapshot is not None
    own = [
        e
        for e in snapshot.entries
        if not (isinstance(e, InputEntry) and e.role == "system")
    ]
    if keep_partial:
        expected = [e for e in snapshot.entries if getattr(e, "call_id", "") != "k2"]
        assert preview.mode == "keep-partial" and "unfinished turn included" in lines[0]
    else:
        expected = own[: whole[-1]]
        assert preview.mode == "stop" and preview.live
        assert "live run: its whole turns are kept" in lines[0]
        assert preview.entries_left_out == len(own) - whole[-1] == 3
    assert [getattr(e, "call_id", None) for e in expected][-2:] == (
        ["k1", "k1"] if keep_partial else ["c1", "c1"]
    )
    assert preview.entries_appended == len(expected)
    await web_wind_down(copy, "chat", "inflight", expected, preview.timing)
    assert settled_rows(path) == settled_rows(copy)
    for file in (path, copy):
        assert raw(file, "PRAGMA integrity_check") == [("ok",)]


@pytest.mark.parametrize("stored", [False, True], ids=["only-run", "after-a-segment"])
async def test_rewind_into_the_in_flight_run_is_lovia_webs(
    scratch: Path, stored: bool
) -> None:
    """A cut at the in-flight run's user turn drops its checkpoint and the
    chat's pointer and keeps every stored entry, as lovia web's rewind does
    (``POST /api/sessions/{id}/rewind``)."""
    path = await in_flight_chat(scratch / "web.db", stored=stored, restarted=True)
    copy = copy_db(path, scratch / "copy.db")
    keep = 4 if stored else 0  # SCRIPTS[0] stores 4 entries
    ws = await Workspace.open([path])
    try:
        preview = await preview_rewind(ws, "chat", keep)
        lines = describe(preview)
        past_the_end = await preview_rewind(ws, "chat", keep + 3)
        # "Rewind turn" on the in-flight run's pending call cuts where it starts.
        assert await user_turn_start(ws, "chat", keep + 2) == keep
        result = await perform(ws, preview)
    finally:
        await ws.close()
    assert past_the_end.noop
    assert not preview.noop and preview.entries_removed == 0
    assert [(c.run_id, c.web_pointer) for c in preview.checkpoints] == [
        ("inflight", "chat")
    ]
    assert "falls inside the chat's in-flight run" in lines[0]
    assert result.counts == {"entries_removed": 0, "checkpoints_deleted": 1}
    answer = await lovia_web(
        copy,
        "POST",
        "/api/sessions/chat/rewind",
        json={"user_turn": 1 if stored else 0},
    )
    assert answer["removed"] == 0
    same_file(path, copy)


async def test_previews_list_only_calls_that_ran(scratch: Path) -> None:
    """A denied call ("Tool refund was not approved.") and an unknown tool never
    ran: rewinding them away warns of the echo alone."""
    path = scratch / "app.db"
    worker = Agent(
        name="worker",
        model=ScriptedProvider(
            [
                batch(
                    ("echo", {"message": "sent"}, "e1"),
                    ("refund", {"order": "A-1"}, "r1"),
                    ("teleport", {}, "t1"),
                ),
                text("Done."),
            ]
        ),
        tools=[echo, refund],
    )
    await Runner.run(worker, "Go.", session=SQLiteSession(path), session_id="s")
    stored = raw(path, "SELECT entries_json FROM session_runs")[0][0]
    assert "Tool refund was not approved." in stored
    ws = await Workspace.open([path])
    try:
        preview = await preview_rewind(ws, "s", 0)
    finally:
        await ws.close()
    assert [c.call_id for c in preview.side_effects] == ["e1"]
    assert "  echo(" in "\n".join(describe(preview))


async def handed_off(path: Path) -> None:
    """Run "handed" of session "s": the triage agent hands off to billing, and
    the process dies before billing's first turn (head ``pending_handoff``)."""
    billing = Agent(name="billing", model=ScriptedProvider([text("Refunded.")]))
    triage = Agent(
        name="triage",
        model=ScriptedProvider([call("transfer_to_billing", {}, call_id="h1")]),
        handoffs=[billing],
    )
    handle = Runner.stream(
        triage,
        "I want a refund.",
        session=SQLiteSession(path, wal=True),
        session_id="s",
        checkpoint=CheckpointOptions(SQLiteCheckpointer(path, wal=True), "handed"),
    )
    async for event in handle:
        if isinstance(event, events.TurnEnded):
            break


async def test_a_pending_handoff_is_named_in_every_preview_it_affects(
    scratch: Path,
) -> None:
    path = scratch / "app.db"
    await write_session(path, "s", SCRIPTS[:1])
    await handed_off(path)
    [(head,)] = raw(
        path, "SELECT head_json FROM snapshot_heads WHERE run_id = 'handed'"
    )
    assert '"pending_handoff": "billing"' in head
    ws = await Workspace.open([path])
    try:
        previews = [
            await preview_finalize(ws, "handed", "s", stale_after=0),
            await preview_finalize(ws, "handed", "s", keep_partial=True, stale_after=0),
            await preview_delete_runs(ws, ["handed"], stale_after=0),
        ]
    finally:
        await ws.close()
    for preview in previews:
        text_of = "\n".join(describe(preview))
        assert "run handed had handed off to 'billing'" in text_of, text_of
        assert "the next run starts on the entry agent" in text_of
