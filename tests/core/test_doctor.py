"""The doctor: every finding produced by real lovia operations (or a hostile raw
row), detected, then fixed by its suggested action after which it is gone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
import shutil
import sqlite3
from pathlib import Path

import pytest
from lovia import (
    CheckpointOptions,
    MaxTurnsExceeded,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
)
from lovia.testing import call, text
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry
from lovia.web.store import ChatStore
from support.lovia_factory import SCRIPTS, agent, copy_db, web_records, write_session

from lovia_tui.cli import main
from lovia_tui.core.actions.perform import perform, undo
from lovia_tui.core.doctor import findings as doctor_findings
from lovia_tui.core.doctor import segments as doctor_segments
from lovia_tui.core.doctor.audit import Finding, Report, diagnose
from lovia_tui.core.doctor.fixes import fix_preflight, fix_preview
from lovia_tui.core.errors import ActionError
from lovia_tui.core.runs.agents import load_agent
from lovia_tui.core.runs.resume import replay, resume
from lovia_tui.core.store import segment_reads
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.demo.crash import crash_run
from lovia_tui.demo.webui import web_run

JSON_KEYS = {"kind", "severity", "file", "run_id", "session_id", "message", "fix"}


async def doctor(*paths: Path, **options) -> Report:
    ws = await Workspace.open(paths)
    try:
        return await diagnose(ws, **{"stale_after": 0.0, **options})
    finally:
        await ws.close()


async def cli(*args: str) -> int:
    """``lovia-tui ARGS`` from an async test (the CLI runs its own event loop)."""
    return await asyncio.to_thread(main, list(args))


def found(report: Report) -> set[tuple[str, str | None]]:
    return {(f.kind, f.run_id or f.session_id) for f in report.findings}


def the(report: Report, kind: str, subject: str) -> Finding:
    [finding] = [
        f
        for f in report.findings
        if f.kind == kind and subject in (f.run_id, f.session_id)
    ]
    return finding


async def fix(paths: tuple[Path, ...], finding: Finding, **options) -> int | None:
    """Apply a finding's action fix through the action layer; returns the journal id."""
    ws = await Workspace.open(paths)
    try:
        preview = await fix_preview(ws, finding, stale_after=0.0, **options)
        return (await perform(ws, preview)).journal_id
    finally:
        await ws.close()


async def run_fix(
    paths: tuple[Path, ...], finding: Finding, agent_spec: str | None = None
) -> str:
    """Apply a replay or resume fix through preflight and lovia's Runner; the last event kind."""
    ws = await Workspace.open(paths)
    try:
        agent = load_agent(agent_spec) if agent_spec else None
        pf = await fix_preflight(ws, finding, agent=agent, stale_after=0.0)
        assert pf.ok, pf.problems
        kinds = [
            event.kind
            async for event in (replay(pf) if pf.mode == "replay" else resume(pf))
        ]
    finally:
        await ws.close()
    return kinds[-1]


def chat_state(path: Path, chat: str, run_id: str) -> tuple:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        pointer = conn.execute(
            "SELECT active_run_id FROM chat_sessions WHERE id = ?", (chat,)
        ).fetchone()[0]
        record = conn.execute(
            "SELECT status FROM chat_runs WHERE id = ?", (run_id,)
        ).fetchone()
        stored = conn.execute(
            "SELECT COUNT(*) FROM session_runs WHERE run_id = ?", (run_id,)
        ).fetchone()[0]
    return pointer, record[0] if record else None, stored


