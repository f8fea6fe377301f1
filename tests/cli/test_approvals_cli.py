"""``lovia-tui resume`` on a run killed while it waited for an approval: asked on a
terminal (a real pty, answers typed), scripted with ``--approve`` / ``--deny-all``,
refused when nobody can answer."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from support import approvals
from support.approvals import CALL, RUN, SESSION, approval_entries, integrity
from support.resume import head_status, session_rows

TESTS_DIR = Path(__file__).parents[1]
TIMEOUT = 60  # bounded
waiting_template, desk = approvals.waiting_template, approvals.desk  # fixtures


def _argv(db: Path, *extra: str, agent: str = "refund_desk") -> list[str]:
    return [
        sys.executable, "-m", "lovia_tui", "resume", str(db), RUN,
        "--agent", f"support.approvals:{agent}", "--session", SESSION,
        "--stale-after", "0", *extra,
    ]  # fmt: skip


def _run(
    db: Path, *extra: str, agent: str = "refund_desk"
) -> subprocess.CompletedProcess:
    return subprocess.run(
        _argv(db, *extra, agent=agent),
        cwd=TESTS_DIR,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _result(db: Path) -> dict:
    [(_, _, entries)] = session_rows(db)
    return next(
        e
        for e in orjson.loads(entries)
        if e["type"] == "tool_result" and e["call_id"] == CALL
    )


def test_without_a_terminal_or_flag_it_refuses_before_starting(desk: Path) -> None:
    before = desk.stat().st_mtime_ns, head_status(desk, RUN)
    done = _run(desk, "--yes")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert (
        "refund(" in line
        and CALL in line
        and "--approve TOOL" in line
        and "--deny-all" in line
    )
    assert (desk.stat().st_mtime_ns, head_status(desk, RUN)) == before
    preflight = json.loads(_run(desk, "--json").stdout.splitlines()[0])["data"]
    assert preflight["asks_approval"] == [
        {"call_id": CALL, "name": "refund", "why": "its tool is marked needs_approval"}
    ]
    assert preflight["agent_answers"] is False
    assert preflight["may_ask_approval"] == ["refund"]
    assert preflight["approvals"] == line.removeprefix("lovia-tui: ")


@pytest.mark.parametrize(
    ("flags", "approved", "reason"),
    [
        (["--approve", "refund"], True, "refund is in --approve"),
        (["--approve", "lookup"], False, "refund is not in --approve (lookup)"),
        (["--deny-all"], False, "--deny-all: every approval is denied"),
    ],
)
def test_scripted_flags_answer_and_are_journaled(
    desk: Path, flags: list[str], approved: bool, reason: str
) -> None:
    done = _run(desk, "--yes", "--json", *flags)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [decided] = [e for e in events if e["kind"] == "approval_decided"]
    assert (decided["data"]["approved"], decided["data"]["reason"]) == (
        approved,
        reason,
    )
    assert _result(desk)["is_error"] is not approved
    [entry] = asyncio.run(approval_entries())
    assert (entry.reason, entry.params["approved"]) == (reason, approved)
    listed = _lovia_tui("journal", str(desk), "--json")
    shown = json.loads(listed.stdout)["entries"]
    assert [(e["id"], e["action"], e["undoable"]) for e in shown] == [
        (entry.id, "approval", False),
        (entry.id - 1, "resume", True),  # its rows, journaled before it ran
    ]
    # A bare undo passes over the answer, which changed no rows: the resume.
    preview = _lovia_tui("undo", str(desk))
    assert preview.returncode == 0, preview.stderr
    assert (
        f"undo journal entry {entry.id - 1}: resume of run 'run-refund'"
        in preview.stdout
    )
    by_id = _lovia_tui("undo", str(desk), str(entry.id))
    assert "answered an approval: it changed no rows" in by_id.stderr
    assert integrity(desk) == ["ok"]


def _lovia_tui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lovia_tui", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_the_agents_own_handler_answers_when_no_flag_is_given(desk: Path) -> None:
    done = _run(desk, "--yes", agent="trusting_desk")
    assert done.returncode == 0, done.stderr
    assert "the agent's own approval_handler" in done.stdout
    assert not _result(desk)["is_error"]


def test_on_a_terminal_it_asks_and_takes_the_typed_answer(desk: Path) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: lovia-tui on a terminal of its own
        os.chdir(TESTS_DIR)
        os.execv(sys.executable, _argv(desk, "--yes"))
    seen = b""

    def until(marker: bytes, times: int = 1) -> None:
        nonlocal seen
        deadline = time.monotonic() + TIMEOUT
        while seen.count(marker) < times:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            if select.select([fd], [], [], 1)[0]:
                try:
                    seen += os.read(fd, 4096)
                except OSError:  # the child is gone
                    raise AssertionError(seen.decode(errors="replace")) from None

    try:
        until(b"approve refund? [y/n] ")
        assert b'refund({"order": "A-17", "amount": 42})' in seen
        os.write(fd, b"maybe\n")  # asked again until y or n
        until(b"approve refund? [y/n] ", times=2)
        os.write(fd, b"y\n")
        until(b"reason (optional, Enter to skip): ")
        os.write(fd, b"customer verified\n")
        until(b"completed: The refund is settled.")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not _result(desk)["is_error"]
    [entry] = asyncio.run(approval_entries())
    assert (entry.reason, entry.params["by"]) == ("customer verified", "you")
    assert integrity(desk) == ["ok"]
