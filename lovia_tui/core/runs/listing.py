"""The runs pane's rows: every open checkpoint file's runs, read a page at a time.

The order is :data:`~lovia_tui.core.run_status.LIST_ORDER`, which ``lovia-tui
runs`` follows too: unfinished runs first (running, live or crashed, then
interrupted, failed and unreadable ones), each group most recently saved first
across the files; then the completed ones, most recently saved first, file by
file. A run going stale keeps its row, so the same keys reach the same run.
What is held in full is the
unfinished runs linked to a session and the web UI's linked ones (the badges
and seams need them); any other run is read when its row is on screen, and
let go of when the cache fills.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from lovia_tui.core.errors import DamagedError
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import ALL_RUNS, UNREADABLE, RunStatus, list_rank
from lovia_tui.core.runs.index import UNFINISHED, Mark, RunOrder
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.head_reads import SAFE_STATUS, runs_at, status_rows
from lovia_tui.core.stored import time_order

PAGE_CACHE = 5_000
"""Completed runs (and their positions) kept read, a few hundred screens;
beyond it the cache is emptied: memory stays bounded however far one scrolls."""
WEB_CHUNK = 5_000
"""``chat_runs`` rows per statement when looking for web-linked checkpoints."""

Links = Callable[[Iterable[str]], Any]
"""``Workspace.links``: the session of each run id, strongest evidence first."""


class RunList:
    """Positions → runs for the runs pane, under a status filter."""

    def __init__(self, databases: list[Database], links: Links, stale_after: float):
        self.orders = [RunOrder(db) for db in databases if db.stores.checkpoint]
        self._links_of = links
        self.stale_after = stale_after
        self.status = ALL_RUNS
        self.links: dict[str, SessionLink] = {}
        self.linking: set[str] = set()
        """Runs read whose session is not looked up yet (shown as such, not
        as unlinked): a first frame does not wait for the lookup, a walk of
        lovia's whole (session_id, run_id) index (0.47 s at 1M segments)."""
        self.pinned: dict[tuple[Path, int], RunInfo] = {}
        """Unfinished runs linked to a session and web-linked ones, read in
        full once walked (see :meth:`_read_pinned`)."""
        self._pages: dict[tuple[Path, int], RunInfo] = {}
        self._rowid_at: dict[tuple[int, int], int] = {}
        """(order, completed position) → rowid, for positions read so far."""
        self._marks: list[tuple[Mark, RunOrder]] = []
        self._rows: list[tuple[Mark, RunOrder]] = []

    # ----- walking -----

    @property
    def done(self) -> bool:
        return all(order.done for order in self.orders)

    async def walk(self) -> AsyncIterator[None]:
        """Walk every file (yields after each range), then read the pinned
        runs. A file called damaged on the way is left out (its
        :attr:`Database.damage` says so): the others' runs are listed."""
        for order in list(self.orders):
            try:
                async for _ in order.walk():
                    self._remark()
                    yield
            except DamagedError:
                self.orders.remove(order)
                self._remark()
        await self._read_pinned()
        yield

    def _remark(self) -> None:
        """The unfinished runs of every file walked, in list order."""
        self._marks = sorted(
            ((mark, o) for o in self.orders for mark in o.unfinished), key=_list_order
        )
        self.refilter()

    async def first_rows(self, count: int) -> None:
        """Walk only the newest range and read its first ``count`` rows, their
        sessions not looked up: what a first frame can show before the whole
        walk (which starts afresh)."""
        async for _ in self.walk():
            break
        await self.read(0, count, link=False)

    async def _read_pinned(self) -> None:
        """Read whole the runs the other panes need without their rows on
        screen: unfinished ones linked to a session (badges, seams) and the
        completed ones lovia web still points at. The others are read as
        their rows show: a file can hold 40,000 unfinished heads (read whole,
        they held 90 MB)."""
        pinned: dict[tuple[Path, int], RunInfo] = {}
        links: dict[str, SessionLink] = {}
        for order in list(self.orders):
            rowid_of = {mark.run_id: mark.rowid for mark in order.unfinished}
            found = dict(await self._links_of(rowid_of))
            links.update(found)
            rowids = [rowid_of[run_id] for run_id in found]
            try:
                rowids += await _web_linked(order.db)
                read = await runs_at(order.db, list(dict.fromkeys(rowids)))
            except DamagedError:
                self.orders.remove(order)
                self._remark()
                continue
            for rowid, run in read.items():
                pinned[(run.file, rowid)] = run
        links.update(await self._links_of(
            run.run_id for run in pinned.values() if run.run_id not in links
        ))  # fmt: skip
        self.links = links
        self.pinned = pinned

    # ----- rows -----

    def refilter(self, now: float | None = None) -> None:
        """Recompute the unfinished rows under the filter (staleness moves with time)."""
        now = time.time() if now is None else now
        if self.status in (ALL_RUNS, UNREADABLE):
            wanted = None if self.status == ALL_RUNS else {UNREADABLE}
        elif self.status == RunStatus.COMPLETED:
            wanted = set()
        else:
            wanted = {self.status}
        self._rows = [
            (mark, order)
            for mark, order in self._marks
            if wanted is None or mark.label(now, self.stale_after) in wanted
        ]

    @property
    def completed(self) -> int:
        shows = self.status in (ALL_RUNS, RunStatus.COMPLETED)
        return sum(order.completed for order in self.orders) if shows else 0

    def __len__(self) -> int:
        return len(self._rows) + self.completed

    def counts(self, now: float | None = None) -> dict[str, int]:
        """Checkpoints per status across the files, as far as walked."""
        now = time.time() if now is None else now
        total = dict.fromkeys((*UNFINISHED, RunStatus.COMPLETED.value), 0)
        for order in self.orders:
            for status, count in order.counts(now, self.stale_after).items():
                total[status] += count
        return total

    def _slot(self, index: int) -> tuple[RunOrder, int | None, int | None]:
        """(file's order, rowid if known, completed position) of row ``index``."""
        if index < len(self._rows):
            mark, order = self._rows[index]
            return order, mark.rowid, None
        position = index - len(self._rows)
        for number, order in enumerate(self.orders):
            if position < order.completed:
                return order, self._rowid_at.get((number, position)), position
            position -= order.completed
        raise IndexError(index)

    def at(self, index: int) -> RunInfo | None:
        """The run on row ``index``; None while it is being read."""
        order, rowid, _ = self._slot(index)
        if rowid is None:
            return None
        key = (order.db.path, rowid)
        return self.pinned.get(key) or self._pages.get(key)

    @property
    def kept(self) -> int:
        """Runs (or row positions) held read: emptied past ``PAGE_CACHE``, so bounded."""
        return max(len(self._pages), len(self._rowid_at))

    @property
    def unfinished(self) -> list[Mark]:
        """Every unfinished run found so far, in list order, whatever the filter."""
        return [mark for mark, _ in self._marks]

    def mark(self, index: int) -> Mark | None:
        """What the walk knows of an unfinished row (its status) before it is read."""
        return self._rows[index][0] if index < len(self._rows) else None

    async def read(self, start: int, count: int, *, link: bool = True) -> bool:
        """Read the runs of rows ``start`` .. ``start + count`` not read yet, and
        (``link``) look up the sessions of those rows; whether any row changed."""
        if self.kept >= PAGE_CACHE:
            # Only the rows near the screen matter: the rest is read again if shown.
            self._pages.clear()
            self._rowid_at.clear()
        end = min(len(self), start + count)
        missing: dict[int, list[int]] = {}
        completed: dict[int, list[int]] = {}
        for index in range(max(0, start), end):
            order, rowid, position = self._slot(index)
            number = self.orders.index(order)
            if rowid is None and position is not None:
                completed.setdefault(number, []).append(position)
            elif rowid is not None and self.at(index) is None:
                missing.setdefault(number, []).append(rowid)
        for number, positions in completed.items():
            order = self.orders[number]
            first = positions[0]
            rowids = await order.completed_rowids(first, positions[-1] - first + 1)
            for offset, rowid in enumerate(rowids):
                self._rowid_at[(number, first + offset)] = rowid
            missing.setdefault(number, []).extend(rowids)
        found: dict[tuple[Path, int], RunInfo] = {}
        for number, rowids in missing.items():
            runs = await runs_at(self.orders[number].db, rowids)
            found.update(((run.file, rowid), run) for rowid, run in runs.items())
        self.linking.update(
            run.run_id for run in found.values() if run.run_id not in self.links
        )
        self._pages.update(found)
        if not link:
            return bool(found)
        wanted = {
            run.run_id
            for index in range(max(0, start), end)
            if (run := self.at(index)) is not None and run.run_id in self.linking
        }
        if wanted:
            self.links.update(await self._links_of(wanted))
            self.linking -= wanted
        return bool(found or wanted)

    # ----- lookups -----

    def known(self) -> list[RunInfo]:
        """Every run read so far: the pinned ones and the pages on or near screen."""
        return list({**self._pages, **self.pinned}.values())

    def find(self, run_id: str) -> RunInfo | None:
        return next((run for run in self.known() if run.run_id == run_id), None)

    def index_of(self, run_id: str) -> int | None:
        """The row of an unfinished run, or of a completed one read so far, if shown."""
        for index, (mark, _) in enumerate(self._rows):
            if mark.run_id == run_id:
                return index
        for (number, position), rowid in self._rowid_at.items():
            order = self.orders[number]
            run = self._pages.get((order.db.path, rowid))
            if run is not None and run.run_id == run_id:
                before = sum(o.completed for o in self.orders[:number])
                return len(self._rows) + before + position
        return None

    async def locate(self, run_id: str) -> int | None:
        """The row of any run under the filter (read or not), found from its
        rowid: a primary-key lookup, then one count inside its range."""
        for number, order in enumerate(self.orders):
            found = await status_rows(
                order.db,
                "SELECT rowid, {status}, updated_at FROM snapshot_heads WHERE run_id = ?",
                (run_id,),
            )
            if not found:
                continue
            rowid, status, saved = found[0]
            if status != RunStatus.COMPLETED:
                return next(
                    (
                        index
                        for index, (mark, o) in enumerate(self._rows)
                        if o is order and mark.rowid == rowid
                    ),
                    None,
                )
            if self.status not in (ALL_RUNS, RunStatus.COMPLETED):
                return None
            where = next(
                (
                    i
                    for i, (low, high) in enumerate(order.ranges)
                    if low <= rowid < high
                ),
                None,
            )
            if where is None:
                return None  # saved since the walk: the next walk places it
            low, high = order.ranges[where]
            newer = await status_rows(
                order.db,
                "SELECT COUNT(*) FROM snapshot_heads WHERE rowid >= ? AND rowid < ? "
                "AND {status} IS 'completed' "
                "AND (updated_at > ? OR (updated_at = ? AND rowid > ?))",
                (low, high, saved, saved, rowid),
            )
            before = sum(o.completed for o in self.orders[:number])
            return len(self._rows) + before + order.starts[where] + newer[0][0]
        return None

    def linked_to(self, file: str, session_id: str) -> list[RunInfo]:
        """Runs read so far that are linked to the session (its seams)."""
        return [
            run
            for run in self.known()
            if (link := self.links.get(run.run_id))
            and (str(link.file), link.session_id) == (file, session_id)
        ]