async def test_a_clean_database_yields_no_findings_and_exit_0(
    scratch: Path, capsys
) -> None:
    path = scratch / "clean.db"
    session, checkpointer = (
        SQLiteSession(path, wal=True),
        SQLiteCheckpointer(path, wal=True),
    )
    for n, script in enumerate(SCRIPTS):
        await Runner.run(
            agent(script), f"Request {n}.", session=session, session_id="s",
            checkpoint=CheckpointOptions(checkpointer, f"run-{n}", delete_on_success=True),
        )  # fmt: skip
    assert (await doctor(path)).findings == ()
    assert await cli("doctor", str(path), "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"findings": []}
    assert await cli("doctor", str(path)) == 0
    assert "no findings" in capsys.readouterr().out


async def test_crash_window_is_replayed_into_its_chat_then_settled(
    scratch: Path,
) -> None:
    path = scratch / "web.db"
    await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "lost")
    # Completed in its checkpoint, but the session append never happened.
    await Runner.run(
        agent([text("The summary.")]), "Summarise.",
        checkpoint=CheckpointOptions(SQLiteCheckpointer(path, wal=True), "lost"),
    )  # fmt: skip
    finding = the(await doctor(path), "crash-window", "lost")
    assert finding.severity == "error" and finding.session_id == "chat"
    assert finding.fix.action == "replay" and "lovia web deletes it" in finding.message

    assert await run_fix((path,), finding) == "run_completed"
    # One fix settles it all, as lovia web settles a run that ends: stored, its
    # checkpoint gone, its record completed and the chat's pointer cleared.
    assert (await doctor(path)).findings == ()
    assert chat_state(path, "chat", "lost") == (None, "completed", 1)
    assert not await SQLiteCheckpointer(path).load("lost")


async def test_a_killed_run_is_resumed_then_settled(scratch: Path) -> None:
    path = scratch / "web.db"
    await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "killed")
    crash_run(path, path, "chat", "killed")  # SIGKILLed inside its slow tool
    finding = the(await doctor(path), "stale-running", "killed")
    assert finding.session_id == "chat" and finding.fix.action == "resume"
    assert found(await doctor(path, stale_after=300.0)) == set(), (
        "a fresh save may be a live run: left alone"
    )

    assert await run_fix((path,), finding, "lovia_tui.demo:agent") == "run_completed"
    assert (await doctor(path)).findings == ()
    assert chat_state(path, "chat", "killed") == (None, "completed", 1)


async def test_completed_leftovers_are_deleted_and_an_unlinked_stale_run_finalized(
    two_files: tuple[Path, Path],
) -> None:
    report = await doctor(*two_files)
    assert found(report) == {
        ("stale-running", "crashed"),
        ("completed-in-session", "s-0"),
        ("completed-in-session", "s-1"),
        ("completed-in-session", "s-2"),
    }
    assert report.needs_attention
    crashed = the(report, "stale-running", "crashed")
    assert (
        crashed.session_id is None
        and crashed.fix.action == "finalize"
        and crashed.fix.session_id is None
    )
    with pytest.raises(ActionError, match="linked to no session"):
        await fix(two_files, crashed)
    await fix(two_files, crashed, session_id="s")  # the user's choice
    for run_id in ("s-0", "s-1", "s-2"):
        leftover = the(report, "completed-in-session", run_id)
        assert leftover.severity == "info" and leftover.fix.action == "delete-run"
        await fix(two_files, leftover)
    assert (await doctor(*two_files)).findings == ()


async def test_a_rewind_after_a_checkpoint_is_caught(
    two_files: tuple[Path, Path],
) -> None:
    sessions, _ = two_files
    assert await SQLiteSession(sessions, wal=True).rewind("s", keep_entries=6) > 0
    report = await doctor(*two_files)
    rewound = the(report, "rewound-checkpoint", "s-1")  # its segment was cut short
    # Completed: a replay adds nothing to a segment that exists (INSERT OR IGNORE).
    assert rewound.severity == "info" and rewound.fix.action == "delete-run"
    assert "a replay adds nothing while that segment exists" in rewound.message
    # s-2's segment is gone altogether: its completed checkpoint is in no session now.
    assert the(report, "crash-window", "s-2").session_id is None
    await fix(two_files, rewound)
    await fix(two_files, the(report, "crash-window", "s-2"), instead="delete-run")
    after = found(await doctor(*two_files))
    assert not {kind for kind, _ in after} & {"rewound-checkpoint", "crash-window"}


