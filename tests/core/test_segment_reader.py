"""show and export read small segments a batch a statement, exactly as lovia stored them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry, entry_to_dict
from support.lovia_factory import integrity

from lovia_tui.cli import main
from lovia_tui.core.entries import UnreadableError
from lovia_tui.core.store import entry_stream, segment_reads
from lovia_tui.core.store.database import Database, open_database

RUNS = 40
BATCH_READ = "SELECT id, meta_json, CAST(entries_json AS BLOB)"


@pytest.fixture
def many_runs(tmp_path: Path) -> Path:
    """A session of ``RUNS`` small runs; run 7 carries a large meta, run 20 many entries."""
    path = tmp_path / "sessions.db"

    async def write() -> None:
        session = SQLiteSession(path)
        for n in range(RUNS):
            entries = [
                InputEntry("user", f"question {n}"),
                AssistantTextEntry(f"answer {n}"),
            ]
            if n == 20:
                entries *= 40
            meta = {"note": "x" * 3_000} if n == 7 else {"n": n}
            await session.append("s", entries, run_id=f"r{n}", meta=meta)

    asyncio.run(write())
    return path


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the read layer runs, in order."""
    seen: list[str] = []
    fetchall = Database.fetchall

    async def recorded(self, sql, params=(), **kwargs):
        seen.append(sql)
        return await fetchall(self, sql, params, **kwargs)

    monkeypatch.setattr(Database, "fetchall", recorded)
    return seen


def _lovia_segments(path: Path) -> list:
    return asyncio.run(SQLiteSession(path).segments("s"))


def _without_index(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in entry.items() if k != "index"} for entry in entries]


def test_show_reads_the_small_segments_in_one_statement(
    many_runs: Path, statements: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(many_runs), "s", "--json", "--readonly"]) == 0
    shown = json.loads(capsys.readouterr().out)["segments"]
    theirs = _lovia_segments(many_runs)
    assert [s["meta"] for s in shown] == [segment.meta for segment in theirs]
    assert [_without_index(s["entries"]) for s in shown] == [
        [entry_to_dict(e) for e in segment.entries] for segment in theirs
    ]
    indices = [e["index"] for s in shown for e in s["entries"]]
    assert indices == list(range(len(indices)))
    assert sum(sql.startswith(BATCH_READ) for sql in statements) == 1


def test_a_batch_holds_at_most_stream_above_bytes_of_meta_and_entries(
    many_runs: Path,
    statements: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run 7's meta alone is over the bound: it is read alone; run 20 is
    large, read by blob I/O; the rest in batches under the bound."""
    assert main(["export", str(many_runs), "s", "--format", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(entry_stream, "STREAM_ABOVE", 1_000)
    batches: list[list[int]] = []
    fetchall = Database.fetchall

    async def batch_ids(self, sql, params=(), **kwargs):
        if sql.startswith(BATCH_READ):
            batches.append(list(params))
        return await fetchall(self, sql, params, **kwargs)

    monkeypatch.setattr(Database, "fetchall", batch_ids)
    assert main(["export", str(many_runs), "s", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == whole
    read = [row_id for batch in batches for row_id in batch]
    assert len(read) == len(set(read)) == RUNS - 1  # all but run 20, each once
    assert [8] in batches  # run 7 (row id 8), alone
    with sqlite3.connect(many_runs) as conn:
        held = dict(
            conn.execute(
                "SELECT id, length(CAST(entries_json AS BLOB)) "
                "+ length(CAST(meta_json AS BLOB)) FROM session_runs"
            )
        )
    for batch in batches:
        assert len(batch) == 1 or sum(held[row_id] for row_id in batch) <= 1_000


async def test_a_segment_gone_since_listed_reads_as_gone(many_runs: Path) -> None:
    db = await open_database(many_runs)
    try:
        segments = await segment_reads.segments(db, "s")
        reader = entry_stream.SegmentReader(db, segments)
        await SQLiteSession(many_runs).rewind(
            "s", keep_entries=2
        )  # lovia drops runs 1 on
        assert await reader.meta(segments[0]) == {"n": 0}
        assert len(list(await reader.entries(segments[0]))) == 2
        assert await reader.meta(segments[5]) is None
        with pytest.raises(UnreadableError, match="no longer exists"):
            await reader.entries(segments[5])
    finally:
        await db.close()
    assert integrity(many_runs) == "ok"
