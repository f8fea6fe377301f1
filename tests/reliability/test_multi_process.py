"""Two lovia-tui processes on the same files: an action in flight is never undone under it.

The race, forced: a writer holds the file's write lock, so a ``rewind`` (or a
``fork``) in its own process waits with its journal entry pending. Meanwhile
another process's ``undo`` refuses with where the action runs, ``doctor``
calls it running (not interrupted) and prescribes nothing; an undo told to
wait does, and undoes the action once it committed. Afterwards every row is
as it was, and the journal says exactly that.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry
from support.lock_holder import held_write_lock
from support.lovia_factory import integrity, rows
from support.writer_process import wait_for

from lovia_tui.cli import main
from lovia_tui.core.actions.journal import Journal

pytestmark = pytest.mark.usefixtures("private_journal")

SEGMENTS = 200
ACTIONS = {
    "rewind": ["rewind", "{db}", "S", "--keep", "0"],
    "fork": ["fork", "{db}", "S", "--keep", "40", "--as", "F"],
}


async def _build(db: Path) -> None:
    session = SQLiteSession(db, wal=True)
    for n in range(SEGMENTS):
        await session.append(
            "S",
            [
                InputEntry(role="user", content=f"q{n}"),
                AssistantTextEntry(content=f"a{n}"),
            ],
            run_id=f"seg-{n}",
        )


def cli(*argv: object) -> subprocess.Popen[str]:
    """``lovia-tui ARGV`` in a process of its own, as a second operator runs it."""
    return subprocess.Popen(
        [sys.executable, "-m", "lovia_tui", *map(str, argv)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _pending(db: Path) -> list[int]:
    if not Path(os.environ["LOVIA_TUI_JOURNAL"]).exists():
        return []
    entries = asyncio.run(Journal().entries([db]))
    return [e.id for e in entries if e.status == "pending"]


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_in_flight_is_waited_for_never_undone_under_it(
    scratch: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    db = scratch / "s.db"
    asyncio.run(_build(db))
    before = rows(db)
    with held_write_lock(db):
        acting = cli(*[a.format(db=db) for a in ACTIONS[action]], "--yes")
        wait_for(lambda: bool(_pending(db)), within=60)
        [entry_id] = _pending(db)
        started = time.monotonic()

        # Another process: the undo refuses, saying where the action runs.
        assert main(["undo", str(db), "--yes", "--wait", "0"]) == 2
        err = capsys.readouterr().err
        assert f"journal entry {entry_id} is running in pid {acting.pid} on " in err
        # The doctor calls it running, not interrupted, and prescribes nothing.
        main(["doctor", str(db), "--json"])
        report = json.loads(capsys.readouterr().out)
        kinds = {f["kind"]: f for f in report["findings"]}
        assert "unfinished-action" not in kinds
        assert kinds["running-action"]["fix"] is None
        assert f"pid {acting.pid}" in kinds["running-action"]["message"]
        # An undo that waits, in a third process, started before the action commits.
        waiting = cli("undo", db, entry_id, "--yes", "--wait", "60")
        time.sleep(0.3)  # bounded: let it reach the wait
        assert waiting.poll() is None
        assert time.monotonic() - started < 4.0, "the action's busy timeout is 5 s"
    out, err = acting.communicate(timeout=60)
    assert acting.returncode == 0, err
    assert "done:" in out
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert "done:" in out and "rows restored" in out
    assert rows(db) == before
    assert integrity(db) == "ok"
    entries = {e.id: e for e in asyncio.run(Journal().entries([db]))}
    assert entries[entry_id].status == "done"
    undo_id = entries[entry_id].undone_by
    assert undo_id is not None and entries[undo_id].status == "done"
    assert main(["undo", str(db), "--yes"]) == 2
    assert "nothing to undo" in capsys.readouterr().err
