"""A checkpoint file's runs in list order, at any number of checkpoints.

A worker fleet's file holds one head per run, a million of them. lovia saves
a head with ``INSERT OR REPLACE``, which gives every save the next rowid: the
table's own rowid order is save order, so "most recently saved first" is a
walk of its primary key backwards, in ranges of ``RANGE`` heads (no index on
``updated_at`` is needed, none is created). One pass over those ranges learns
which runs are unfinished (kept: a few thousand) and how many completed ones
each range holds (a number per range), so any position in the list maps to a
row with one short statement, and memory grows with the unfinished runs, not
with the checkpoints.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from lovia_tui.core.entries import UnreadableError, dangling_calls, parse_entries
from lovia_tui.core.models import DanglingCall, RunInfo
from lovia_tui.core.run_status import (
    UNREADABLE,
    WEB_SETTLED,
    RunStatus,
    effective_status,
)
from lovia_tui.core.store.checkpoint_reads import RUN_COLUMNS, run_info
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.web_reads import with_web_records

RANGE = 5_000
"""Heads per statement of a walk: ~6-10 ms warm on this kind of machine."""
DETAIL_CHUNK = 200
"""Heads whose full rows one statement reads (their entries are counted):
500 took up to 46 ms on a busy machine."""
NO_ROWID_ABOVE = 1 << 62
STATUS = "json_extract(head_json, '$.status')"
SAFE_STATUS = (
    f"CASE WHEN typeof(head_json) = 'text' AND json_valid(head_json) THEN {STATUS} END"
)
"""The head's status, NULL for a head that is not JSON (shown as unreadable)."""
NEWEST = "updated_at DESC, rowid DESC"
"""Order inside a range: saves by processes racing each other can commit out of
their timestamps' order; within a range the stored time decides."""
UNFINISHED = (
    *(
        status.value
        for status in (
            RunStatus.RUNNING,
            RunStatus.STALE,
            RunStatus.INTERRUPTED,
            RunStatus.FAILED,
        )
    ),
    UNREADABLE,
)
"""The list's first group, in the order the counts are shown."""
WEB_SETTLED_SQL = "run_id IN (SELECT id FROM chat_runs WHERE status IN ({}))".format(
    ",".join(f"'{status}'" for status in sorted(WEB_SETTLED))
)
"""True for a head whose lovia web record says its run is over (issue 18): a
running head then is dead, however recent its last save."""


def web_settled_sql(db: Database) -> str:
    """``WEB_SETTLED_SQL`` where the file has lovia web's tables, else false."""
    return WEB_SETTLED_SQL if db.stores.chat else "0"


@dataclass(frozen=True, slots=True)
class Mark:
    """An unfinished (or unreadable) checkpoint found by the walk."""

    rowid: int
    run_id: str
    status: str
    updated_at: float
    web_settled: bool = False
    """lovia web recorded the run as over (see ``WEB_SETTLED_SQL``)."""

    def label(self, now: float, stale_after: float) -> str:
        return effective_status(
            self.status, self.updated_at, self.web_settled, now, stale_after
        )


async def head_ranges(
    db: Database, step: int | None = None
) -> AsyncIterator[tuple[int, int]]:
    """``[low, high)`` rowid ranges of ``step`` (else ``RANGE``) heads each, newest first."""
    step = step or RANGE
    high = NO_ROWID_ABOVE
    while True:
        row = await db.fetchone(
            "SELECT rowid FROM snapshot_heads WHERE rowid < ? "
            "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (high, step - 1),
        )
        if row is None:
            last = await db.fetchone(
                "SELECT MIN(rowid) FROM snapshot_heads WHERE rowid < ?", (high,)
            )
            if last is not None and last[0] is not None:
                yield last[0], high
            return
        yield row[0], high
        high = row[0]


