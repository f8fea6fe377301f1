"""The demo really holds every run state it advertises, and its unfinished runs resume."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from lovia import CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, events

from lovia_tui.demo import DemoWorkspace, agent, build_demo
from lovia_tui.demo.crash import DONE, READY, AgentProcess, crash_run
from lovia_tui.demo.web_history import REJECTED, REJECTED_RUN, SMOKE_RUN, STOPPED_RUN

MARKER = "archived to a result store]"


def _rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, params).fetchall()


def _head(db: Path, run_id: str) -> dict[str, Any]:
    [(head_json,)] = _rows(
        db, "SELECT head_json FROM snapshot_heads WHERE run_id = ?", run_id
    )
    return json.loads(head_json)


def _run_entries(db: Path, run_id: str) -> list[dict[str, Any]]:
    rows = _rows(
        db,
        "SELECT entries_json FROM snapshot_turns WHERE run_id = ? ORDER BY seq",
        run_id,
    )
    return [entry for (entries_json,) in rows for entry in json.loads(entries_json)]


def _segments(db: Path, session_id: str) -> list[tuple[str, list[dict[str, Any]]]]:
    rows = _rows(
        db,
        "SELECT run_id, entries_json FROM session_runs WHERE session_id = ? ORDER BY id",
        session_id,
    )
    return [(run_id, json.loads(entries_json)) for run_id, entries_json in rows]


def _dangling(entries: list[dict[str, Any]]) -> set[str]:
    calls = {e["call_id"] for e in entries if e["type"] == "tool_call"}
    return calls - {e["call_id"] for e in entries if e["type"] == "tool_result"}


def _chat_run(ws: DemoWorkspace, run_id: str) -> tuple[Any, ...]:
    [row] = _rows(
        ws.web_db,
        "SELECT session_id, status, error, finished_at FROM chat_runs WHERE id = ?",
        run_id,
    )
    return row


def _active_run(ws: DemoWorkspace, session_id: str) -> str | None:
    [(active,)] = _rows(
        ws.web_db, "SELECT active_run_id FROM chat_sessions WHERE id = ?", session_id
    )
    return active


def _in_sessions(db: Path, run_id: str) -> bool:
    return bool(_rows(db, "SELECT 1 FROM session_runs WHERE run_id = ?", run_id))


def _tables(db: Path) -> set[str]:
    return {
        name
        for (name,) in _rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")
    }


def test_layouts(demo_dir: DemoWorkspace) -> None:
    ws = demo_dir
    assert sorted(p.name for p in ws.files) == sorted(
        p.name for p in ws.directory.glob("*.db")
    )
    assert {"chat_sessions", "chat_runs", "session_runs", "snapshot_heads"} <= _tables(
        ws.web_db
    )
    assert "snapshot_heads" not in _tables(ws.sessions_db)
    assert "session_runs" not in _tables(ws.runs_db)
    titles = _rows(ws.web_db, "SELECT title FROM chat_sessions")
    assert titles and all(title for (title,) in titles)


def test_completed_sessions(demo_dir: DemoWorkspace) -> None:
    ws = demo_dir
    trip = _segments(ws.web_db, ws.trip_session)
    assert len(trip) == 3
    entries = [e for _, seg in trip for e in seg]
    assert any(e["type"] == "reasoning" and e["content"] for e in entries)
    answers = " ".join(e["content"] for e in entries if e["type"] == "assistant_text")
    assert "金閣寺" in answers and "⛩️" in answers
    # The third turn's parallel batch: two calls, then both results.
    assert [e["type"] for e in trip[2][1][1:5]] == ["tool_call"] * 2 + [
        "tool_result"
    ] * 2
    # The web UI keys its run record by the run id the segment carries.
    for run_id, _ in trip:
        assert _chat_run(ws, run_id)[:2] == (ws.trip_session, "completed")
    assert _active_run(ws, ws.trip_session) is None

    stock = [e for _, seg in _segments(ws.web_db, ws.tool_error_session) for e in seg]
    errors = [e for e in stock if e["type"] == "tool_result" and e["is_error"]]
    assert len(errors) == 1 and "unknown SKU 'ZZ-999'" in errors[0]["output"]

    assert len(_segments(ws.sessions_db, ws.cli_session)) == 2


def test_handoff(demo_dir: DemoWorkspace) -> None:
    entries = [
        e
        for _, seg in _segments(demo_dir.web_db, demo_dir.handoff_session)
        for e in seg
    ]
    assert any(
        e["type"] == "tool_call" and e["name"] == "transfer_to_researcher"
        for e in entries
    )
    assert any(
        e["type"] == "tool_result"
        and e["output"].startswith("Transferred to researcher")
        for e in entries
    )


def test_trimmed_and_untrimmed(demo_dir: DemoWorkspace) -> None:
    trimmed = _segments(demo_dir.web_db, demo_dir.trimmed_session)
    outputs = [
        [e["output"] for e in seg if e["type"] == "tool_result"] for _, seg in trimmed
    ]
    assert all(
        out.endswith(MARKER) and len(out) < 1000 for seg in outputs[:-1] for out in seg
    )
    assert (
        outputs[0] and outputs[1] and outputs[-1] == []
    )  # the kept last run has no tools
    [(_, full)] = _segments(demo_dir.web_db, demo_dir.untrimmed_session)
    [big] = [e["output"] for e in full if e["type"] == "tool_result"]
    assert len(big) >= 100 * 1024 and not big.endswith(MARKER)


@pytest.mark.parametrize("layout", ["web", "two-file"])
def test_crashed_run(demo_dir: DemoWorkspace, layout: str) -> None:
    ws = demo_dir
    if layout == "web":
        cp_db, session_db, run_id, session_id = (
            ws.web_db,
            ws.web_db,
            ws.crashed_run,
            ws.crashed_session,
        )
    else:
        cp_db, session_db, run_id, session_id = (
            ws.runs_db,
            ws.sessions_db,
            ws.cli_crashed_run,
            ws.cli_session,
        )
    head = _head(cp_db, run_id)
    assert head["status"] == "running" and head["error"] is None
    entries = _run_entries(cp_db, run_id)
    assert _dangling(entries) == {f"call_{run_id}_job"}
    [(updated_at,)] = _rows(
        cp_db, "SELECT updated_at FROM snapshot_heads WHERE run_id = ?", run_id
    )
    assert (
        updated_at == head["updated_at"] < time.time()
    )  # the killed writer never comes back
    assert not _in_sessions(session_db, run_id)
    assert len(_segments(session_db, session_id)) >= 2  # the earlier, completed legs
    if layout == "web":
        assert _active_run(ws, session_id) == run_id
        assert _chat_run(ws, run_id)[:3] == (session_id, "running", None)


async def test_the_refund_waits_for_its_approval(
    demo_dir: DemoWorkspace, tmp_path: Path
) -> None:
    """Killed while ``refund`` waited: a running head with the call dangling and
    lovia web's records as a crash leaves them; lovia's resume asks for the
    approval again, and an approved refund is stored once."""
    ws = demo_dir
    run_id, call_id = ws.approval_run, f"call_{ws.approval_run}_refund"
    assert _head(ws.web_db, run_id)["status"] == "running"
    assert _dangling(_run_entries(ws.web_db, run_id)) == {call_id}
    assert _active_run(ws, ws.approval_session) == run_id
    assert _chat_run(ws, run_id)[:3] == (ws.approval_session, "running", None)

    copy = DemoWorkspace(tmp_path / "copy")
    shutil.copytree(ws.directory, copy.directory)
    asked: list[str] = []
    handle = Runner.stream(
        agent(), [],
        session=SQLiteSession(copy.web_db, wal=True), session_id=ws.approval_session,
        checkpoint=CheckpointOptions(SQLiteCheckpointer(copy.web_db, wal=True), run_id, if_run_exists="resume_only"),
    )  # fmt: skip
    async for event in handle:
        if isinstance(event, events.ApprovalRequired):
            asked.append(event.call.id)
            event.approve()
    await handle.result()
    assert asked == [call_id]
    [*_, (landed_run, landed)] = _segments(copy.web_db, ws.approval_session)
    [result] = [
        e for e in landed if e["type"] == "tool_result" and e["call_id"] == call_id
    ]
    assert landed_run == run_id
    assert result["output"] == "refunded 42 € on order A-17 💸"


def test_interrupted_and_failed(demo_dir: DemoWorkspace) -> None:
    ws = demo_dir
    head = _head(ws.web_db, ws.interrupted_run)
    assert (
        head["status"] == "interrupted" and head["error"]["type"] == "MaxTurnsExceeded"
    )
    assert _active_run(ws, ws.interrupted_session) == ws.interrupted_run
    assert _chat_run(ws, ws.interrupted_run)[:2] == (
        ws.interrupted_session,
        "interrupted",
    )

    head = _head(ws.web_db, ws.failed_run)
    assert head["status"] == "failed" and head["error"]["type"] == "AssertionError"
    assert head["agent_name"] == "researcher"
    session_id, status, error, finished_at = _chat_run(ws, ws.failed_run)
    assert (
        (session_id, status) == (ws.failed_session, "failed") and error and finished_at
    )
    assert _active_run(ws, ws.failed_session) is None  # linked by chat_runs only


def test_cancelled_batch(demo_dir: DemoWorkspace) -> None:
    ws = demo_dir
    head = _head(ws.web_db, ws.batch_run)
    assert head["status"] == "interrupted" and head["error"]["type"] == "CancelledError"
    entries = _run_entries(ws.web_db, ws.batch_run)
    assert [e["type"] for e in entries[1:4]] == ["tool_call"] * 3
    assert _dangling(entries) == {"call_jobs_2"}
    assert _chat_run(ws, ws.batch_run)[1:3] == ("interrupted", "cancelled")
    assert _active_run(ws, ws.batch_session) == ws.batch_run


def test_crash_window_orphan_and_completed_checkpoint(demo_dir: DemoWorkspace) -> None:
    ws = demo_dir
    assert _head(ws.web_db, ws.crash_window_run)["status"] == "completed"
    assert not _in_sessions(ws.web_db, ws.crash_window_run)
    assert _chat_run(ws, ws.crash_window_run)[0] == ws.crash_window_session
    assert _active_run(ws, ws.crash_window_session) == ws.crash_window_run

    assert _head(ws.web_db, ws.orphan_run)["status"] == "interrupted"
    assert not _in_sessions(ws.web_db, ws.orphan_run)
    assert not _rows(ws.web_db, "SELECT 1 FROM chat_runs WHERE id = ?", ws.orphan_run)
    assert not _rows(
        ws.web_db, "SELECT 1 FROM chat_sessions WHERE active_run_id = ?", ws.orphan_run
    )

    assert _head(ws.runs_db, ws.cli_completed_run)["status"] == "completed"
    assert [
        run_id for run_id, _ in _segments(ws.sessions_db, ws.cli_completed_session)
    ] == [ws.cli_completed_run]


def test_web_history(demo_dir: DemoWorkspace) -> None:
    """lovia web's records: runs that saved nothing, a task, a schedule, a fork."""
    ws = demo_dir
    for run_id, status, error in (
        (REJECTED_RUN, "failed", REJECTED),
        (STOPPED_RUN, "cancelled", "cancelled"),
    ):
        assert _chat_run(ws, run_id)[:3] == (ws.launch_session, status, error)
        assert not _in_sessions(ws.web_db, run_id)
        assert not _rows(
            ws.web_db, "SELECT 1 FROM snapshot_heads WHERE run_id = ?", run_id
        )
    assert _rows(
        ws.web_db,
        "SELECT parent_id FROM chat_sessions WHERE id = ?",
        ws.launch_task_session,
    ) == [(ws.launch_session,)]
    assert _rows(
        ws.web_db,
        "SELECT origin_kind, origin_ref FROM chat_sessions WHERE origin_session_id = ?",
        ws.launch_session,
    ) == [("fork", f"{SMOKE_RUN}:0")]
    fires = _rows(
        ws.web_db,
        "SELECT session_id, status FROM chat_runs WHERE source = ? ORDER BY started_at",
        f"schedule:{ws.digest_schedule}",
    )
    assert [status for _, status in fires] == ["completed", "completed", "failed"]
    assert fires[-1][0] is None  # the fire that started no run


