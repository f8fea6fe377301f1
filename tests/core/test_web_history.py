"""lovia web's records beside the transcript: run records (a failed and a
cancelled run that saved nothing among them), a subagent task chat, a schedule
and its runs, a fork. The file is written by lovia web's own code as its server
calls it (``ChatStore`` around real ``Runner`` runs, the demo's
``web_history``), and what lovia-tui shows is compared with what lovia web's
store returns on the same file."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from lovia.testing import text
from lovia.web.store import ChatStore, RunRow
from support.hostile_text_db import assert_inert
from support.lovia_factory import raw, write_session
from support.web_history_db import CHAT, SCHEDULE, TASK, WebHistory

from lovia_tui.cli import main
from lovia_tui.core.doctor.audit import diagnose
from lovia_tui.core.markdown_text import plain
from lovia_tui.core.store import web_records
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.web_models import RunRecord
from lovia_tui.demo.web_history import REJECTED, REJECTED_RUN, SMOKE_RUN, STOPPED_RUN
from lovia_tui.view import record_rows, transcript_loader
from lovia_tui.view.kinds import RowKind

MANY_RECORDS = int(os.environ.get("LOVIA_TUI_MANY_RECORDS", "600"))
"""Records of the paging test's chat (LOVIA_TUI_MANY_RECORDS=10000 for the long variant)."""


@pytest.fixture
def history(web_history: WebHistory) -> tuple[Path, str]:
    """A private copy of the file, and the fork's chat id."""
    return web_history.path, web_history.fork


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")


async def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    assert await asyncio.to_thread(main, [str(a) for a in argv]) == 0
    return capsys.readouterr().out


def record_fields(row: RunRow) -> dict[str, Any]:
    """A lovia web ``RunRow`` in ``show --json``'s keys."""
    return {
        "run_id": row.id,
        "status": row.status,
        "source": row.source,
        "agent": row.agent,
        "error": row.error,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "usage": row.usage,
    }