async def status_rows(db: Database, sql: str, params: tuple[Any, ...]) -> list[Any]:
    """Run ``sql`` with the head status in place of ``{status}``; a head that is not
    JSON makes the fast form fail, and then that range is read with the safe one."""
    try:
        return await db.fetchall(sql.format(status=STATUS), params)
    except sqlite3.OperationalError as exc:
        if "JSON" not in str(exc):
            raise
        return await db.fetchall(sql.format(status=SAFE_STATUS), params)


@dataclass
class RunOrder:
    """One file's checkpoints: unfinished ones (newest first), then completed ones.

    ``ranges`` are the walk's rowid ranges, newest first, each with how many
    completed heads it holds; the n-th completed run is found in its range.
    """

    db: Database
    unfinished: list[Mark] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """How many completed runs come before each range (a prefix sum)."""
    completed: int = 0
    done: bool = False
    _settled: dict[str, int] = field(default_factory=dict)
    """Unfinished runs per status that time does not change (all but running)."""
    _running_saved: list[float] = field(default_factory=list)
    """When each running head was saved, sorted: time turns them stale."""

    async def walk(self) -> AsyncIterator[RunOrder]:
        """Fill the order range by range, yielding itself after each one."""
        if not self.db.stores.checkpoint:
            self.done = True
            yield self
            return
        async for low, high in head_ranges(self.db):
            rows = await status_rows(
                self.db,
                "SELECT rowid, run_id, s, updated_at, w FROM (SELECT rowid, run_id, "
                "{status} AS s, "
                f"updated_at, {web_settled_sql(self.db)} AS w FROM snapshot_heads "
                "WHERE rowid >= ? AND rowid < ?) "
                "WHERE s IS NOT 'completed' ORDER BY rowid DESC",
                (low, high),
            )
            total = await self.db.fetchrow(
                "SELECT COUNT(*) FROM snapshot_heads WHERE rowid >= ? AND rowid < ?",
                (low, high),
            )
            marks = [
                Mark(
                    rowid,
                    run_id,
                    status if isinstance(status, str) else UNREADABLE,
                    when,
                    bool(settled),
                )
                for rowid, run_id, status, when, settled in rows
            ]
            self.unfinished.extend(marks)
            self._count(marks)
            self.ranges.append((low, high))
            self.starts.append(self.completed)
            self.completed += total[0] - len(rows)
            yield self
        self.done = True
        yield self

    def _count(self, marks: list[Mark]) -> None:
        for mark in marks:
            if mark.status == RunStatus.RUNNING and not mark.web_settled:
                bisect.insort(self._running_saved, mark.updated_at)
            else:
                label = mark.label(0.0, 0.0)  # time-independent here
                self._settled[label] = self._settled.get(label, 0) + 1

    def counts(self, now: float, stale_after: float) -> dict[str, int]:
        """Checkpoints per status (running and stale apart), as far as walked.

        Counted as the walk goes; only the running heads' staleness is
        answered per call, by one bisection (this runs on every tick of the
        clock, with 20,000 unfinished heads in a fleet's file).
        """
        found = dict.fromkeys(UNFINISHED, 0)
        found.update(self._settled)
        # head_is_stale's rule: saved at least stale_after seconds ago.
        stale = bisect.bisect_right(self._running_saved, now - stale_after)
        found[RunStatus.STALE.value] += stale
        found[RunStatus.RUNNING.value] += len(self._running_saved) - stale
        found[RunStatus.COMPLETED.value] = self.completed
        return found

    async def completed_rowids(self, start: int, count: int) -> list[int]:
        """Rowids of the completed runs at positions ``start`` .. ``start + count``."""
        found: list[int] = []
        where = max(0, bisect.bisect_right(self.starts, start) - 1)
        while len(found) < count and where < len(self.ranges):
            low, high = self.ranges[where]
            skip = max(0, start + len(found) - self.starts[where])
            rows = await status_rows(
                self.db,
                "SELECT rowid FROM snapshot_heads WHERE rowid >= ? AND rowid < ? "
                f"AND {{status}} IS 'completed' ORDER BY {NEWEST} LIMIT ? OFFSET ?",
                (low, high, count - len(found), skip),
            )
            found.extend(row[0] for row in rows)
            where += 1
        return found


