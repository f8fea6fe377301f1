"""A walk's step size follows how fast its last step read, and a step that
reads past its cut is read again smaller."""

import asyncio
import time
from itertools import pairwise
from pathlib import Path

import aiosqlite
import pytest
from lovia.testing import text
from support.lovia_factory import write_heads, write_session

from lovia_tui.core.search import substring
from lovia_tui.core.store import head_reads, segment_reads, session_reads
from lovia_tui.core.store import pace as pacing
from lovia_tui.core.store.connect import rows
from lovia_tui.core.store.database import open_database
from lovia_tui.core.store.pace import (
    FIRST,
    TARGET,
    Cut,
    Pace,
    StatementCut,
    cut_for,
    paced,
)

COUNT_TO = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) FROM c"


def _took(pace: Pace, seconds: float, rows: int, monkeypatch) -> int:
    """A step of ``rows`` rows that read in ``seconds``, on a clock of our own."""
    now = [100.0]
    monkeypatch.setattr(pacing, "perf_counter", lambda: now[0])
    pace.start()
    now[0] += seconds
    pace.took(rows)
    return pace.size


def test_starts_small_and_at_most_its_most() -> None:
    assert Pace(5_000).size == FIRST
    assert Pace(7, first=128).size == 7


def test_a_fast_step_at_most_doubles_up_to_the_most(monkeypatch) -> None:
    pace = Pace(1_000)
    assert _took(pace, 0.0001, FIRST, monkeypatch) == 2 * FIRST
    for _ in range(10):
        _took(pace, 0.0001, pace.size, monkeypatch)
    assert pace.size == 1_000


def test_a_slow_step_shrinks_to_what_fits_the_target(monkeypatch) -> None:
    pace = Pace(5_000, first=1_000)
    assert _took(pace, 10 * TARGET, 1_000, monkeypatch) == pytest.approx(100, abs=1)


def test_a_very_slow_row_still_leaves_a_step_of_one(monkeypatch) -> None:
    pace = Pace(5_000)
    assert _took(pace, 1.0, 1, monkeypatch) == 1


def test_a_step_that_read_nothing_changes_nothing(monkeypatch) -> None:
    pace = Pace(5_000)
    assert _took(pace, 1.0, 0, monkeypatch) == FIRST


async def test_a_cut_step_is_read_again_at_half_its_size() -> None:
    asked: list[tuple[int, Cut | None]] = []

    async def read(size: int, cut: Cut | None) -> int:
        asked.append((size, cut))
        if size > 3:
            raise StatementCut("SELECT")
        return size

    pace = Pace(100, first=16)
    assert await paced(pace, read) == 2
    assert asked == [
        (16, Cut(pacing.CUT, 32)),
        (8, Cut(pacing.CUT, 16)),
        (4, Cut(pacing.CUT, 10)),
        (2, Cut(pacing.CUT, 10)),
    ]
    assert pace.size == 2
    assert Pace(100, first=1).cut is None  # a walk always moves on


async def test_a_statement_past_its_cut_is_interrupted_and_the_connection_reads_on() -> (
    None
):
    async with aiosqlite.connect(":memory:") as conn:
        with pytest.raises(StatementCut):  # ~10 s uncut on this kind of machine
            await rows(conn, COUNT_TO, (100_000_000,), cut=Cut(0.02, 100))
        # The clock goes with the statement: the next ones run to their end.
        assert await rows(conn, COUNT_TO, (200_000,)) == [(200_000,)]
        assert await rows(conn, COUNT_TO, (200_000,), cut=Cut(60, 100)) == [(200_000,)]


@pytest.fixture
def walked_file(tmp_path: Path) -> Path:
    """Sessions and checkpoints lovia wrote, for every paced walk."""
    path = tmp_path / "walks.db"

    async def write() -> None:
        for n in range(6):
            scripts = [[text(f"answer {n}.{run}")] for run in range(1 + n % 3)]
            await write_session(path, f"s{n}", scripts)
        await write_heads(path, 30, time.time())

    asyncio.run(write())
    return path


async def _walks(path: Path) -> tuple:
    db = await open_database(path, readonly=True)
    try:
        recent = await session_reads.recent_session_ids(db, 4)
        index = {
            sid: counts
            async for part, _ in session_reads.session_index(db)
            for sid, counts in part.items()
        }
        ranges = [r async for r in head_reads.head_ranges(db)]
        assert all(low == high for (low, _), (_, high) in pairwise(ranges))
        span = (ranges[-1][0], ranges[0][1])  # the walk's steps, contiguous
        segments = {}
        for sid, _, _ in await session_reads.recent_session_ids(db, 10):
            listed = await segment_reads.segments(db, sid)
            starts = await segment_reads.flat_starts(db, sid)
            segments[sid] = ([(s.row_id, s.first_index) for s in listed], starts)
        hits = [hit async for hit in substring.search_segments(db, "answer")]
        return recent, index, span, segments, hits
    finally:
        await db.close()


async def test_walks_read_the_same_when_every_step_is_cut(
    walked_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cut at once interrupts every step of more than one row: each walk
    goes on a row a step and reads exactly what it reads uncut."""
    expected = await _walks(walked_file)
    cuts: list[str] = []
    real_paced = pacing.paced

    async def counted(pace, read):
        async def noted(size, cut):
            try:
                return await read(size, cut)
            except StatementCut as exc:
                cuts.append(str(exc))
                raise

        return await real_paced(pace, noted)

    monkeypatch.setattr(pacing, "CUT", 0.0)
    for module in (session_reads, segment_reads, head_reads):
        monkeypatch.setattr(module, "paced", counted)
    *walks, hits = await _walks(walked_file)
    assert walks == list(expected[:-1])
    # The search's ranges were cut too: more, smaller ones, the same hits.
    assert len(hits) > len(expected[-1])
    assert [hit for found, _ in hits for hit in found] == [
        hit for found, _ in expected[-1] for hit in found
    ]
    assert any("snapshot_heads" in sql for sql in cuts)
    assert any("ORDER BY id DESC" in sql for sql in cuts)
    assert any("GROUP BY session_id" in sql for sql in cuts)
    assert any("session_id = ?1 AND id > ?2" in sql for sql in cuts)  # segments
    assert any("session_id = ? AND id > ?" in sql for sql in cuts)  # flat starts


async def test_a_step_of_a_few_rows_is_looked_at_about_every_row() -> None:
    """A few wide rows (segments whose meta lies past their entries) can each
    be a cold read of many pages: the step's clock is looked at as it reads
    them, not only after 100 instructions, more than the whole step's."""
    async with aiosqlite.connect(":memory:") as conn:
        await conn.execute("CREATE TABLE t (x)")
        await conn.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(6)])
        step = cut_for(6)
        assert step is not None
        spent = Cut(0.0, step.every)  # its time is up from the start
        with pytest.raises(StatementCut):
            await rows(conn, "SELECT x FROM t LIMIT 6", (), spent)
        # Looked at every 100 instructions, it ran to its end unlooked at.
        assert len(await rows(conn, "SELECT x FROM t LIMIT 6", (), Cut(0.0, 100))) == 6
