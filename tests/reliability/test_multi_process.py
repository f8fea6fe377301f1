"""Two lovia-tui processes on the same files: an action in flight is never undone under it.

Also two operators at random beside a real lovia writer (the seed is printed
first; ``LOVIA_TUI_SEED`` repeats it, ``LOVIA_TUI_MULTIPROC_SECONDS`` runs longer).

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
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry
from support.lock_holder import held_write_lock
from support.lovia_factory import SCRIPTS, integrity, raw, rows, write_session
from support.writer_process import db_rows, journaled, wait_for, writer

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
    assert main(["undo", str(db), "--yes"]) == 0  # nothing to do
    assert "nothing to undo" in capsys.readouterr().out


LOOP = Path(__file__).parents[1] / "support" / "agents" / "action_loop.py"
LOOP_SECONDS = float(os.environ.get("LOVIA_TUI_MULTIPROC_SECONDS") or 8)
"""How long the two operators act (``LOVIA_TUI_MULTIPROC_SECONDS`` for a longer run)."""
REFUSALS = (
    "changed since the preview",  # the other operator or the writer moved the rows
    "is running in pid",  # the other operator's action is in flight
    "already undone by entry",
    "nothing to undo",
    "undoing would lose that change",  # undo refused until a later change is undone
    "changed while its undo was prepared",
    "is live",  # the writer's run is live: never changed under it
    "exists now",
    "changed nothing (it was rolled back)",
)
"""Every way a command may refuse here, each with its reason: anything else fails."""


def _journaled(out: str) -> bool:
    """Whether a command's --json output says it changed the file (and journaled it)."""
    result = json.loads(out)["result"] or {}
    return bool(result.get("journal_id") or result.get("undo_entry_id"))


def _forks(db: Path) -> set[str]:
    """The sessions in the file other than the writer's: fork copies."""
    return {
        sid for (sid,) in raw(db, "SELECT DISTINCT session_id FROM session_runs")
    } - {"S"}


def test_two_operators_beside_a_lovia_writer_lose_nothing(
    scratch: Path, private_journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two lovia-tui processes act and undo at random on the session a lovia
    agent appends to. Every refusal says why; nothing is left pending; the
    file is sound; every committed row is in it or journaled; and a fork copy
    exists exactly while its entry says so."""
    seed = int(os.environ.get("LOVIA_TUI_SEED") or random.randrange(1 << 30))
    with capsys.disabled():
        print(f"\nseed {seed} (LOVIA_TUI_SEED={seed} repeats it)")
    db = scratch / "live.db"
    asyncio.run(write_session(db, "S", SCRIPTS, checkpoint_path=db))
    seeded, seeded_turns, seeded_heads = db_rows(db)
    logs = [scratch / f"operator-{n}.log" for n in range(2)]
    with writer(db, "S", scratch) as committed:
        operators = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(LOOP),
                    str(db),
                    "S",
                    str(seed + n),
                    str(LOOP_SECONDS),
                    str(log),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for n, log in enumerate(logs)
        ]
        for operator in operators:
            out, err = operator.communicate(timeout=LOOP_SECONDS + 120)
            assert operator.returncode == 0 and "DONE" in out, err[-2000:]
    records = [
        json.loads(line) for log in logs for line in log.read_text().splitlines()
    ]
    unexplained = [
        (r["argv"][0], r["err"])
        for r in records
        if r["code"] != 0 and not any(why in r["err"] for why in REFUSALS)
    ]
    assert unexplained == []
    acted = [r for r in records if r["code"] == 0 and _journaled(r["out"])]
    refused = Counter(
        next(why for why in REFUSALS if why in r["err"]) for r in records if r["code"]
    )
    with capsys.disabled():
        kinds = Counter(r["argv"][0] for r in acted)
        print(
            f"{len(records)} commands; changed the file: {dict(kinds)}; refused: {dict(refused)}"
        )
    assert acted, "no command got through"
    assert integrity(db) == "ok"
    entries = asyncio.run(Journal().entries([db], limit=100_000))
    assert [e.id for e in entries if e.status in ("pending", "failed")] == []

    # Every row the writer committed (or was seeded) is in the file as written,
    # or in the journal entry of the action that removed it.
    segments, turns, heads = db_rows(db)
    held = journaled(private_journal)
    kept = {
        table: set().union(*(tables.get(table, set()) for tables in held.values()))
        for table in ("session_runs", "snapshot_turns", "snapshot_heads")
    }
    lost = [
        s
        for s in seeded + committed.segments
        if s not in segments and s not in kept["session_runs"]
    ]
    lost += [
        t
        for t in seeded_turns | set(committed.turns)
        if t not in turns and t not in kept["snapshot_turns"]
    ]
    lost += [
        h for h in {**seeded_heads, **committed.heads}.items()
        if h not in heads.items() and h not in kept["snapshot_heads"]
    ]  # fmt: skip
    assert lost == []
    # No orphan: a fork copy is in the file exactly when its entry is done and not undone.
    live_forks = {
        e.params["new_session_id"]
        for e in entries
        if e.action == "fork" and e.status == "done" and e.undone_by is None
    }
    assert _forks(db) == live_forks