async def runs_at(db: Database, rowids: list[int]) -> dict[int, RunInfo]:
    """The checkpoints stored at ``rowids``, by rowid in that order (a row saved
    again since, or deleted, is missing: its new row is elsewhere in the list)."""
    found: dict[int, RunInfo] = {}
    for start in range(0, len(rowids), DETAIL_CHUNK):
        chunk = rowids[start : start + DETAIL_CHUNK]
        rows = await db.fetchall(
            f"SELECT h.rowid, {RUN_COLUMNS} FROM snapshot_heads h "
            f"WHERE h.rowid IN ({','.join('?' * len(chunk))})",
            tuple(chunk),
        )
        read = [(row[0], run_info(db, row[1:])) for row in rows]
        # lovia web's record of each, which says whether a running head is live.
        settled = await with_web_records(db, [run for _, run in read])
        found.update(zip((rowid for rowid, _ in read), settled, strict=True))
    return {rowid: found[rowid] for rowid in rowids if rowid in found}


@dataclass(frozen=True)
class RunFilter:
    """What ``runs --status/--since`` ask for, answered in SQL range by range.

    ``status`` is a head status, or "stale" (running with no save since
    ``now - stale_after``); ``since`` keeps heads saved at or after it.
    """

    status: str | None = None
    since: float | None = None
    now: float = 0.0
    stale_after: float = 0.0

    def sql(self, db: Database) -> tuple[str, tuple[Any, ...]]:
        where: list[str] = []
        params: list[Any] = []
        if self.status == RunStatus.STALE:
            where.append(
                f"{{status}} IS 'running' AND (updated_at <= ? OR {web_settled_sql(db)})"
            )
            params.append(self.now - self.stale_after)
        elif self.status is not None:
            where.append("{status} IS ?")
            params.append(self.status)
        if self.since is not None:
            where.append("updated_at >= ?")
            params.append(self.since)
        return "".join(f" AND {w}" for w in where), tuple(params)


async def stream_runs(
    db: Database, wanted: RunFilter = RunFilter(), limit: int | None = None
) -> AsyncIterator[list[RunInfo]]:
    """The first ``limit`` checkpoints matching ``wanted``, most recently saved
    first, one head range at a time: what is held is one range's matches, at
    any file size."""
    if not db.stores.checkpoint:
        return
    where, params = wanted.sql(db)
    left = NO_ROWID_ABOVE if limit is None else limit
    async for low, high in head_ranges(db):
        if left <= 0:
            return
        rows = await status_rows(
            db,
            "SELECT rowid FROM snapshot_heads WHERE rowid >= ? AND rowid < ?"
            f"{where} ORDER BY {NEWEST} LIMIT ?",
            (low, high, *params, left),
        )
        if rows:
            left -= len(rows)
            yield list((await runs_at(db, [row[0] for row in rows])).values())


async def dangling_by_run(
    db: Database, run_ids: list[str]
) -> dict[str, list[DanglingCall]]:
    """Each run's dangling tool calls, ``DETAIL_CHUNK`` runs a statement (one
    statement per run was most of ``runs --json``'s time); batches that do not
    parse are left out, as :func:`~lovia_tui.core.store.checkpoint_reads.snapshot_entries` reports them."""
    found: dict[str, list[DanglingCall]] = {}
    for start in range(0, len(run_ids), DETAIL_CHUNK):
        chunk = run_ids[start : start + DETAIL_CHUNK]
        entries: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in chunk}
        rows = await db.fetchall(
            "SELECT run_id, entries_json FROM snapshot_turns "
            f"WHERE run_id IN ({','.join('?' * len(chunk))}) ORDER BY run_id, seq",
            tuple(chunk),
        )
        for run_id, text in rows:
            try:
                entries[run_id].extend(parse_entries(text))
            except UnreadableError:
                continue
        found.update((run_id, dangling_calls(data)) for run_id, data in entries.items())
    return found
