"""The runs of a checkpoint file in list order, by rowid ranges (core/runs/index.py)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import pytest
from lovia.testing import text
from support.lovia_factory import write_heads, write_session

from lovia_tui.cli import main
from lovia_tui.core.runs import index as run_index
from lovia_tui.core.runs.index import RunOrder
from lovia_tui.core.runs.listing import RunList
from lovia_tui.core.store import head_reads
from lovia_tui.core.store.database import open_database
from lovia_tui.core.store.head_reads import RunFilter
from lovia_tui.core.store.workspace import Workspace


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """40 heads written by lovia; walks of 7 heads a range, so ranges matter."""
    monkeypatch.setattr(head_reads, "RANGE", 7)
    now = time.time()
    path = tmp_path / "runs.db"
    written = asyncio.run(write_heads(path, 40, now))
    return path, written, now


async def _walked(path: Path) -> RunOrder:
    db = await open_database(path, readonly=True)
    order = RunOrder(db)
    async for _ in order.walk():
        pass
    return order


async def test_unfinished_first_newest_first_then_each_completed_position(fleet):
    path, written, now = fleet
    order = await _walked(path)
    try:
        newest = list(reversed(written))
        unfinished = [w for w in newest if w[1] != "completed"]
        completed = [w[0] for w in newest if w[1] == "completed"]
        assert [m.status for m in order.unfinished] == [w[1] for w in unfinished]
        assert order.done and order.completed == len(completed)
        assert len(order.ranges) == 6  # 40 heads, 7 a range
        # Every window of the completed runs maps to the right rows.
        for start in range(len(completed)):
            for count in (1, 3, 10):
                rowids = await order.completed_rowids(start, count)
                runs = await head_reads.runs_at(order.db, rowids)
                assert [r.run_id for r in runs.values()] == completed[
                    start : start + count
                ]
        counts = order.counts(now, stale_after=300)
        assert counts["stale"] == sum(w[1] == "running" for w in written)
        assert counts["running"] == 0
        assert counts["completed"] == len(completed)
    finally:
        await order.db.close()


async def test_counts_follow_the_clock_as_each_mark_s_label_does(fleet):
    """The counts are kept as the walk goes, the running heads' staleness
    answered by bisection: they agree with every mark's own label at any time."""
    path, written, now = fleet
    order = await _walked(path)
    try:
        saved = sorted({w[2] for w in written})
        for moment in [now, *(t + offset for t in saved for offset in (299, 301))]:
            for stale_after in (1, 300, 5_000):
                expected = dict.fromkeys(run_index.UNFINISHED, 0)
                for mark in order.unfinished:
                    expected[mark.label(moment, stale_after)] += 1
                expected["completed"] = order.completed
                assert order.counts(moment, stale_after) == expected
    finally:
        await order.db.close()


async def test_a_head_that_is_not_json_is_listed_unreadable(fleet):
    path, written, _ = fleet
    with sqlite3.connect(path) as conn:  # a hostile row, as no lovia writes it
        conn.execute(
            "UPDATE snapshot_heads SET head_json = '{not json' WHERE run_id = 'run-001'"
        )
    conn.close()
    order = await _walked(path)
    try:
        assert [m.status for m in order.unfinished].count("unreadable") == 1
        assert order.completed == sum(w[1] == "completed" for w in written) - 1
        rowids = await order.completed_rowids(0, 100)
        assert len(rowids) == order.completed
    finally:
        await order.db.close()


@pytest.mark.parametrize(
    ("status", "since", "limit"),
    [(None, None, None), ("completed", None, 4), ("stale", None, None),
     ("failed", None, None), (None, 2_000.0, None), ("interrupted", 5_000.0, 1)],
)  # fmt: skip
async def test_stream_filters_in_sql(fleet, status, since, limit):
    path, written, now = fleet
    wanted = RunFilter(
        status, None if since is None else now - since, now, stale_after=300
    )
    db = await open_database(path, readonly=True)
    try:
        got = [
            run.run_id
            async for batch in head_reads.stream_runs(db, wanted, limit)
            for run in batch
        ]
    finally:
        await db.close()
    expected = [
        run_id
        for run_id, s, updated in reversed(written)
        if (status is None or s == ("running" if status == "stale" else status))
        and (since is None or updated >= now - since)
    ][:limit]
    assert got == expected


