"""lovia-tui agrees with lovia web on its chats: files written by lovia web's own
store code (ChatStore, SQLiteSession, SQLiteCheckpointer as its server uses them,
its start-up sweep included)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from pathlib import Path

import pytest
from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.transcript import entry_to_dict
from lovia.web.store import ChatStore
from support.lovia_factory import (
    CRASH,
    SCRIPTS,
    abandoned_run,
    web_records,
    web_restart,
    write_session,
)

from lovia_tui.cli import main
from lovia_tui.core.actions.run_plans import preview_finalize
from lovia_tui.core.actions.web_settle import UNDONE
from lovia_tui.core.doctor.audit import diagnose
from lovia_tui.core.formatting import PIN
from lovia_tui.core.runs.agents import load_agent
from lovia_tui.core.runs.index import RunOrder
from lovia_tui.core.runs.preflight import preflight
from lovia_tui.core.runs.resume import RunControl, resume
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.demo.crash import crash_run

pytestmark = pytest.mark.usefixtures("private_journal")


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Human output unwrapped, so that a line can be looked for whole."""
    monkeypatch.setenv("COLUMNS", "240")


async def restarted_chat(path: Path) -> Path:
    """Chat "chat": one finished run, then "inflight" killed mid-tool, then a server restart."""
    await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "inflight")
    await abandoned_run(path, "inflight", CRASH, session_path=path, session_id="chat")
    await web_restart(path)
    return path