async def test_an_orphan_is_finalized_into_the_chosen_session(scratch: Path) -> None:
    path = scratch / "app.db"
    await write_session(path, "home", SCRIPTS[2:])
    with contextlib.suppress(MaxTurnsExceeded):  # interrupted, and no session at all
        await Runner.run(
            agent([call("echo", {"message": "x"}, call_id="o1")]), "Go.", max_turns=1,
            checkpoint=CheckpointOptions(SQLiteCheckpointer(path, wal=True), "stray"),
        )  # fmt: skip
    orphan = the(await doctor(path), "orphan", "stray")
    assert orphan.severity == "info" and orphan.fix.action == "finalize"
    # Plain lovia resumes it under the same run_id: not garbage to delete.
    assert "nothing will resume" not in orphan.message
    assert (
        "plain lovia resumes it when the same run_id is issued again" in orphan.message
    )
    assert "Deleting it loses the only copy" in orphan.fix.text
    copy = copy_db(path, scratch / "copy.db")  # plain lovia, the same run_id again:
    resumed = await Runner.run(
        agent([text("Resumed.")]), [], max_turns=3,
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(copy, wal=True), "stray", if_run_exists="resume_only"
        ),
    )  # fmt: skip
    assert resumed.output == "Resumed."
    await fix((path,), orphan, session_id="home")
    assert (await doctor(path)).findings == ()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        last = conn.execute(
            "SELECT session_id, run_id FROM session_runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert last == ("home", "stray")


async def test_an_old_interrupted_run_is_finalized(scratch: Path) -> None:
    path = scratch / "web.db"
    store = ChatStore.sqlite(path)
    with contextlib.suppress(MaxTurnsExceeded):
        await web_run(
            store,
            "chat",
            "Look it up.",
            [call("lookup", {"topic": "osaka"})],
            run_id="paused",
            max_turns=1,
        )
    assert found(await doctor(path)) == set(), (
        "an interrupted run of a known chat is resumable"
    )
    old = the(await doctor(path, older_than_days=0), "old-unfinished", "paused")
    assert old.fix.action == "finalize" and old.session_id == "chat"
    await fix((path,), old)
    # lovia web's Stop of a stranded run: the checkpoint goes, nothing is
    # stored and the record stays interrupted (reported as lovia web shows it).
    after = (await doctor(path, older_than_days=0)).findings
    assert [(f.kind, f.severity, f.run_id) for f in after] == [
        ("web-unsaved-run", "info", "paused")
    ]
    assert "stop it as lovia web's Stop does" in old.fix.text
    assert chat_state(path, "chat", "paused") == (None, "interrupted", 0)


async def test_unpaired_tool_calls_are_rewound_away(scratch: Path) -> None:
    path = scratch / "s.db"
    await write_session(path, "a", SCRIPTS[:1])  # 4 good entries first
    session = SQLiteSession(path, wal=True)
    await session.append(
        "a",
        [InputEntry(role="user", content="Run it."), ToolCallEntry("c9", "echo", "{}")],
        run_id="half",
    )
    await session.append(
        "b",
        [
            InputEntry(role="user", content="Hm."),
            ToolResultEntry("zz", "out of nowhere"),
        ],
        run_id="stray",
    )
    report = await doctor(path)
    dangling, orphan = (
        the(report, "unpaired-tool-call", "half"),
        the(report, "unpaired-tool-call", "stray"),
    )
    assert "has no result" in dangling.message and dangling.fix.keep_entries == 5
    assert "answers no call" in orphan.message and orphan.fix.keep_entries == 1
    await fix((path,), dangling)
    await fix((path,), orphan)
    assert (await doctor(path)).findings == ()


async def test_corrupt_rows_are_unreadable_and_cleared(
    two_files: tuple[Path, Path],
) -> None:
    sessions, runs = two_files
    with (
        contextlib.closing(sqlite3.connect(sessions)) as conn,
        conn,
    ):  # the hostile input
        conn.execute(
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) VALUES ('torn', 't1', '[{\"type\": \"inp', 0)"
        )
        conn.execute(
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) VALUES ('alien', 'a1', '[{\"type\": \"hologram\"}]', 0)"
        )
    with contextlib.closing(sqlite3.connect(runs)) as conn, conn:
        conn.execute("INSERT INTO snapshot_heads VALUES ('garbled', '{oops', 0)")
        conn.execute("INSERT INTO snapshot_turns VALUES ('s-0', 99, 'not json')")
    report = await doctor(*two_files)
    bad = {
        (f.run_id, f.fix.action) for f in report.findings if f.kind == "unreadable-row"
    }
    assert bad == {
        ("t1", "clear"),
        ("a1", "clear"),
        ("garbled", "delete-run"),
        ("s-0", "delete-run"),
    }
    assert "unknown type 'hologram'" in the(report, "unreadable-row", "a1").message
    for finding in [f for f in report.findings if f.kind == "unreadable-row"]:
        await fix(two_files, finding)
    assert not [
        f for f in (await doctor(*two_files)).findings if f.kind == "unreadable-row"
    ]


