"""Which checkpoints were saved or deleted since the last look, in bounded memory.

lovia saves a head with ``INSERT OR REPLACE``: the row gets the next rowid
above every other, so the saves since a look are the rowids above the top
one seen. Only deleting the top rows lets SQLite hand their rowids out again;
such a save lands at or below the top, and is found by comparing the newest
heads remembered with what is stored now. A worker fleet's file holds a
million heads: they are counted, not held (a dict of every run id took
152 MB), and deletions are reported as a fact, not by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from lovia_tui.core.live import tail_queries
from lovia_tui.core.live.changes import HeadChange
from lovia_tui.core.run_status import status_text
from lovia_tui.core.store.database import Database
from lovia_tui.core.stored import stored_key, stored_time

RECENT_HEADS = 1_000
"""Newest heads remembered: a save reusing a deleted head's rowid is listed
as long as one of them survives; past that the view reloads everything."""


@dataclass(frozen=True)
class HeadsSeen:
    """One look's result: the saves (latest per run, in save order), whether
    heads were deleted, and whether the saves could not all be listed."""

    saved: tuple[HeadChange, ...] = ()
    removed: bool = False
    unlisted: bool = False


class HeadWindow:
    """The number of heads and the newest :data:`RECENT_HEADS` of them."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.count = 0
        self.recent: dict[int, tuple[str, float]] = {}
        """rowid → (run id, updated_at), rowids ascending."""

    async def start(self) -> None:
        """Remember the heads stored now: the next look reports what follows."""
        self.count, last_rowid, _ = await tail_queries.head_totals(self.db, 0)
        await self._remember_newest(last_rowid)

    @property
    def top(self) -> int:
        return next(reversed(self.recent), 0)

    async def look(self) -> HeadsSeen:
        top, known = self.top, {run_id for run_id, _ in self.recent.values()}
        count, last_rowid, at_top, rows = await tail_queries.heads_since(self.db, top)
        old_top = self.recent.get(top)
        resaved = old_top is not None and any(row[1] == old_top[0] for row in rows)
        if at_top != (None if resaved else old_top):
            # The top head was deleted and its rowid given to a later save:
            # the saves at or below it are those that differ from memory.
            missed = await self._reused_rows(top)
            if missed is None:
                await self.start()
                return HeadsSeen(unlisted=True)
            rows = missed + rows
        # A run saved that memory did not hold is new, or older than memory:
        # a count below what new runs would make means some were deleted
        # (a false alarm at worst, and saves re-read the runs anyway).
        new_runs = len({row[1] for row in rows} - known)
        removed = count < self.count + new_runs
        self.count = count
        if removed:
            await self._remember_newest(
                last_rowid
            )  # deleted rows must not pass for survivors
        else:
            self._remember(rows)
        saved = {row[1]: _head_change(row) for row in rows}
        return HeadsSeen(tuple(saved.values()), removed)

    async def _reused_rows(self, top: int) -> list | None:
        """The heads stored at or below ``top`` that memory does not hold,
        memory then set to what is stored there; None when memory cannot
        tell (every head it held is gone, and older ones exist below it)."""
        holds_all = len(self.recent) >= self.count
        low = 0 if holds_all else next(iter(self.recent))
        rows = await tail_queries.heads_between(self.db, low - 1, top)
        missed = [row for row in rows if self.recent.get(row[0]) != (row[1], row[3])]
        if len(missed) == len(rows) and not holds_all:
            return None
        self.recent = {row[0]: (row[1], row[3]) for row in rows}
        return missed

    def _remember(self, rows: list) -> None:
        by_run = {run_id: rowid for rowid, (run_id, _) in self.recent.items()}
        for rowid, run_id, _, updated_at in rows:
            if (old := by_run.pop(run_id, None)) is not None:
                self.recent.pop(old, None)
            self.recent[rowid] = (run_id, updated_at)
            by_run[run_id] = rowid
        self.recent = dict(sorted(self.recent.items())[-RECENT_HEADS:])

    async def _remember_newest(self, upto_rowid: int) -> None:
        rows = await tail_queries.newest_heads(self.db, RECENT_HEADS, upto_rowid)
        self.recent = {rowid: (run_id, saved) for rowid, run_id, saved in rows}


def _head_change(row: tuple[int, object, object, object]) -> HeadChange:
    _, run_id, status, updated_at = row
    return HeadChange(stored_key(run_id), status_text(status), stored_time(updated_at))