def test_runs_json_streams_the_same_object_and_jsonl_one_per_line(
    fleet, capsys: pytest.CaptureFixture[str]
):
    path, written, _ = fleet
    assert main(["runs", str(path), "--json", "--readonly"]) == 0
    text = capsys.readouterr().out
    records = json.loads(text)["runs"]
    assert text == json.dumps({"runs": records}, indent=2) + "\n"
    # The Runs pane's order: by status (running first), newest first in each.
    groups = ["running", "interrupted", "failed", "completed"]
    in_order = sorted(reversed(written), key=lambda w: groups.index(w[1]))
    assert [r["run_id"] for r in records] == [w[0] for w in in_order]
    assert main(["runs", str(path), "--jsonl", "--limit", "3", "--readonly"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {**r, "age_s": json.loads(line)["age_s"]}
        for r, line in zip(records[:3], lines, strict=True)
    ]
    assert main(["runs", str(path), "--json", "--since", "1s", "--readonly"]) == 0
    assert capsys.readouterr().out == '{\n  "runs": []\n}\n'
    dangling = [r for r in records if r["dangling"]]
    assert {r["status"] for r in dangling} == {"running", "interrupted", "failed"}


def test_since_takes_an_age_or_a_date(capsys: pytest.CaptureFixture[str]):
    from lovia_tui.cli.option_types import since_time

    now = time.time()
    assert abs(since_time("2h") - (now - 7_200)) < 5
    assert abs(since_time("90") - (now - 90)) < 5
    assert since_time("2026-01-02T00:00:00+00:00") == 1767312000.0
    assert main(["runs", "x.db", "--since", "yesterday"]) == 2
    assert "neither an age" in capsys.readouterr().err


async def test_first_rows_come_before_their_sessions_are_looked_up(tmp_path):
    """The first frame's rows do not wait for the links (a walk of lovia's whole
    session index): their runs are "being linked", then linked by a read."""
    path = tmp_path / "both.db"
    await write_session(path, "s1", [[text("Done.")]], checkpoint_path=path)
    workspace = await Workspace.open([path], readonly=True)
    try:
        runs = RunList(workspace.checkpoint_dbs, workspace.links, 300)
        await runs.first_rows(10)
        [run] = runs.known()
        assert run.run_id in runs.linking and run.run_id not in runs.links
        assert await runs.read(0, 10)
        assert runs.links[run.run_id].session_id == "s1" and not runs.linking
        assert not await runs.read(0, 10)  # nothing left to read or link
    finally:
        await workspace.close()


def test_runs_lists_in_the_runs_panes_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`lovia-tui runs` and the Runs pane list the same runs in the same order
    (LIST_ORDER): running heads first, then interrupted, failed, any other
    status, each newest first across the files; completed last, file by file.
    The CLI listed everything newest first, crashed runs among completed ones."""
    monkeypatch.setattr(head_reads, "RANGE", 7)
    now = time.time()
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    asyncio.run(write_heads(first, 30, now))
    asyncio.run(write_heads(second, 20, now - 150))  # saves interleave a.db's
    bogus = sqlite3.connect(second)
    with bogus:
        bogus.execute(
            "UPDATE snapshot_heads SET head_json = json_set(head_json, '$.status', "
            "'paused') WHERE run_id = 'run-005'"
        )
    bogus.close()

    async def pane_order() -> list[tuple[str, str]]:
        workspace = await Workspace.open([first, second], readonly=True)
        try:
            runs = RunList(workspace.checkpoint_dbs, workspace.links, 300)
            async for _ in runs.walk():
                pass
            await runs.read(0, len(runs))
            return [
                (str(run.file), run.run_id) for run in map(runs.at, range(len(runs)))
            ]
        finally:
            await workspace.close()

    def cli_order(*options: str) -> list[tuple[str, str]]:
        assert main(["runs", str(first), str(second), "--json", *options]) == 0
        records = json.loads(capsys.readouterr().out)["runs"]
        return [(record["file"], record["run_id"]) for record in records]

    in_pane = asyncio.run(pane_order())
    assert len(in_pane) == 50 and in_pane[0][1] != in_pane[1][1]
    statuses = [
        json.loads(head)["status"]
        for file, run_id in in_pane
        for (head,) in sqlite3.connect(file).execute(
            "SELECT head_json FROM snapshot_heads WHERE run_id = ?", (run_id,)
        )
    ]
    groups = ["running", "interrupted", "failed", "paused", "completed"]
    assert statuses == sorted(statuses, key=groups.index), statuses
    assert cli_order() == in_pane
    assert cli_order("--limit", "7") == in_pane[:7]
    failed = [
        key for key, status in zip(in_pane, statuses, strict=True) if status == "failed"
    ]
    assert cli_order("--status", "failed") == failed