async def test_show_json_has_every_run_record_lovia_web_lists(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = history
    store = ChatStore.sqlite(path)
    shown = json.loads(await cli(capsys, "show", path, CHAT, "--json"))
    theirs = list(reversed(await store.list_runs(session_id=CHAT)))  # oldest first
    assert [
        {k: v for k, v in run.items() if k != "in_transcript"} for run in shown["runs"]
    ] == [record_fields(row) for row in theirs]
    saved = {s.run_id for s in await store.session.segments(CHAT)}
    assert {r["run_id"]: r["in_transcript"] for r in shown["runs"]} == {
        row.id: row.id in saved for row in theirs
    }
    by_id = {r["run_id"]: r for r in shown["runs"]}
    assert by_id[REJECTED_RUN]["status"] == "failed"
    assert by_id[REJECTED_RUN]["error"] == REJECTED
    assert (by_id[STOPPED_RUN]["status"], by_id[STOPPED_RUN]["error"]) == (
        "cancelled",
        "cancelled",
    )
    # Neither left a checkpoint or a segment: the record is all there is.
    assert await store.checkpointer.load(REJECTED_RUN) is None
    assert not by_id[REJECTED_RUN]["in_transcript"]
    assert [r["source"] for r in shown["runs"]][-1] == "subagent-report:t1"
    assert shown["chat"]["tasks"] == len(await store.list_children(CHAT)) == 1


async def test_show_json_has_the_task_parent_the_fork_origin_and_schedules(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, fork = history
    store = ChatStore.sqlite(path)
    for sid in (TASK, fork, CHAT):
        chat = json.loads(await cli(capsys, "show", path, sid, "--json"))["chat"]
        meta = (await store.get(sid)).to_dict()
        for key in ("title", "agent", "created_at", "parent_id") + (
            "origin_kind",
            "origin_session_id",
            "origin_ref",
        ):
            assert chat[key] == meta[key], (sid, key)
    assert (await store.get(TASK)).parent_id == CHAT
    assert (await store.get(fork)).origin_ref == f"{SMOKE_RUN}:0"

    first_fire = (await store.list_runs(source=f"schedule:{SCHEDULE}"))[-1].session_id
    [schedule] = json.loads(await cli(capsys, "show", path, first_fire, "--json"))[
        "chat"
    ]["schedules"]
    theirs = await store.get_schedule(SCHEDULE)
    for key, value in theirs.to_dict().items():
        if key not in ("id", "created_at", "updated_at", "context"):
            assert schedule[key] == value, key
    assert schedule["runs"] == len(
        await store.list_runs(source=f"schedule:{SCHEDULE}", limit=100)
    )
    last = await store.latest_run_for(f"schedule:{SCHEDULE}")
    assert schedule["last_run"] == record_fields(last)
    assert last.session_id is None  # the fire that started no run


async def test_show_prints_runs_that_saved_nothing_between_the_runs_around_them(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, fork = history
    out = await cli(capsys, "show", path, CHAT)
    lines = out.splitlines()
    rules = [n for n, line in enumerate(lines) if line.startswith("─")]
    rejected = next(n for n, line in enumerate(lines) if REJECTED_RUN in line)
    stopped = next(n for n, line in enumerate(lines) if STOPPED_RUN in line)
    smoke = next(n for n, line in enumerate(lines) if f"run {SMOKE_RUN} ·" in line)
    assert rules[0] < rejected < stopped < smoke == rules[1]
    assert REJECTED in lines[rejected] and "no entries in this chat" in lines[rejected]
    assert "1 subagent task chat," in out
    out = await cli(capsys, "show", path, TASK)
    assert f"↳ subagent task of chat {CHAT} “Launch checklist 🚀”" in out
    out = await cli(capsys, "show", path, fork)
    assert f"⑂ forked from chat {CHAT} before its message {SMOKE_RUN}:0" in out
    fires = await ChatStore.sqlite(path).list_runs(source=f"schedule:{SCHEDULE}")
    out = await cli(capsys, "show", path, fires[-1].session_id)
    assert f"· by schedule {SCHEDULE} " in out


async def test_export_tells_the_same_story(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = history
    markdown = await cli(capsys, "export", path, CHAT)
    assert (
        markdown.index(f"✖ {plain(f'run {REJECTED_RUN} failed')}")
        < markdown.index(f"✖ {plain(f'run {STOPPED_RUN} cancelled')}")
        < markdown.index(f"Run `{SMOKE_RUN}`")
    )
    exported = json.loads(await cli(capsys, "export", path, CHAT, "--format", "json"))
    shown = json.loads(await cli(capsys, "show", path, CHAT, "--json"))
    assert exported["runs"] == shown["runs"] and exported["chat"] == shown["chat"]


async def test_sessions_list_a_task_under_its_parent(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, fork = history
    store = ChatStore.sqlite(path)
    out = await cli(capsys, "sessions", path, "--json")
    listed = json.loads(out)["sessions"]
    ids = [s["session_id"] for s in listed]
    assert ids[ids.index(CHAT) + 1] == TASK
    assert {s["session_id"]: s["parent_id"] for s in listed} == {
        sid: (await store.get(sid)).parent_id for sid in ids
    }
    # lovia web's sidebar: every chat but the task.
    top = [s["session_id"] for s in listed if s["parent_id"] is None]
    assert set(top) == {chat.id for chat in await store.list()}
    table = await cli(capsys, "sessions", path)
    assert f"↳ {TASK}" in table
    async with _workspace(path) as ws:
        keys = [sid for _, sid in await ws.recent_sessions(50)]
    assert keys[keys.index(CHAT) + 1] == TASK and fork in keys


def hostile(path: Path, sql: str, *params: object) -> None:
    """The only raw writes: cells lovia never writes."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(sql, params)
        conn.commit()


class _workspace:
    def __init__(self, path: Path) -> None:
        self.path = path

    async def __aenter__(self) -> Workspace:
        self.ws = await Workspace.open([self.path], readonly=True)
        return self.ws

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()


async def test_the_transcript_places_records_in_every_batch(
    history: tuple[Path, str],
) -> None:
    path, _ = history
    async with _workspace(path) as ws:
        db = ws.databases[0]
        listed = await transcript_loader.newest_batch(db, CHAT)
        seams = transcript_loader.Seams(ws, [], 300.0)
        rows, _ = await transcript_loader.session_rows(db, CHAT, listed, seams)
        kinds = [
            (row.kind, row.segment.run_id if row.segment else row.key)
            for row in rows
            if row.kind in (RowKind.SEGMENT, RowKind.RECORD, RowKind.CHAT)
        ]
        assert [kind for kind, _ in kinds] == [
            RowKind.CHAT, RowKind.SEGMENT, RowKind.RECORD, RowKind.RECORD,
            RowKind.SEGMENT, RowKind.SEGMENT,
        ]  # fmt: skip
        records = [row.record for row in rows if row.record is not None]
        assert [(r.run_id, r.status, r.error) for r in records] == [
            (REJECTED_RUN, "failed", REJECTED),
            (STOPPED_RUN, "cancelled", "cancelled"),
        ]
        # Paged one segment at a time, from the start and from the end,
        # every record is shown once, after the segment it followed.
        for step in ("newer", "older"):
            shown = await _paged(db, CHAT, step, ws)
            assert shown == [
                "segment", REJECTED_RUN, STOPPED_RUN, "segment", "segment",
            ], step  # fmt: skip


async def _paged(db, session_id: str, step: str, ws: Workspace) -> list[str]:
    """Every segment and record of a session, loaded a batch of one segment at a time."""
    seams = transcript_loader.Seams(ws, [], 300.0)
    out: list[Any] = []
    original = transcript_loader.BATCH
    transcript_loader.BATCH = 1
    try:
        if step == "newer":
            rows, _ = await transcript_loader.newer_rows(db, session_id, 0, None, seams)
            while True:
                out.extend(r for r in rows if r.kind != RowKind.NEWER)
                if rows[-1].kind != RowKind.NEWER:
                    break
                rows, _ = await transcript_loader.newer_rows(
                    db, session_id, rows[-1].boundary, None, seams
                )
        else:
            listed = await transcript_loader.newest_batch(db, session_id)
            rows, _ = await transcript_loader.session_rows(
                db, session_id, listed, seams
            )
            while True:
                out[:0] = [r for r in rows if r.kind != RowKind.OLDER]
                if rows[0].kind != RowKind.OLDER:
                    break
                rows = await transcript_loader.older_rows(
                    db, session_id, rows[0].boundary, None
                )
    finally:
        transcript_loader.BATCH = original
    return [
        str(row.kind) if row.record is None else row.record.run_id
        for row in out
        if row.kind in (RowKind.SEGMENT, RowKind.RECORD)
    ]


async def test_a_chat_with_many_records_is_read_a_page_at_a_time(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Records of runs that saved nothing between two runs: the transcript
    holds the newest ``RECORDS_PER_SPAN`` and says more exist; ``show --json``
    lists every one, in pages."""
    path = scratch / "web.db"
    await write_session(path, "busy", [[text("Done.")]], prompts=["First."])
    store = ChatStore.sqlite(path)
    await store.upsert("busy", agent="worker", title="Busy")
    start = time.time()
    for n in range(MANY_RECORDS):
        await store.start_run(
            RunRow(
                f"r{n:05d}", "busy", "worker", "user", "failed", f"error {n}",
                start + n, start + n + 0.5, None,
            )
        )  # fmt: skip
    async with _workspace(path) as ws:
        db = ws.databases[0]
        listed = await transcript_loader.newest_batch(db, "busy")
        rows, _ = await transcript_loader.session_rows(
            db, "busy", listed, transcript_loader.Seams(ws, [], 300.0)
        )
        shown = [row for row in rows if row.kind == RowKind.RECORD]
        assert shown[0].note == record_rows.MORE_RECORDS
        assert [row.record.run_id for row in shown[1:]] == [
            f"r{n:05d}" for n in range(MANY_RECORDS - 100, MANY_RECORDS)
        ]
        records = [r async for r in web_records.session_records(db, "busy")]
    assert [r.run_id for r in records] == [f"r{n:05d}" for n in range(MANY_RECORDS)]
    runs = json.loads(await cli(capsys, "show", path, "busy", "--json"))["runs"]
    assert len(runs) == MANY_RECORDS == len(await store.list_runs(limit=MANY_RECORDS))


async def test_the_doctor_lists_runs_that_saved_nothing(
    history: tuple[Path, str],
) -> None:
    path, _ = history
    async with _workspace(path) as ws:
        report = await diagnose(ws)
    found = {f.run_id: f for f in report.findings if f.kind == "web-unsaved-run"}
    assert set(found) >= {REJECTED_RUN, STOPPED_RUN}
    assert found[REJECTED_RUN].session_id == CHAT
    assert REJECTED in found[REJECTED_RUN].message
    assert all(f.severity == "info" and f.fix is None for f in found.values())
    # The schedule's missed fire has no chat: still listed.
    [missed] = [f for f in found.values() if f.session_id is None]
    assert "schedule sched-digest" in missed.message


async def test_any_cell_type_is_shown_and_escaped(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged or hostile file: every column of a record, a chat row and a
    schedule holding what lovia never writes there."""
    path, _ = history
    hostile(
        path,
        "INSERT INTO chat_runs (id, session_id, agent, source, status, error, "
        "started_at, finished_at, usage_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "r-hostile", CHAT, 7, "\x1b[2Jschedule:x", b"\xff\x00", "\x1b]0;pwned\x07boom",
        "later", 1e308, "[1, 2",
    )  # fmt: skip
    hostile(
        path,
        "UPDATE chat_sessions SET parent_id = ?, origin_kind = 'fork', "
        "origin_session_id = ?, origin_ref = ? WHERE id = ?",
        CHAT, 42, "\x1b[31mref", TASK,
    )  # fmt: skip
    hostile(
        path,
        "UPDATE chat_schedules SET trigger_expr = ?, max_fires = ?, next_fire = ?",
        "\x1b[2J",
        "many",
        "soon",
    )
    assert raw(path, "PRAGMA integrity_check") == [("ok",)]
    out = await cli(capsys, "show", path, CHAT)
    assert_inert(out)
    assert "␛]0;pwned␇boom" in out
    shown = json.loads(await cli(capsys, "show", path, CHAT, "--json"))
    bad = next(r for r in shown["runs"] if r["run_id"] == "r-hostile")
    assert bad["usage"] is None and "invalid JSON" in bad["usage_unreadable"]
    assert bad["agent"] == "7" and bad["started_at"] is None
    for sid in (TASK, "chat-digest-1"):
        assert_inert(await cli(capsys, "show", path, sid))
        assert_inert(await cli(capsys, "export", path, sid))
    assert isinstance(
        web_records.record_of(("x", None, None, None, None, None, None, None, b"{")),
        RunRecord,
    )


async def test_a_run_that_ended_unfinished_says_so_on_what_it_saved(
    history: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """lovia web's supervisor keeps a failed or stopped run's finished turns
    (``_persist_partial``: the user's message at least) and closes its record:
    the segment alone reads as a message that got no answer, so its header
    says how the run ended, in show, the Markdown export and the app."""
    from lovia.transcript import InputEntry

    from lovia_tui.demo.webui import open_record

    path, _ = history
    store = ChatStore.sqlite(path)
    for run_id, status, error in [
        ("run-partial-failed", "failed", REJECTED),
        ("run-partial-stopped", "cancelled", "cancelled"),
    ]:
        await open_record(store, CHAT, run_id)
        assert store.session is not None
        await store.session.append(
            CHAT, [InputEntry("user", "Try again?")], run_id=run_id
        )
        await store.finish_run(run_id, status=status, error=error)
    out = await cli(capsys, "show", path, CHAT)
    rule = {
        run_id: next(line for line in out.splitlines() if f"run {run_id} · " in line)
        for run_id in ("run-partial-failed", "run-partial-stopped", SMOKE_RUN)
    }
    assert f"· failed: {REJECTED} ─" in rule["run-partial-failed"]
    assert "· cancelled ─" in rule["run-partial-stopped"]
    assert "failed" not in rule[SMOKE_RUN] and "cancelled" not in rule[SMOKE_RUN]
    markdown = await cli(capsys, "export", path, CHAT)
    assert f"· {plain(f'failed: {REJECTED}')}\n" in markdown
    async with contextlib.AsyncExitStack() as stack:
        ws = await Workspace.open([path], readonly=True)
        stack.push_async_callback(ws.close)
        notes = await web_records.run_notes(
            ws.databases[0],
            CHAT,
            ["run-partial-failed", "run-partial-stopped", SMOKE_RUN],
        )
    assert notes == {
        "run-partial-failed": f"failed: {REJECTED}",
        "run-partial-stopped": "cancelled",
    }


async def test_tool_errors_and_rewound_runs_read_as_what_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A denied approval is lovia's error result: ``show`` marks it. A
    completed run with no entries left was cut away, not failed."""
    from lovia import SQLiteSession
    from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry

    from lovia_tui.core.web_models import record_line

    path = tmp_path / "s.db"
    await SQLiteSession(path).append("s", [
        InputEntry("user", "Refund order C"),
        ToolCallEntry("c1", "refund", "{}"),
        ToolResultEntry("c1", "Tool refund was not approved.", is_error=True),
    ], run_id="r1")  # fmt: skip
    out = await cli(capsys, "show", path, "s")
    assert "tool_result (error) Tool refund was not approved." in out
    record = RunRecord(
        "r9", "s", None, "user", "completed", None, 1e9, 1e9 + 1, None, saved=False
    )
    assert record_line(record).startswith("↺ run r9 completed")
    assert record_line(record).endswith(
        "its entries since cut from this chat (a rewind or an edit)"
    )
    assert record_line(replace(record, status="failed")).startswith("✖ run r9 failed")
