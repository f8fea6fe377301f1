"""The doctor's pass over every checkpoint batch, split between two processes:
the same runs found, each with its first unreadable batch, whichever half it
is in, and the same when the second process fails."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
from pathlib import Path

import pytest
from lovia import CheckpointOptions, Runner, SQLiteCheckpointer
from lovia.testing import call, text
from support.lovia_factory import agent

from lovia_tui.core.doctor import batch_scan
from lovia_tui.core.store.connect import sqlite_uri
from lovia_tui.core.store.database import open_database

BAD = '[{"type": 7}]'


@pytest.fixture
async def runs(scratch: Path) -> Path:
    """Eight checkpointed runs of several batches each; unreadable batches in
    the first and the last run, two in one run, its later seq first, and
    one a hostile writer put at the lowest rowids."""
    path = scratch / "runs.db"
    checkpointer = SQLiteCheckpointer(path, wal=True)
    for n in range(8):
        script = [call("lookup", {"n": n}), call("lookup", {"n": -n}), text("Done.")]
        await Runner.run(
            agent(script),
            f"Job {n}.",
            checkpoint=CheckpointOptions(checkpointer, f"job-{n}"),
        )
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        rows = conn.execute(
            "SELECT rowid, run_id, seq FROM snapshot_turns ORDER BY rowid"
        ).fetchall()
        assert len(rows) >= 16, rows
        job_4 = [row for row in rows if row[1] == "job-4"]
        assert len(job_4) >= 2
        # job-4: its seq order reversed in rowid order, both unreadable.
        low_rowid, high_rowid = job_4[0][0], job_4[-1][0]
        conn.execute(
            "UPDATE snapshot_turns SET seq = -1 WHERE rowid = ?", (high_rowid,)
        )
        conn.execute(
            "INSERT INTO snapshot_turns (rowid, run_id, seq, entries_json) "
            "VALUES (?, 'job-2', 99, ?)",
            (-(1 << 62), BAD),
        )
        for rowid in (rows[0][0], low_rowid, high_rowid, rows[-1][0]):
            conn.execute(
                "UPDATE snapshot_turns SET entries_json = ? WHERE rowid = ?",
                (BAD, rowid),
            )
    return path


async def found(path: Path, split_above: int, monkeypatch) -> dict | None:
    monkeypatch.setattr(batch_scan, "SPLIT_ABOVE", split_above)
    db = await open_database(path)
    try:
        return await batch_scan.unreadable_batches(db, lambda *_: None)
    finally:
        await db.close()


async def test_two_processes_find_what_one_does(runs: Path, monkeypatch) -> None:
    alone = await found(runs, 1 << 40, monkeypatch)
    from_child: list[list[int]] = []
    read_again = batch_scan._read_again

    async def spy(db, conn, rowids):
        from_child.append(rowids)
        return await read_again(db, conn, rowids)

    monkeypatch.setattr(batch_scan, "_read_again", spy)
    split = await found(runs, 0, monkeypatch)
    assert alone == split
    assert len(from_child) == 1 and from_child[0]  # the child found its half's
    assert sorted(alone) == ["job-0", "job-2", "job-4", "job-7"]
    assert "seq -1" in str(alone["job-4"])  # its first batch by seq, not by rowid


async def test_a_failed_second_process_leaves_its_half_here(
    runs: Path, monkeypatch
) -> None:
    alone = await found(runs, 1 << 40, monkeypatch)

    async def failing(db, after, until):
        return await asyncio.create_subprocess_exec(
            sys.executable, "-c", "print('[1,'); raise SystemExit(3)",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip

    monkeypatch.setattr(batch_scan, "_start_child", failing)
    assert await found(runs, 0, monkeypatch) == alone

    async def none(db, after, until):
        return None

    monkeypatch.setattr(batch_scan, "_start_child", none)
    assert await found(runs, 0, monkeypatch) == alone


async def test_too_many_unreadable_runs_in_either_half(
    runs: Path, monkeypatch, capsysbinary
) -> None:
    monkeypatch.setattr(batch_scan, "MOST_UNREADABLE", 0)
    batch_scan._child(sqlite_uri(runs, "ro"), -1, 1 << 40)
    assert capsysbinary.readouterr().out == b"null"
    monkeypatch.setattr(batch_scan, "MOST_UNREADABLE", 10)
    assert await found(runs, 0, monkeypatch) is not None
    monkeypatch.setattr(batch_scan, "MOST_UNREADABLE", 1)
    assert await found(runs, 0, monkeypatch) is None