def test_refuses_directory_with_databases(tmp_path: Path) -> None:
    (tmp_path / "mine.db").write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="already contains .db files"):
        build_demo(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine.db"]
    assert (tmp_path / "mine.db").read_bytes() == b"precious"


RESUMABLE = [
    # (session db attr, checkpoint db attr, run attr, session attr, dangling call or None)
    ("web_db", "web_db", "crashed_run", "crashed_session", "call_run-crashed_job"),
    (
        "sessions_db",
        "runs_db",
        "cli_crashed_run",
        "cli_session",
        "call_run-cli-crashed_job",
    ),
    ("web_db", "web_db", "interrupted_run", "interrupted_session", None),
    ("web_db", "web_db", "failed_run", "failed_session", None),
    ("web_db", "web_db", "batch_run", "batch_session", "call_jobs_2"),
]


@pytest.mark.parametrize(
    ("session_attr", "cp_attr", "run_attr", "sid_attr", "dangling"), RESUMABLE
)
async def test_resume_finishes(
    demo_dir: DemoWorkspace, tmp_path: Path,
    session_attr: str, cp_attr: str, run_attr: str, sid_attr: str, dangling: str | None,
) -> None:  # fmt: skip
    copy = DemoWorkspace(tmp_path / "copy")
    shutil.copytree(demo_dir.directory, copy.directory)
    session_db, cp_db = getattr(copy, session_attr), getattr(copy, cp_attr)
    run_id, session_id = getattr(copy, run_attr), getattr(copy, sid_attr)
    before = len(_segments(session_db, session_id))
    started: list[str] = []
    handle = Runner.stream(
        agent(), [],
        session=SQLiteSession(session_db, wal=True), session_id=session_id,
        checkpoint=CheckpointOptions(SQLiteCheckpointer(cp_db, wal=True), run_id, if_run_exists="resume_only"),
        max_turns=10,
    )  # fmt: skip
    async for event in handle:
        if isinstance(event, events.ToolCallStarted):
            started.append(event.call.id)
    await handle.result()

    assert started == ([dangling] if dangling else [])
    assert _head(cp_db, run_id)["status"] == "completed"
    segments = _segments(session_db, session_id)
    assert len(segments) == before + 1 and segments[-1][0] == run_id
    landed = segments[-1][1]
    assert not _dangling(landed)
    if dangling:
        assert (
            sum(e["type"] == "tool_result" and e["call_id"] == dangling for e in landed)
            == 1
        )


async def test_orphan_resumes_and_crash_window_replays(
    demo_dir: DemoWorkspace, tmp_path: Path
) -> None:
    copy = DemoWorkspace(tmp_path / "copy")
    shutil.copytree(demo_dir.directory, copy.directory)
    checkpointer = SQLiteCheckpointer(copy.web_db, wal=True)
    result = await Runner.run(
        agent(),
        [],
        checkpoint=CheckpointOptions(
            checkpointer, copy.orphan_run, if_run_exists="resume_only"
        ),
        max_turns=10,
    )
    assert (
        result.output and _head(copy.web_db, copy.orphan_run)["status"] == "completed"
    )

    await Runner.run(
        agent(),
        [],
        session=SQLiteSession(copy.web_db, wal=True),
        session_id=copy.crash_window_session,
        checkpoint=CheckpointOptions(
            checkpointer, copy.crash_window_run, if_run_exists="resume_only"
        ),
    )
    segments = _segments(copy.web_db, copy.crash_window_session)
    assert [run_id for run_id, _ in segments][-1] == copy.crash_window_run


def test_agent_process_runs_to_completion(tmp_path: Path) -> None:
    """The crash helper's child also finishes when nobody kills it."""
    db = tmp_path / "live.db"
    with AgentProcess(db, db, "s1", "r1", steps=2, slow=0) as child:
        child.wait_for(READY)
        child.wait_for(DONE)
    assert _head(db, "r1")["status"] == "completed"
    [(run_id, entries)] = _segments(db, "s1")
    assert run_id == "r1" and not _dangling(entries)
    assert sum(e["type"] == "tool_result" for e in entries) == 3


def test_crash_run_leaves_a_dangling_running_head(tmp_path: Path) -> None:
    sessions, runs = tmp_path / "s.db", tmp_path / "r.db"
    crash_run(sessions, runs, "s1", "r1", steps=1, wal=False)
    assert _head(runs, "r1")["status"] == "running"
    assert _dangling(_run_entries(runs, "r1")) == {"call_r1_job"}
    assert not _segments(sessions, "s1")


def _cli(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_an_interrupted_build_leaves_nothing_and_a_rerun_says_how_to_open_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl+C (a real SIGINT) once the first database is written: the directory
    the build made is gone, so the same command again builds it, and
    ``--no-tui`` prints the command that opens it with the demo's agent and
    staleness (the CLI's default would refuse its fresh crashed runs)."""
    from lovia_tui.cli import main
    from lovia_tui.cli.demo import open_command

    directory = tmp_path / "demo"
    # As from a terminal: a suite started in the background (`cmd &`) ignores
    # SIGINT, and a child inherits that; the build would never see Ctrl+C.
    build = _cli(
        "demo", "--dir", str(directory), "--no-tui",
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not any(directory.glob("*.db")) and build.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)  # bounded by the deadline above
    build.send_signal(signal.SIGINT)
    _, err = build.communicate(timeout=60)
    assert build.returncode == 130, err
    assert err.endswith("lovia-tui: interrupted\n") and "Traceback" not in err
    assert not directory.exists()

    assert main(["demo", "--dir", str(directory), "--no-tui"]) == 0
    out = capsys.readouterr().out
    assert f"open it with:  {open_command(directory, 2)}" in out
    assert (
        "lovia-tui " + str(directory) + " --stale-after 2 --agent lovia_tui.demo:agent"
        in out
    )
    assert sorted(p.name for p in directory.iterdir() if p.suffix == ".db") == [
        "assistant.db", "runs.db", "sessions.db",
    ]  # fmt: skip


def test_a_temporary_demo_is_removed_when_the_app_quits(tmp_path: Path) -> None:
    """``lovia-tui demo`` without ``--dir``, at a real terminal (a pty): the
    temporary directory exists while the app runs and is gone once `q` quits."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TMPDIR": str(tmp_path), "TERM": "xterm-256color"}
    app = subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", "demo"],
        stdin=follower, stdout=follower, stderr=follower, env=env,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 90
        while b"Sessions" not in seen:  # the app's first frame
            assert time.monotonic() < deadline, seen[-500:]
            if select.select([leader], [], [], 0.2)[0]:
                seen += os.read(leader, 65536)
        [demo] = tmp_path.glob("lovia-tui-demo-*")
        assert (demo / "assistant.db").exists()
        while app.poll() is None:
            assert time.monotonic() < deadline
            os.write(leader, b"q")
            if select.select([leader], [], [], 0.3)[0]:
                with contextlib.suppress(OSError):
                    os.read(leader, 65536)
    finally:
        if app.poll() is None:
            app.kill()
        app.wait()
        os.close(leader)
    assert app.returncode == 0
    assert list(tmp_path.glob("lovia-tui-demo-*")) == []


def test_a_temporary_demo_keeps_its_journal_in_its_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is done to a demo removed on quit is journaled beside it and goes
    with it, not into the user's journal (a new user's first entry was #35);
    a journal the user named stays theirs."""
    import tempfile

    from lovia_tui.cli import demo as demo_command
    from lovia_tui.cli import main

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("LOVIA_TUI_JOURNAL", raising=False)
    seen: dict[str, Any] = {}

    def launch_app(args: Any) -> int:
        seen["journal"] = os.environ.get("LOVIA_TUI_JOURNAL")
        seen["directory"] = Path(args.paths[0])
        return 0

    monkeypatch.setattr(demo_command, "launch_app", launch_app)
    assert main(["demo"]) == 0
    assert seen["journal"] == str(seen["directory"] / "journal" / "journal.db")
    assert not seen["directory"].exists()

    mine = str(tmp_path / "mine.db")
    monkeypatch.setenv("LOVIA_TUI_JOURNAL", mine)
    assert main(["demo"]) == 0
    assert seen["journal"] == mine


async def test_a_web_run_cancelled_at_any_point_ends_cancelled(tmp_path: Path) -> None:
    """Ctrl+C cancels the demo's build wherever it is: a web run cancelled
    before lovia saved its first checkpoint has nothing to settle and ends
    cancelled, as one cancelled later does (settling it asserted, and the
    build's ``suppress`` blocks could carry on past it)."""
    import asyncio

    from lovia.testing import text
    from lovia.web.store import ChatStore

    from lovia_tui.demo.webui import web_run

    store = ChatStore.sqlite(tmp_path / "a.db")
    outcomes = []
    for step in range(2_000):  # the cancel lands 1 ms later each time, to the end
        task = asyncio.create_task(
            web_run(store, f"s{step}", "hi", [text("hello")], run_id=f"r{step}")
        )
        await asyncio.sleep(step / 1000)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            outcomes.append("cancelled")
        else:
            outcomes.append("finished")
            break
    assert outcomes[0] == "cancelled" and outcomes[-1] == "finished", outcomes


def _script(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_suggested_commands_name_lovia_tui_as_it_can_be_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `make demo` lovia-tui lives in .venv/bin, not on PATH: the
    command to paste names that path; on PATH, plain `lovia-tui`; started with
    `python -m lovia_tui`, that."""
    from lovia_tui.core.formatting import command_line, program

    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path / ".venv" / "bin" / "lovia-tui")
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    assert program() == ".venv/bin/lovia-tui"
    assert command_line("undo", "my file.db") == ".venv/bin/lovia-tui undo 'my file.db'"
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    assert program() == str(script)  # not below the working directory: whole
    monkeypatch.setenv("PATH", str(script.parent))
    assert program() == "lovia-tui"
    main_py = Path(sys.modules["lovia_tui"].__file__).with_name("__main__.py")
    monkeypatch.setattr(sys, "argv", [str(main_py), "demo"])
    python = _script(tmp_path / "py" / "python3")
    monkeypatch.setattr(sys, "executable", str(python))
    assert program() == f"{python} -m lovia_tui"
    monkeypatch.setenv("PATH", str(python.parent))
    assert program() == "python3 -m lovia_tui"
    monkeypatch.setattr(sys, "argv", ["/usr/bin/some-host-program"])
    assert program() == "lovia-tui"


def test_the_demo_says_how_to_open_it_with_the_script_that_made_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from lovia_tui.cli import main

    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path / ".venv" / "bin" / "lovia-tui")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    directory = tmp_path / "demo"
    assert main(["demo", "--dir", str(directory), "--no-tui"]) == 0
    out = capsys.readouterr().out
    assert (
        f"open it with:  .venv/bin/lovia-tui {directory} --stale-after 2 "
        "--agent lovia_tui.demo:agent"
    ) in out, out