async def test_web_records_about_a_vanished_run(scratch: Path, capsys) -> None:
    path = scratch / "web.db"
    await write_session(path, "chat", SCRIPTS[:1])
    await web_records(path, "chat", "ghost")  # the web UI started a run...
    await SQLiteCheckpointer(path, wal=True).delete(
        "ghost"
    )  # ...whose checkpoint someone deleted
    report = await doctor(path)
    assert found(report) == {
        ("web-stale-pointer", "ghost"),
        ("web-stuck-record", "ghost"),
    }
    assert not report.needs_attention, "harmless until lovia web next opens the chat"
    assert await cli("doctor", str(path), "--stale-after", "0", "--json") == 0
    assert the(report, "web-stuck-record", "ghost").fix is None
    journal_id = await fix((path,), the(report, "web-stale-pointer", "ghost"))
    assert chat_state(path, "chat", "ghost") == (None, "running", 0)
    assert found(await doctor(path)) == {("web-stuck-record", "ghost")}
    ws = await Workspace.open([path])  # undo, as for any action
    try:
        await undo(ws, journal_id)
    finally:
        await ws.close()
    assert chat_state(path, "chat", "ghost") == ("ghost", "running", 0)


async def test_journal_mode_is_informational(scratch: Path, capsys) -> None:
    path = scratch / "rollback.db"
    await write_session(path, "s", SCRIPTS[2:])  # lovia's default: no WAL
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    assert (
        await cli("doctor", str(path), "--json") == 0
    )  # read-only: the mode is reported as it is
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["kind"] == "journal-mode" and finding["severity"] == "info"


async def test_tables_without_lovias_lookup_indexes_are_reported(scratch: Path) -> None:
    """Another program's copy of lovia's tables, made without their keys: each
    read of one session or run would scan the table (lovia's own files, above,
    have every index: no finding)."""
    path = scratch / "copied.db"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(
            "CREATE TABLE session_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "session_id TEXT, run_id TEXT, entries_json TEXT, meta_json TEXT, "
            "created_at REAL);"
            "CREATE TABLE snapshot_heads (run_id TEXT, head_json TEXT, updated_at REAL);"
            "CREATE TABLE snapshot_turns (run_id TEXT, seq INTEGER, entries_json TEXT);"
            "CREATE INDEX by_run ON session_runs(run_id);"  # not led by session_id
        )
    report = await doctor(path)
    missing = [f for f in report.findings if f.kind == "missing-index"]
    assert [f.message.split(" has no")[0] for f in missing] == [
        "copied.db: session_runs", "copied.db: snapshot_heads", "copied.db: snapshot_turns"
    ]  # fmt: skip
    assert all(f.severity == "warning" and f.fix is None for f in missing)
    assert "idx_session_runs_sid" in missing[0].message
    assert "CREATE INDEX snapshot_turns_key ON snapshot_turns(run_id, seq)" in (
        missing[2].message
    )
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE INDEX by_session ON session_runs(session_id)")
    assert "session_runs" not in str(
        [f.message for f in (await doctor(path)).findings if f.kind == "missing-index"]
    )


