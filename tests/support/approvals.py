"""A run really killed while it waited for an approval, and the agents that resume it.

The child (``python -m support.approvals DB``) runs :func:`refund_desk` with a
checkpoint and a session in one file; its stream consumer never answers the
``ApprovalRequired`` of ``refund``, prints ``WAITING`` and is SIGKILLed there.
What is left is what a crash while waiting leaves: a ``running`` head whose
``refund`` call has no result. The agents are loadable as
``support.approvals:ATTR`` (``--agent``); test modules import the fixtures
:func:`waiting_template` and :func:`desk`.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import tool

from lovia_tui.core.actions.journal import APPROVAL, Journal, JournalEntry

SESSION = "sess-refund"
RUN = "run-refund"
CALL = "call_refund"
ARGUMENTS = {"order": "A-17", "amount": 42}
FINAL = "The refund is settled."
WAITING = "WAITING"


@tool(needs_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order (needs approval)."""
    return f"refunded {amount} on order {order}"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: paid"


def _desk(script: list[AssistantTurn], **options) -> Agent:
    return Agent(
        name="refund-desk",
        model=ScriptedProvider(script),
        tools=[refund, lookup],
        **options,
    )


def refund_desk() -> Agent:
    """Finishes a resumed run with :data:`FINAL` (no approval handler)."""
    return _desk([text(FINAL)])


def trusting_desk() -> Agent:
    """The same agent with its own approval handler, which allows every call."""
    return _desk([text(FINAL)], approval_handler=lambda call, ctx: True)


def asking_twice() -> Agent:
    """After the resumed call, asks for a second refund before finishing."""
    return _desk(
        [
            call("refund", {"order": "B-2", "amount": 7}, call_id="call_refund_2"),
            text(FINAL),
        ]
    )


def kill_while_waiting(db: Path, timeout: float = 30.0) -> None:
    """Run the child on ``db`` and SIGKILL it while it waits for the approval."""
    child = subprocess.Popen(
        [sys.executable, "-m", "support.approvals", str(db)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert child.stdout is not None
        line = ""
        while line != WAITING:
            line = child.stdout.readline().strip()
            if not line and child.poll() is not None:
                raise RuntimeError(
                    f"the child exited ({child.returncode}) before waiting"
                )
    finally:
        child.kill()
        child.wait(timeout)
        if child.stdout is not None:
            child.stdout.close()


def build_waiting(db: Path) -> Path:
    """One file (checkpoint + session, WAL) whose run :data:`RUN` died waiting."""
    db.parent.mkdir(parents=True, exist_ok=True)
    kill_while_waiting(db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db


@pytest.fixture(scope="module")
def waiting_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file as the kill left it, written once per test module (copy it: :func:`desk`)."""
    return build_waiting(tmp_path_factory.mktemp("waiting") / "desk.db")


@pytest.fixture
def desk(waiting_template: Path, tmp_path: Path) -> Path:
    """A private copy of :func:`waiting_template`, free to resume."""
    return Path(shutil.copy(waiting_template, tmp_path / "desk.db"))


def integrity(path: Path) -> list[str]:
    """``PRAGMA integrity_check``'s every row (``["ok"]`` when the file is sound)."""
    with sqlite3.connect(path) as conn:
        rows = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    conn.close()
    return rows


async def _child(db: Path) -> None:
    agent = _desk(
        [call("lookup", {"order": "A-17"}, call_id="call_lookup"),
         call("refund", ARGUMENTS, call_id=CALL), text("unreachable")]
    )  # fmt: skip
    handle = Runner.stream(
        agent,
        "Refund order A-17, please.",
        session=SQLiteSession(db, wal=True),
        session_id=SESSION,
        checkpoint=CheckpointOptions(SQLiteCheckpointer(db, wal=True), RUN),
    )
    async for event in handle:
        if type(event).__name__ == "ApprovalRequired":
            print(WAITING, flush=True)
            await asyncio.sleep(120)  # bounded: the test kills this process first


if __name__ == "__main__":
    asyncio.run(_child(Path(sys.argv[1])))


async def approval_entries(
    journal: Journal | None = None, files: list[Path] | None = None
) -> list[JournalEntry]:
    """The journal's answers to approvals (on ``files``), oldest first; a
    resume's own entry, which journals its rows, is left out."""
    entries = await (journal or Journal()).entries(files)
    return sorted((e for e in entries if e.action == APPROVAL), key=lambda e: e.id)
