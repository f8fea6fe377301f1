"""An action killed part-way (real SIGKILL of a real lovia-tui process) is undone in one command.

A 1,500-segment rewind and a 1,500-checkpoint delete are killed inside lovia's
transaction (SQLite rolls it back) or right after the commit (the change is
in, the journal entry still pending). Either way the journal entry is left
pending, ``doctor`` reports it with its undo, and ``lovia-tui undo`` (no id:
the newest) restores every row as it was before, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lovia import RunHead, SQLiteCheckpointer, SQLiteSession, Usage
from lovia.transcript import AssistantTextEntry, InputEntry
from support.lovia_factory import copy_db, integrity, rows, scratch_directory

from lovia_tui.cli import main
from lovia_tui.core.actions.journal import Journal

pytestmark = pytest.mark.usefixtures("private_journal")

SCRIPT = Path(__file__).parents[1] / "support" / "agents" / "interrupted_action.py"
COUNT = 1_500
UNDO_STAGES = ("undo-journaled", "undo-inside", "undo-committed")
"""Where an undo is killed (``support/agents/interrupted_action.py``)."""
COMMANDS = {
    "rewind": ["rewind", "{db}", "big", "--keep", "0"],
    "delete-run": ["delete-run", "{db}", "--status", "completed", "--older-than", "3"],
}


async def _build(db: Path) -> None:
    """A long session and many old completed checkpoints, written by lovia."""
    session, checkpointer = (
        SQLiteSession(db, wal=True),
        SQLiteCheckpointer(db, wal=True),
    )
    old = time.time() - 4 * 86400
    for n in range(COUNT):
        entries = [
            InputEntry(role="user", content=f"q{n}"),
            AssistantTextEntry(content=f"a{n}"),
        ]
        await session.append("big", entries, run_id=f"seg-{n}")
        head = RunHead("worker", Usage(), 1, status="completed", updated_at=old)
        await checkpointer.append(f"done-{n}", entries, head)


@pytest.fixture(scope="module")
def big_template() -> Iterator[Path]:
    with scratch_directory() as directory:
        asyncio.run(_build(directory / "big.db"))
        yield directory / "big.db"


def _killed_at(stage: str, argv: list[str]) -> None:
    """Run the command in its own process and SIGKILL it once it reaches ``stage``."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), stage, *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline().strip() if ready else ""
        assert line == stage, (line, proc.stderr.read() if not line else "")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("stage", ["inside", "committed"])
