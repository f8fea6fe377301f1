"""A checkpoint file's runs in list order, at any number of checkpoints.

A worker fleet's file holds one head per run, a million of them, walked in
save order (:mod:`~lovia_tui.core.store.head_reads`). One pass over those ranges learns
which runs are unfinished (kept: a few thousand) and how many completed ones
each range holds (a number per range), so any position in the list maps to a
row with one short statement, and memory grows with the unfinished runs, not
with the checkpoints.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from lovia_tui.core.run_status import (
    OTHER,
    UNREADABLE,
    RunStatus,
    effective_status,
    status_group,
    status_text,
)
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.head_reads import (
    NEWEST,
    head_ranges,
    status_rows,
    web_settled_sql,
)
from lovia_tui.core.stored import stored_key, stored_time

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
    OTHER,
    UNREADABLE,
)
"""The list's first group, in the order the counts are shown."""


@dataclass(frozen=True, slots=True)
class Mark:
    """An unfinished (or unreadable) checkpoint found by the walk."""

    rowid: int
    run_id: str
    status: str
    updated_at: float | None
    web_settled: bool = False
    """lovia web recorded the run as over (see ``WEB_SETTLED_SQL``)."""

    def label(self, now: float, stale_after: float) -> str:
        return effective_status(
            self.status, self.updated_at, self.web_settled, now, stale_after
        )


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
                    stored_key(run_id),
                    status_text(status),
                    stored_time(when),
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
            saved = mark.updated_at
            if (
                mark.status == RunStatus.RUNNING
                and not mark.web_settled
                and saved is not None
            ):
                bisect.insort(self._running_saved, saved)
            else:
                # Time-independent here (a save time that does not read never ages).
                group = status_group(mark.label(0.0, 0.0))
                self._settled[group] = self._settled.get(group, 0) + 1

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
