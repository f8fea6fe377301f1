"""Approving or denying, in the app's console, a call of a run killed while it waited
for approval (a SIGKILLed child), with the reason typed there."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import time
from pathlib import Path

import orjson
import pytest
from support.app import confirm
from support.approvals import (
    CALL,
    RUN,
    SESSION,
    approval_entries,
    build_waiting,
    integrity,
)
from support.lovia_factory import rows, web_records, web_restart
from support.resume import session_rows

from lovia_tui.app import make_app
from lovia_tui.pilot import settle
from lovia_tui.screens.preflight import PreflightScreen
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.run_console import RunConsole

TIMEOUT = 30  # bounded


@pytest.fixture(scope="module")
def web_waiting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run as lovia web's records left it after a restart: linked to its chat."""
    db = build_waiting(tmp_path_factory.mktemp("waiting-app") / "desk.db")

    async def records() -> None:
        await web_records(db, SESSION, RUN)
        await web_restart(db)

    asyncio.run(records())
    return db


async def _resume_until_asked(pilot, run: str = RUN, call: str = CALL) -> RunConsole:
    """R on the run, Enter twice in the preflight (checked), until the console asks."""
    app = pilot.app
    await settle(pilot)
    await pilot.press("3")
    await _until(pilot, lambda: app.screen.runs.selected is not None)
    for _ in range(20):  # bounded: the demo lists fewer runs
        if app.screen.runs.selected.run_id == run:
            break
        await pilot.press("j")
        await settle(pilot)
    await pilot.press("R")
    await settle(pilot)
    dialog = app.screen
    assert isinstance(dialog, PreflightScreen)
    assert [g.call.call_id for g in dialog.pf.approvals.gated] == [call]
    await pilot.press("enter", "enter")  # on to Resume, then start it
    console = app.screen.query_one(RunConsole)
    await _until(pilot, lambda: console.waiting is not None)
    return console


def _app(db: Path):
    return make_app([db], stale_after=0, agent_spec="support.approvals:refund_desk")


async def _until(pilot, condition) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


@pytest.mark.parametrize(
    ("key", "reason", "stored"),
    [
        ("A", "customer verified", "refunded 42 on order A-17"),
        ("V", "[bold]amount too high[/]", "Tool refund was not approved."),
    ],
)
async def test_the_console_asks_and_the_answer_is_stored_and_journaled(
    web_waiting: Path, tmp_path: Path, key: str, reason: str, stored: str
) -> None:
    db = Path(shutil.copy(web_waiting, tmp_path / "desk.db"))
    app = _app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        console = await _resume_until_asked(pilot)

        bar = str(console.query_one("#approval-call").render())
        assert 'refund({"order": "A-17", "amount": 42})' in bar
        assert "its tool is marked needs_approval" in bar
        keys = app.screen.query_one(KeyBar)
        await _until(  # the key bar repaints a moment after the bindings change
            pilot,
            lambda: (
                {"Approve", "Deny", "Reason"} <= {k.description for k in keys._keys}
            ),
        )

        await pilot.press("E")  # the reason field, from the keyboard
        await pilot.press(*reason, "enter")
        await pilot.press(key)
        await _until(pilot, lambda: not console.running)
        await settle(pilot)
        assert console.waiting is None
        lines = [str(line.text) for line in console.query_one("#console-log").lines]
        assert any(
            f"refund {'approved' if key == 'A' else 'denied'} by you: {reason}" in line
            for line in lines
        )
    [(_, _, entries)] = session_rows(db)
    [result] = [
        e
        for e in orjson.loads(entries)
        if e.get("call_id") == CALL and e["type"] == "tool_result"
    ]
    assert result["output"] == stored
    [entry] = await approval_entries()
    assert (entry.action, entry.reason, entry.params["approved"]) == (
        "approval",
        reason,
        key == "A",
    )
    assert integrity(db) == ["ok"]