@pytest.mark.parametrize("action", COMMANDS)
def test_killed_action_is_undone_exactly(
    big_template: Path,
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
    action: str,
    stage: str,
) -> None:
    db = copy_db(big_template, scratch / "big.db")
    before = rows(db)
    argv = [part.format(db=db) for part in COMMANDS[action]]
    _killed_at(stage, [*argv, "--yes"])
    [entry] = asyncio.run(Journal().entries([db]))
    assert (entry.action, entry.status, entry.unfinished) == (action, "pending", True)
    if action == "delete-run":
        assert entry.subject == "1,500 checkpoints: completed, older than 3 days"
    assert (rows(db) == before) == (stage == "inside")  # SQLite rolled it back

    assert main(["doctor", str(db), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    [finding] = [f for f in report["findings"] if f["kind"] == "unfinished-action"]
    assert f"undo {db.resolve()} {entry.id} --yes" in finding["fix"]

    assert main(["undo", str(db)]) == 0  # the preview says what it will do
    out = capsys.readouterr().out
    assert f"undo journal entry {entry.id}" in out and "never finished" in out
    assert main(["undo", str(db), "--yes"]) == 0
    out = capsys.readouterr().out
    restored = 0 if stage == "inside" else COUNT * (2 if action == "delete-run" else 1)
    assert f"done: {restored:,} rows restored" in out
    if stage == "inside":
        assert "already in place (never removed, or back already)" in out
    assert rows(db) == before
    assert asyncio.run(Journal().get(entry.id)).undone_by is not None


@pytest.mark.parametrize("stage", UNDO_STAGES)
def test_killed_undo_is_settled_by_the_next_undo(
    big_template: Path, scratch: Path, capsys: pytest.CaptureFixture[str], stage: str
) -> None:
    """An undo SIGKILLed at each step of its own protocol: the next ``undo``
    completes it (or records that it had), the journal tells the truth, and
    undoing that undo brings back exactly the action's result."""
    db = copy_db(big_template, scratch / "big.db")
    before = rows(db)
    assert main(["rewind", str(db), "big", "--keep", "0", "--yes"]) == 0
    after_action = rows(db)
    [action] = asyncio.run(Journal().entries([db]))
    capsys.readouterr()

    _killed_at(stage, ["undo", str(db), "--yes"])
    undo_entry = asyncio.run(Journal().entries([db]))[0]
    assert (undo_entry.action, undo_entry.undoes, undo_entry.status) == (
        "undo",
        action.id,
        "pending",
    )
    committed = stage == "undo-committed"
    assert rows(db) == (before if committed else after_action)
    assert asyncio.run(Journal().get(action.id)).undone_by is None

    assert main(["doctor", str(db), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    [finding] = [f for f in report["findings"] if f["kind"] == "unfinished-action"]
    assert (
        f"undo {db.resolve()} {action.id} --yes" in finding["fix"]
    )  # the action, not the undo

    assert main(["undo", str(db), "--yes"]) == 0
    out = capsys.readouterr().out
    assert (
        ("done already" in out)
        if committed
        else (f"({COUNT:,} rows restored;" in out)  # after the action's own counts
    )
    assert rows(db) == before
    assert integrity(db) == "ok"
    settled = asyncio.run(Journal().get(undo_entry.id))
    assert settled.status == ("done" if committed else "rolled back")
    assert asyncio.run(Journal().unfinished([db])) == []
    undone_by = asyncio.run(Journal().get(action.id)).undone_by
    assert undone_by == undo_entry.id if committed else undone_by is not None
    assert main(["undo", str(db), "--yes"]) == 0  # nothing left claiming otherwise
    assert "nothing to undo" in capsys.readouterr().out

    # Undoing that undo (a redo) makes exactly the rewind's result again.
    assert main(["undo", str(db), str(undone_by), "--yes"]) == 0
    assert rows(db) == after_action
    redo = asyncio.run(Journal().entries([db]))[0]
    assert main(["undo", str(db), str(redo.id), "--yes"]) == 0
    assert rows(db) == before
    assert integrity(db) == "ok"


def test_undo_killed_between_two_files_is_finished_by_the_next(
    two_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """An undo across two files SIGKILLed after the first file's commit: the
    next undo puts back the rest, and the interrupted one is marked superseded."""
    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    paths = [str(sessions), str(runs)]
    assert main(["clear", *paths, "s", "--force", "--yes"]) == 0
    [action] = asyncio.run(Journal().entries([sessions]))
    cleared = rows(sessions)
    _killed_at("undo-between", ["undo", *paths, "--yes"])
    interrupted = asyncio.run(Journal().entries([sessions]))[0]
    assert (interrupted.action, interrupted.status) == ("undo", "pending")
    assert rows(runs) == before[1]  # runs.db committed first (path order)
    assert rows(sessions) == cleared
    capsys.readouterr()

    assert main(["undo", *paths, "--yes"]) == 0
    assert "rows restored" in capsys.readouterr().out
    assert (rows(sessions), rows(runs)) == before
    assert integrity(sessions) == integrity(runs) == "ok"
    settled = asyncio.run(Journal().get(interrupted.id))
    assert settled.status == "superseded"
    undone_by = asyncio.run(Journal().get(action.id)).undone_by
    assert undone_by is not None and undone_by != interrupted.id
    assert asyncio.run(Journal().unfinished([sessions, runs])) == []
    assert main(["undo", *paths, str(interrupted.id), "--yes"]) == 2
    assert f"entry {undone_by} completed the undo" in capsys.readouterr().err