async def cli_json(capsys: pytest.CaptureFixture[str], *argv: str | Path):
    """``lovia-tui ARGV --json`` from an async test (the CLI runs its own loop)."""
    assert await asyncio.to_thread(main, [str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)


async def test_a_run_lovia_web_swept_is_not_live(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = await restarted_chat(scratch / "web.db")
    # Saved a moment ago, under any stale limit: only the web record tells.
    [record] = (
        await cli_json(capsys, "runs", path, "--json", "--stale-after", "3600")
    )["runs"]
    assert record["status"] == "running" and record["stale"] is True
    assert record["web_record"] == "interrupted"
    assert record["stale_reason"] == "lovia web marked it interrupted at restart"
    # The filter in SQL and the runs list's walk agree with the record.
    stale = await cli_json(
        capsys, "runs", path, "--json", "--status", "stale", "--stale-after", "3600"
    )
    assert [r["run_id"] for r in stale["runs"]] == ["inflight"]

    ws = await Workspace.open([path])
    try:
        [order] = [RunOrder(db) for db in ws.databases]
        async for _ in order.walk():
            pass
        counts = order.counts(time.time(), 3600)
        assert (counts["stale"], counts["running"]) == (1, 0)
        preview = await preview_finalize(ws, "inflight", stale_after=3600)
        assert preview.checkpoint.live is False
        assert preview.web_record == "interrupted"
        report = await diagnose(ws, stale_after=3600)
    finally:
        await ws.close()
    [finding] = [f for f in report.findings if f.run_id == "inflight"]
    assert finding.kind == "stale-running" and finding.fix.action == "resume"
    assert "lovia web marked it interrupted at restart" in finding.message


async def test_an_open_web_record_leaves_a_fresh_run_live(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scratch / "web.db"
    await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "inflight")
    await abandoned_run(path, "inflight", CRASH, session_path=path, session_id="chat")
    [record] = (
        await cli_json(capsys, "runs", path, "--json", "--stale-after", "3600")
    )["runs"]
    assert (record["stale"], record["stale_reason"]) == (False, None)
    assert record["web_record"] == "running"


async def test_sessions_are_ordered_and_pinned_as_the_web_sidebar(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scratch / "web.db"
    store = ChatStore.sqlite(path)
    await store.upsert("old-pinned", agent="worker", title="Pinned one")
    await write_session(path, "old-pinned", SCRIPTS[2:])
    await store.set_pinned("old-pinned", True)
    await write_session(path, "recent-run", SCRIPTS[2:])
    await store.upsert("newer-segment", agent="worker", title="Newer segment")
    await write_session(path, "newer-segment", SCRIPTS[2:])
    # A run starts in the chat with the oldest segment: lovia web lists it first.
    await web_records(path, "recent-run", "inflight", title="Recent run")
    await abandoned_run(
        path, "inflight", CRASH, session_path=path, session_id="recent-run"
    )
    web_order = [chat.id for chat in await store.list()]
    assert web_order == ["old-pinned", "recent-run", "newer-segment"]

    listed = (await cli_json(capsys, "sessions", path, "--json"))["sessions"]
    assert [s["session_id"] for s in listed] == web_order
    assert [s["pinned"] for s in listed] == [True, False, False]
    ws = await Workspace.open([path])
    try:
        assert [sid for _, sid in await ws.recent_sessions(10)] == web_order
    finally:
        await ws.close()
    assert await asyncio.to_thread(main, ["sessions", str(path)]) == 0
    assert f"{PIN}Pinned one" in capsys.readouterr().out


async def test_show_and_export_splice_the_in_flight_run(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = await restarted_chat(scratch / "web.db")
    shown = await cli_json(capsys, "show", path, "chat", "--json")
    assert [len(s["entries"]) for s in shown["segments"]] == [4]
    flight = shown["in_flight"]
    assert (flight["run_id"], flight["status"], flight["live"]) == (
        "inflight",
        "stale",
        False,
    )
    snapshot = await SQLiteCheckpointer(path).load("inflight")
    assert [
        {k: v for k, v in e.items() if k != "index"} for e in flight["entries"]
    ] == [entry_to_dict(e) for e in snapshot.entries]
    # Numbered as they would be once stored: after the session's 4 entries.
    assert [e["index"] for e in flight["entries"]] == list(
        range(4, 4 + len(snapshot.entries))
    )
    assert [d["call_id"] for d in flight["dangling"]] == ["k1", "k2"]
    assert shown["in_flight_more"] == []

    assert await asyncio.to_thread(main, ["show", str(path), "chat"]) == 0
    text = capsys.readouterr().out
    assert "not yet in the session — run inflight, status stale" in text
    assert "lovia web marked it interrupted at restart" in text
    assert text.count("⚠ no result: a resume re-executes it") == 2

    exported = await cli_json(capsys, "export", path, "chat", "--format", "json")
    assert exported["in_flight"]["entries"] == flight["entries"]
    assert await asyncio.to_thread(main, ["export", str(path), "chat"]) == 0
    markdown = capsys.readouterr().out
    assert "## not yet in the session — run inflight" in markdown
    assert f"**#{4 + len(snapshot.entries) - 1} tool call `dump`**" in markdown


async def test_a_chat_whose_only_run_is_unfinished_is_listed_and_shown(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scratch / "web.db"
    await web_records(path, "new-chat", "first", title="Brand new")
    await abandoned_run(path, "first", CRASH, session_path=path, session_id="new-chat")
    [listed] = (await cli_json(capsys, "sessions", path, "--json"))["sessions"]
    assert (listed["session_id"], listed["title"], listed["runs"]) == (
        "new-chat",
        "Brand new",
        0,
    )
    shown = await cli_json(capsys, "show", path, "new-chat", "--json")
    assert shown["segments"] == []
    assert shown["in_flight"]["run_id"] == "first"
    assert shown["in_flight"]["live"] is True
    assert shown["in_flight"]["entries"][0] == {
        "index": 0,
        "type": "input",
        "role": "user",
        "content": "Start the job.",
    }
    assert await asyncio.to_thread(main, ["show", str(path), "new-chat"]) == 0
    text = capsys.readouterr().out
    assert text.count("⏳ running: no result yet") == 2
    assert "⚠ no result" not in text


async def test_a_session_known_only_from_a_checkpoints_run_record(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scratch / "web.db"
    await web_records(path, "gone-chat", "first")
    await abandoned_run(path, "first", CRASH, session_path=path, session_id="gone-chat")
    # The chat row lost (hostile: lovia web deletes a chat's records with it).
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM chat_sessions")
    [listed] = (await cli_json(capsys, "sessions", path, "--json"))["sessions"]
    assert listed["session_id"] == "gone-chat"
    shown = await cli_json(capsys, "show", path, "gone-chat", "--json")
    assert shown["in_flight"]["run_id"] == "first"


async def killed_chat(path: Path) -> Path:
    """Chat "chat": a finished run, then "killed" SIGKILLed inside its slow tool
    (a real crash, in a child process), then a lovia web restart."""
    await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "killed")
    crash_run(path, path, "chat", "killed")
    await web_restart(path)
    return path


async def test_a_resume_settles_lovia_webs_records_and_leaves_no_finding(
    scratch: Path,
) -> None:
    path = await killed_chat(scratch / "web.db")
    ws = await Workspace.open([path])
    try:
        pf = await preflight(ws, "killed", agent=load_agent("lovia_tui.demo:agent"))
        assert pf.ok, pf.problems
        assert pf.web_chat == "chat" and pf.delete_on_success
        assert any("as lovia web does" in line for line in pf.afterwards)
        events = [event async for event in resume(pf)]
        assert events[-1].kind == "run_completed"
        assert any(
            e.kind == "log" and "its run record is now completed" in e.text
            for e in events
        )
        assert (await diagnose(ws, stale_after=0.0)).findings == ()
    finally:
        await ws.close()
    # As lovia web leaves a run that ended well: stored, no checkpoint, settled.
    store = ChatStore.sqlite(path)
    assert await store.get_active_run_id("chat") is None
    [record] = await store.list_runs(session_id="chat")
    assert (record.id, record.status, record.error) == ("killed", "completed", None)
    assert await SQLiteCheckpointer(path).load("killed") is None
    assert [s.run_id for s in await SQLiteSession(path).segments("chat")][
        -1
    ] == "killed"


async def test_other_layouts_say_what_a_resume_leaves(
    two_files: tuple[Path, Path],
) -> None:
    ws = await Workspace.open(two_files)
    try:
        pf = await preflight(
            ws, "crashed", agent=load_agent("lovia_tui.demo:agent"), session_id="s"
        )
        assert pf.web_chat is None and not pf.delete_on_success
        [left, undone] = pf.afterwards
        assert "completed checkpoint is kept" in left and "doctor reports it" in left
        assert undone == UNDONE
        kept = await preflight(
            ws, "crashed", agent=None, session_id="s", delete_on_success=True
        )
        assert kept.afterwards == (
            "on success lovia deletes the checkpoint once the run is stored",
            UNDONE,
        )
    finally:
        await ws.close()


async def test_hostile_chat_rows_rank_last_and_crash_nothing(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scratch / "web.db"
    await web_records(path, "good", "r1", title="Fine")
    await write_session(path, "good", SCRIPTS[2:])
    # Hostile rows lovia web never writes: text where it keeps numbers.
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO chat_sessions (id, title, created_at, updated_at, pinned) "
            "VALUES ('bad', '[bold red]x[/]', 0, 'soon', 'yes')"
        )
    listed = (await cli_json(capsys, "sessions", path, "--json"))["sessions"]
    assert [(s["session_id"], s["pinned"]) for s in listed] == [
        ("good", False),
        ("bad", False),
    ]
    assert await asyncio.to_thread(main, ["sessions", str(path)]) == 0
    assert "[bold red]x[/]" in capsys.readouterr().out


async def test_a_cancelled_resume_leaves_the_chat_reconnectable(scratch: Path) -> None:
    path = await killed_chat(scratch / "web.db")
    ws = await Workspace.open([path])
    try:
        pf = await preflight(ws, "killed", agent=load_agent("lovia_tui.demo:agent"))
        control = RunControl()
        control.cancel()  # lovia stops at its first safe point
        events = [event async for event in resume(pf, control)]
    finally:
        await ws.close()
    assert events[-1].data["status"] == "interrupted"
    # What lovia web leaves after an interrupt: the record interrupted, the
    # pointer and the checkpoint kept for a reconnect.
    store = ChatStore.sqlite(path)
    assert await store.get_active_run_id("chat") == "killed"
    [record] = await store.list_runs(session_id="chat")
    assert record.status == "interrupted"
    assert (await SQLiteCheckpointer(path).load("killed")).status == "interrupted"