async def test_cancel_while_waiting_leaves_the_run_interrupted_and_resumable(
    web_waiting: Path, tmp_path: Path
) -> None:
    db = Path(shutil.copy(web_waiting, tmp_path / "desk.db"))
    app = _app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        console = await _resume_until_asked(pilot)
        await pilot.press("K")
        await _until(pilot, lambda: not console.running)
        await settle(pilot)
        assert console.waiting is None
        lines = [str(line.text) for line in console.query_one("#console-log").lines]
        assert any("left unanswered" in line for line in lines)
        assert any(line.startswith("interrupted") for line in lines)
        await pilot.press("3", "R")  # it asks again
        await settle(pilot)
        assert [g.call.call_id for g in app.screen.pf.approvals.gated] == [CALL]
    assert session_rows(db) == []
    assert await approval_entries() == []
    assert integrity(db) == ["ok"]


async def test_the_demos_waiting_refund_is_approved_with_a_reason(demo) -> None:
    """The demo's run killed while ``refund`` waited: R, the console asks, E types
    the reason, A approves; the refund is stored once and the answer is listed
    with the demo file's journal."""
    run, call = demo.approval_run, f"call_{demo.approval_run}_refund"
    before = rows(demo.web_db)
    app = make_app([demo.directory], stale_after=0, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        console = await _resume_until_asked(pilot, run, call)
        await pilot.press("E", *"photo of the damage", "enter", "A")
        await _until(pilot, lambda: not console.running)
        [*_, (_, run_id, entries)] = [
            row for row in session_rows(demo.web_db) if row[0] == demo.approval_session
        ]
        stored = [
            e["output"]
            for e in orjson.loads(entries)
            if e["type"] == "tool_result" and e["call_id"] == call
        ]
        assert (run_id, stored) == (run, ["refunded 42 € on order A-17 💸"])
        [entry] = await approval_entries(files=[demo.web_db])
        assert (entry.action, entry.reason, entry.params["approved"]) == (
            "approval",
            "photo of the damage",
            True,
        )
        # u undoes the resume itself: segment, checkpoint and web records.
        await pilot.press("u")
        await settle(pilot)
        await confirm(pilot)
        await settle(pilot)
    assert rows(demo.web_db) == before
    assert integrity(demo.web_db) == ["ok"]


async def test_q_while_a_call_waits_says_what_it_does_then_quits(
    web_waiting: Path, tmp_path: Path
) -> None:
    """`q` with the console asking: the first says the run stops where it is,
    a second quits; lovia leaves the run interrupted, to resume again."""
    from support.reliability import AppWatch

    db = Path(shutil.copy(web_waiting, tmp_path / "desk.db"))
    app = _app(db)
    watch = AppWatch()
    async with app.run_test(size=(160, 45), message_hook=watch.hook) as pilot:
        watch.attach(app)
        await _resume_until_asked(pilot)
        await pilot.press("q")
        await _until(pilot, lambda: any("q again quits" in t for _, t in watch.notes))
        assert app.is_running
        await pilot.press("q")
    assert app.return_code == 0 and watch.worker_errors == []
    assert integrity(db) == ["ok"]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        head = conn.execute(
            "SELECT head_json FROM snapshot_heads WHERE run_id = ?", (RUN,)
        ).fetchone()[0]
    conn.close()
    assert orjson.loads(head)["status"] == "interrupted"


async def test_a_console_closed_while_a_call_waits_ends_its_run_quietly(demo) -> None:
    """The console's worker cancelled with the app closing (its widgets gone):
    it used to query them, and the app ended with exit code 1."""
    run, call = demo.approval_run, f"call_{demo.approval_run}_refund"
    app = make_app([demo.directory], stale_after=0, agent_spec="lovia_tui.demo:agent")
    async with app.run_test(size=(160, 45)) as pilot:
        console = await _resume_until_asked(pilot, run, call)
        await console.remove()
        await _until(pilot, lambda: not console.running)  # its worker ended
        await pilot.pause()
        assert app.is_running and app.return_code is None
    assert integrity(demo.web_db) == ["ok"]
