"""Heads in save order, a range of rowids at a time, at any number of checkpoints.

A worker fleet's file holds one head per run, a million of them. lovia saves
a head with ``INSERT OR REPLACE``, which gives every save the next rowid: the
table's own rowid order is save order, so "most recently saved first" is a
walk of its primary key backwards, in ranges of up to ``RANGE`` heads (no index on
``updated_at`` is needed, none is created); statuses are answered in SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from lovia_tui.core.entries import UnreadableError, dangling_calls, parse_entries
from lovia_tui.core.models import DanglingCall, RunInfo
from lovia_tui.core.run_status import LIST_ORDER, WEB_SETTLED, RunStatus
from lovia_tui.core.store.checkpoint_reads import RUN_COLUMNS, RUNS_CHUNK, run_info
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.pace import Cut, Pace, paced
from lovia_tui.core.store.web_reads import with_web_records
from lovia_tui.core.stored import stored_key

RANGE = 5_000
"""Most heads per range of a walk: ~6-10 ms warm on this kind of machine."""
NO_ROWID_ABOVE = 1 << 62
STATUS = "json_extract(head_json, '$.status')"
SAFE_STATUS = (
    f"CASE WHEN typeof(head_json) = 'text' AND json_valid(head_json) THEN {STATUS} END"
)
"""The head's status, NULL for a head that is not JSON (shown as unreadable)."""
NEWEST = "updated_at DESC, rowid DESC"
"""Order inside a range: saves by processes racing each other can commit out of
their timestamps' order; within a range the stored time decides."""
WEB_SETTLED_SQL = "run_id IN (SELECT id FROM chat_runs WHERE status IN ({}))".format(
    ",".join(f"'{status}'" for status in sorted(WEB_SETTLED))
)
"""True for a head whose lovia web record says its run is over (issue 18): a
running head then is dead, however recent its last save."""


def web_settled_sql(db: Database) -> str:
    """``WEB_SETTLED_SQL`` where the file has lovia web's tables, else false."""
    return WEB_SETTLED_SQL if db.stores.chat else "0"


async def head_ranges(db: Database) -> AsyncIterator[tuple[int, int]]:
    """``[low, high)`` rowid ranges of at most ``RANGE`` heads each, newest
    first: as many as a step reads in :data:`~lovia_tui.core.store.pace.TARGET`
    (the step to the next range walks its heads' pages, the first read of
    them: 5,000 heads took 388 ms on a cold page cache)."""
    pace = Pace(RANGE)
    high = NO_ROWID_ABOVE
    while True:
        row = await paced(pace, partial(_heads_back, db, high))
        if row is None:
            last = await db.fetchone(
                "SELECT MIN(rowid) FROM snapshot_heads WHERE rowid < ?", (high,)
            )
            if last is not None and last[0] is not None:
                yield last[0], high
            return
        pace.took(pace.size)  # the step walked that many heads
        yield row[0], high
        high = row[0]


async def _heads_back(
    db: Database, high: int, heads: int, cut: Cut | None
) -> Any | None:
    """The rowid ``heads`` heads below ``high``, if there are that many."""
    return await db.fetchone(
        "SELECT rowid FROM snapshot_heads WHERE rowid < ? "
        "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (high, heads - 1),
        cut=cut,
    )


async def status_rows(db: Database, sql: str, params: tuple[Any, ...]) -> list[Any]:
    """Run ``sql`` with the head status in place of ``{status}``; a head that is not
    JSON makes the fast form fail, and then that range is read with the safe one."""
    try:
        return await db.fetchall(sql.format(status=STATUS), params)
    except sqlite3.OperationalError as exc:
        if "JSON" not in str(exc):
            raise
        return await db.fetchall(sql.format(status=SAFE_STATUS), params)


async def runs_at(db: Database, rowids: list[int]) -> dict[int, RunInfo]:
    """The checkpoints stored at ``rowids``, by rowid in that order (a row saved
    again since, or deleted, is missing: its new row is elsewhere in the list)."""
    found: dict[int, RunInfo] = {}
    for start in range(0, len(rowids), RUNS_CHUNK):
        chunk = rowids[start : start + RUNS_CHUNK]
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
    ``now - stale_after``); ``since`` keeps heads saved at or after it;
    ``rank``, one group of :data:`~lovia_tui.core.run_status.LIST_ORDER`.
    """

    status: str | None = None
    since: float | None = None
    now: float = 0.0
    stale_after: float = 0.0
    rank: int | None = None

    def sql(self, db: Database) -> tuple[str, tuple[Any, ...]]:
        where: list[str] = []
        params: list[Any] = []
        if self.rank is not None and (named := LIST_ORDER[self.rank]) is not None:
            where.append("{status} IS ?")
            params.append(named)
        elif self.rank is not None:  # any status the list does not name
            named_ones = [status for status in LIST_ORDER if status is not None]
            where.append(
                f"({{status}} IS NULL OR {{status}} NOT IN ({','.join('?' * len(named_ones))}))"
            )
            params.extend(named_ones)
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
    """Each run's dangling tool calls, ``RUNS_CHUNK`` runs a statement (one
    statement per run was most of ``runs --json``'s time); batches that do not
    parse are left out, as :func:`~lovia_tui.core.store.checkpoint_reads.snapshot_entries` reports them."""
    found: dict[str, list[DanglingCall]] = {}
    for start in range(0, len(run_ids), RUNS_CHUNK):
        chunk = run_ids[start : start + RUNS_CHUNK]
        entries: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in chunk}
        rows = await db.fetchall(
            "SELECT run_id, entries_json FROM snapshot_turns "
            f"WHERE run_id IN ({','.join('?' * len(chunk))}) ORDER BY run_id, seq",
            tuple(chunk),
        )
        for run_id, text in rows:
            try:
                entries[stored_key(run_id)].extend(parse_entries(text))
            except UnreadableError:
                continue
        found.update((run_id, dangling_calls(data)) for run_id, data in entries.items())
    return found
