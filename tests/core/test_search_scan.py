"""The scan of unindexed rows reads a bounded id range per statement, whatever
share of the rows its filter keeps (issue-20: a rare word made one statement
read the whole file)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from lovia import SQLiteSession
from support.lovia_factory import append_entries

from lovia_tui.core.search.build import MAX_ROWS, ChunkReader
from lovia_tui.core.search.file_search import FileSearch
from lovia_tui.core.search.query import parse_query


def _file(path: Path, rng: random.Random) -> set[str]:
    """Sessions of small segments, the rare word in about 40% of them and s11."""
    SQLiteSession(path, wal=True)
    rare = set()
    for n in range(12):
        asyncio.run(append_entries(path, f"s{n}", rng.randrange(20, 60)))
        if rng.random() < 0.4:
            rare.add(f"s{n}")
            asyncio.run(append_entries(path, f"s{n}", 1, prefix="zyzzyva"))
    rare.add("s11")
    asyncio.run(append_entries(path, "s11", 1, prefix="zyzzyva"))
    return rare


def _record(monkeypatch, after_each=lambda: None) -> list[tuple[int, int]]:
    """The id ranges of the scan's statements, ``after_each`` run after each."""
    ranges: list[tuple[int, int]] = []
    read_range = ChunkReader.read_range

    def recorded(self, sql, after, params, most):
        rows, ceiling = read_range(self, sql, after, params, most)
        ranges.append((after, ceiling))
        after_each()
        return rows, ceiling

    monkeypatch.setattr(ChunkReader, "read_range", recorded)
    return ranges


def _seed() -> random.Random:
    seed = random.randrange(1 << 30)
    print("seed", seed)
    return random.Random(seed)


def test_a_rare_word_is_found_in_bounded_statements(scratch: Path, monkeypatch):
    path = scratch / "f.db"
    rare = _file(path, _seed())
    ranges = _record(monkeypatch)
    search = FileSearch(path)  # never built: every row is scanned
    try:
        result = search.search(parse_query("zyzzyva"), limit=1000)
        assert {group.session_id for group in result.groups} == rare
        top = search.reader.execute("SELECT max(id) FROM session_runs").fetchone()[0]
    finally:
        search.close()
    assert len(ranges) > 1 and ranges[0][0] == 0 and ranges[-1][1] >= top
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert all(0 < ceiling - after <= MAX_ROWS for after, ceiling in ranges)


def test_rows_a_build_indexes_during_the_scan_are_not_read_twice(
    scratch: Path, monkeypatch
):
    path = scratch / "f.db"
    rare = _file(path, _seed())
    builder = FileSearch(path)
    built: list[int] = []

    def build_once() -> None:
        if not built:
            built.append(builder.build().indexed)

    ranges = _record(monkeypatch, build_once)
    search = FileSearch(path)
    try:
        result = search.search(parse_query("zyzzyva"), limit=1000)
        top = search.reader.execute("SELECT max(id) FROM session_runs").fetchone()[0]
    finally:
        search.close()
        builder.close()
    # Counted once each (the scan's hit of a row the build indexed is dropped)
    # and the rows above the first statement left to the index.
    assert {group.session_id: group.hits for group in result.groups} == dict.fromkeys(
        rare, 1
    )
    assert built == [top] and len(ranges) == 1 and ranges[0][1] < top


def test_the_sessions_a_scan_finds_are_told_before_it_ends(scratch: Path, monkeypatch):
    """With no index yet, the scan of the whole file took seconds at 1M
    before the first hit showed: each session it finds is told as it is
    found (the first at once), every one among the final answer's."""
    from lovia_tui.core.search import workspace as search_workspace
    from lovia_tui.core.store.workspace import Workspace

    path = scratch / "f.db"
    SQLiteSession(path, wal=True)
    asyncio.run(append_entries(path, "first", 1, prefix="zyzzyva"))  # the oldest row
    rare = _file(path, _seed()) | {"first"}
    ranges = _record(monkeypatch)
    monkeypatch.setattr(search_workspace, "SO_FAR_EVERY", 0)
    told: list[tuple[int, list]] = []

    async def run():
        ws = await Workspace.open([path])
        try:
            search = search_workspace.WorkspaceSearch(ws)
            return await search.search(
                "zyzzyva", so_far=lambda keys: told.append((len(ranges), keys))
            )
        finally:
            await ws.close()

    found = asyncio.run(run())
    assert {session for _, session in found.keys} == rare
    assert told[0][0] == 1 < len(ranges)  # in the first statement, not the last
    assert [len(keys) for _, keys in told] == list(range(1, len(rare) + 1))
    assert set(told[-1][1]) == set(found.keys)
    assert all(keys == told[-1][1][: len(keys)] for _, keys in told)