def _list_order(item: tuple[Mark, RunOrder]) -> tuple[int, float]:
    """:data:`~lovia_tui.core.run_status.LIST_ORDER`: by status, newest first in each."""
    mark = item[0]
    return list_rank(mark.status), -time_order(mark.updated_at)


async def _web_linked(db: Database) -> list[int]:
    """Rowids of checkpoints the web UI's records in the same file point at.

    A completed checkpoint the web UI still points at is the crash window
    (its answer is in no session yet): its seam must show like an unfinished one.
    """
    if not db.stores.chat:
        return []
    found = [
        row[0]
        for row in await db.fetchall(
            "SELECT h.rowid FROM chat_sessions c JOIN snapshot_heads h "
            "ON h.run_id = c.active_run_id WHERE c.active_run_id IS NOT NULL"
        )
    ]
    bounds = await db.fetchone(
        "SELECT (SELECT MIN(rowid) FROM chat_runs), (SELECT MAX(rowid) FROM chat_runs)"
    )
    if not bounds or bounds[0] is None:
        return found
    for low in range(bounds[0], bounds[1] + 1, WEB_CHUNK):
        rows = await db.fetchall(
            "SELECT h.rowid FROM chat_runs r JOIN snapshot_heads h ON h.run_id = r.id "
            f"WHERE r.rowid >= ? AND r.rowid < ? AND {SAFE_STATUS} IS 'completed'",
            (low, low + WEB_CHUNK),
        )
        found += [row[0] for row in rows]
    return found