def test_cli_exit_codes_and_json_keys(
    two_files: tuple[Path, Path], scratch: Path, capsys
) -> None:
    paths = [str(p) for p in two_files]
    assert main(["doctor", *paths, "--stale-after", "0", "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert findings and all(set(f) == JSON_KEYS for f in findings)
    assert {f["kind"] for f in findings} == {"stale-running", "completed-in-session"}
    assert main(["doctor", *paths]) == 0, (
        "the crashed run was saved just now: it may be live"
    )
    assert main(["doctor", *paths, "--stale-after", "0"]) == 1
    assert "stale-running" in capsys.readouterr().out
    (scratch / "notes.txt").write_text("hello")
    assert main(["doctor", str(scratch / "notes.txt")]) == 2
    assert main(["doctor", str(scratch / "missing.db")]) == 2


async def test_a_sessions_segments_are_read_once_for_all_its_problems(
    scratch: Path, monkeypatch
) -> None:
    """Each problem's flat index comes from its session's segments, read once
    for the problems that follow in the same session (200 reads of a
    100,000-segment session had taken over 40 s)."""
    path = scratch / "s.db"
    await write_session(path, "a", SCRIPTS[:1])  # 4 good entries first
    session = SQLiteSession(path, wal=True)
    for n in range(3):
        await session.append(
            "a", [ToolCallEntry(f"c{n}", "echo", "{}")], run_id=f"half-{n}"
        )
    reads = []
    flat_starts = segment_reads.flat_starts

    async def counted(db, session_id):
        reads.append(session_id)
        return await flat_starts(db, session_id)

    monkeypatch.setattr(segment_reads, "flat_starts", counted)
    report = await doctor(path)
    assert reads == ["a"]
    assert [f.fix.keep_entries for f in report.findings] == [4, 5, 6]


async def test_the_segment_scan_is_chunked_and_bounded(
    scratch: Path, monkeypatch
) -> None:
    path = scratch / "s.db"
    await write_session(path, "a", SCRIPTS)
    session = SQLiteSession(path, wal=True)
    for n in range(3):
        await session.append(
            f"b{n}", [ToolCallEntry(f"c{n}", "echo", "{}")], run_id=f"half-{n}"
        )
    whole = await doctor(path)
    monkeypatch.setattr(doctor_segments, "FIRST_CHUNK", 1)
    monkeypatch.setattr(doctor_segments, "CHUNK_BYTES", 1)  # one row per statement
    monkeypatch.setattr(doctor_findings, "MAX_PER_KIND", 2)
    seen: list[float] = []
    ws = await Workspace.open([path])
    try:
        capped = await diagnose(
            ws, progress=lambda what, fraction: seen.append(fraction)
        )
    finally:
        await ws.close()
    assert len(seen) >= 6 and seen == sorted(seen) and seen[-1] == 1.0
    assert [f.run_id for f in whole.findings] == ["half-0", "half-1", "half-2"]
    assert [f.run_id for f in capped.findings] == ["half-0", "half-1", None]
    assert "1 more findings" in capped.findings[-1].message


async def test_completed_runs_segments_are_read_by_lovias_index(scratch: Path) -> None:
    """The segments of completed checkpoints are looked up pair by pair in
    lovia's (session_id, run_id) index, never by a scan of every segment, and
    found as they are stored."""
    from lovia_tui.core.doctor.checkpoint_scan import segments_sql

    path = scratch / "s.db"
    runs = await write_session(path, "a", SCRIPTS)
    sql, params = segments_sql([("a", runs[0]), ("a", "no-such-run"), ("b", runs[1])])
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
        found = conn.execute(sql, params).fetchall()
    assert any(step.startswith("SEARCH s USING INDEX") for step in plan), plan
    assert not any(step.startswith("SCAN s") for step in plan), plan
    assert [run_id for run_id, _ in found] == [runs[0]]


def test_the_demo_reports_its_crash_window_crashed_run_and_orphan(
    demo_dir, capsys
) -> None:
    """The issue's done-when, CLI half (the app half is in test_doctor_app.py)."""
    code = main(["doctor", str(demo_dir.directory), "--stale-after", "0", "--json"])
    reported = {
        (f["kind"], f["run_id"]): f
        for f in json.loads(capsys.readouterr().out)["findings"]
    }
    assert code == 1
    assert (
        reported["crash-window", demo_dir.crash_window_run]["session_id"]
        == demo_dir.crash_window_session
    )
    assert (
        reported["stale-running", demo_dir.crashed_run]["session_id"]
        == demo_dir.crashed_session
    )
    assert reported["orphan", demo_dir.orphan_run]["session_id"] is None
    assert (
        reported["stale-running", demo_dir.cli_crashed_run]["session_id"] is None
    )  # nothing links it
    assert (
        reported["completed-in-session", demo_dir.cli_completed_run]["severity"]
        == "info"
    )


async def test_a_fleet_of_checkpoints_is_scanned_in_bounded_memory(
    scratch: Path, monkeypatch
) -> None:
    """A fleet's checkpoints: completed runs in no session are counted in one
    finding when no session store is open (nothing tells a lost append from
    a run that used none) and tallied past the limit when one is; a bad
    batch is found by the scan in rowid order, whichever run it is in; the
    statements hold a handful of rows each, as they would with large ones."""
    from lovia_tui.core.doctor import batch_scan, checkpoint_scan

    runs, sessions = scratch / "runs.db", scratch / "sessions.db"
    checkpointer = SQLiteCheckpointer(runs, wal=True)
    for n in range(7):
        await Runner.run(
            agent([text(f"Done {n}.")]), f"Job {n}.",
            checkpoint=CheckpointOptions(checkpointer, f"job-{n}"),
        )  # fmt: skip
    await write_session(sessions, "s", SCRIPTS[:1])
    with contextlib.closing(sqlite3.connect(runs)) as conn, conn:
        conn.execute("UPDATE snapshot_turns SET entries_json = '[{\"type\": 7}]' "
                     "WHERE run_id = 'job-3'")  # fmt: skip
    monkeypatch.setattr(batch_scan, "FIRST_ROWS", 1)
    monkeypatch.setattr(batch_scan, "GROUP_BYTES", 1)  # a row a statement
    monkeypatch.setattr(checkpoint_scan, "HEAD_PAGE", 2)
    monkeypatch.setattr(doctor_findings, "MAX_PER_KIND", 2)

    alone = await doctor(runs)
    assert [(f.kind, f.run_id) for f in alone.findings] == [
        ("unreadable-row", "job-3"), ("completed-unchecked", None),
    ]  # fmt: skip
    assert "6 completed checkpoints" in alone.findings[-1].message

    beside = await doctor(runs, sessions)
    kinds = [(f.kind, f.run_id) for f in beside.findings]
    assert ("unreadable-row", "job-3") in kinds
    assert [k for k in kinds if k[0] == "crash-window"] == [
        ("crash-window", "job-0"), ("crash-window", "job-1"), ("crash-window", None),
    ]  # fmt: skip
    assert "4 more findings" in beside.findings[-1].message


def test_a_completed_head_is_decided_as_head_fields_decides() -> None:
    """The doctor's quick look at a fleet's heads (one parse) calls a head
    completed exactly where the full read of it does, hostile heads too."""
    from lovia_tui.core.store.checkpoint_reads import (
        HEAD_ERRORS,
        head_completed,
        head_fields,
    )

    def completed(head: object) -> bool:
        try:
            return head_fields(head, 1.0)[1] == "completed"
        except HEAD_ERRORS:
            return False

    base = '"agent_name": "a", "turns": 1, "updated_at": 2.0'
    heads: list[object] = [
        f'{{"status": "completed", {base}}}',
        f'{{"status": "running", {base}}}',
        f'{{"status": "completed", "status": "running", {base}}}',
        f'{{"status": "running", "status": "completed", {base}}}',
        '{"status": "completed", "turns": 1}',  # no agent
        '{"status": "completed", "agent_name": null}',
        '{"status": "completed", "agent_name": "a", "turns": "3"}',
        '{"status": "completed", "agent_name": "a", "turns": "three"}',
        '{"status": "completed", "agent_name": "a", "turns": []}',
        '{"status": "completed", "agent_name": "a", "turns": [1]}',
        '{"status": "completed", "agent_name": "a", "turns": true}',
        '{"status": "completed", "agent_name": "a", "turns": 1.5}',
        '{"status": ["completed"], "agent_name": "a"}',
        '{"status": null, "agent_name": "a"}',
        '["completed"]',
        "not json",
        None,
        42,
        b'{"status": "completed", "agent_name": "caf\xe9"}',  # not UTF-8
        b'{"status": "completed", "agent_name": "a"}',
    ]
    for head in heads:
        assert head_completed(head, 1.0) == completed(head), head


def test_the_doctors_commands_paste_as_they_are(demo_dir, tmp_path, capsys) -> None:
    """Each suggested command, with the agent and a session filled in where
    it says MODULE:ATTR and SID and without --yes, previews (exit 0): it
    carries the files and the --stale-after the doctor judged runs by (it
    left that out, and the command refused the run the doctor called stale)."""
    # A copy: the previews open the files read-write (the two-file layout's
    # rollback-journal files would turn WAL under the other tests).
    directory = shutil.copytree(demo_dir.directory, tmp_path / "demo")
    main(["doctor", str(directory), "--stale-after", "2", "--json"])
    fixes = [f["fix"] or "" for f in json.loads(capsys.readouterr().out)["findings"]]
    commands = [
        c for text in fixes for c in re.findall(r"lovia-tui [a-z-]+ [^;)]*--yes", text)
    ]
    assert len(commands) >= 3 and all(
        "--stale-after 2" in c for c in commands if "resume" in c
    )
    for line in commands:
        argv = shlex.split(line.replace("MODULE:ATTR", "lovia_tui.demo:agent"))
        argv = [demo_dir.cli_completed_session if a == "SID" else a for a in argv]
        assert main(argv[1:-1]) == 0, (line, capsys.readouterr())
        capsys.readouterr()


async def test_the_doctor_names_the_agent_lovia_tui_was_started_with(demo_dir) -> None:
    """In the app started with --agent (and --deps), a suggested resume names
    them: its MODULE:ATTR did not run as pasted."""
    ws = await Workspace.open([demo_dir.directory], readonly=True)
    try:
        plain = await diagnose(ws, stale_after=2)
        named = await diagnose(
            ws, stale_after=2, agent=("lovia_tui.demo:agent", "my deps:x")
        )
    finally:
        await ws.close()
    resumes = [f.fix.text for f in named.findings if f.fix and "resume" in f.fix.text]
    assert resumes and all(
        "--agent lovia_tui.demo:agent --deps 'my deps:x'" in text for text in resumes
    )
    assert "MODULE:ATTR" not in " ".join(resumes)
    assert any(
        "--agent MODULE:ATTR" in (f.fix.text if f.fix else "") for f in plain.findings
    )
