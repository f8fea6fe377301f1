"""What changed in one database since the last look: the live view's deltas.

A :class:`Tail` keeps cursors (segment ids, head rowids, the followed run's
last seq, the followed session's fingerprint) and turns each commit into a
frozen :class:`Changes`. Every statement is a key range, an index count or
a scan of the one followed session, so a poll stays short on a large file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lovia_tui.core.live import tail_queries
from lovia_tui.core.live.changes import Changes, NewSegment, RunEntries
from lovia_tui.core.live.heads import HeadsSeen, HeadWindow
from lovia_tui.core.models import SegmentInfo
from lovia_tui.core.store import checkpoint_reads, database
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.schema import Stores
from lovia_tui.core.store.table_shape import TABLES_SQL
from lovia_tui.core.stored import stored_key

if TYPE_CHECKING:
    from lovia_tui.core.live.watch import (
        CommitWatch,  # watchfiles: imported by the live view only
    )

NEW_SEGMENTS_LIMIT = 1_000
"""More new segments than this in one poll are not listed: reload instead."""


async def new_snapshot_entries(
    db: Database, run_id: str, after_seq: int = -1
) -> RunEntries:
    """A checkpoint's entries after ``after_seq`` (-1: all), to load then follow a run."""
    entries, problems, last_seq = await checkpoint_reads.snapshot_entries_after(
        db, run_id, after_seq
    )
    return RunEntries(run_id, after_seq, last_seq, tuple(entries), tuple(problems))


@dataclass(frozen=True)
class _Followed:
    """The followed session, the ids of the segments shown (``to_id`` None: up
    to the newest) and its fingerprint (segments, last id, bytes shown, as
    :attr:`SegmentInfo.stored_bytes` counts them)."""

    session_id: str
    from_id: int
    to_id: int | None
    fingerprint: tuple[int, int, int]


class Tail:
    """Cursors over one database; each :meth:`poll` returns what changed since.

    Build with :meth:`start`. Runs only the statements in :mod:`~lovia_tui.core.live.tail_queries`; all
    state lives here, so one Tail serves one live worker.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self._last_segment = 0
        self._segment_count = 0
        self._heads = HeadWindow(db)
        self._run: tuple[str, int] | None = None
        self._session: _Followed | None = None

    @classmethod
    async def start(cls, db: Database) -> Tail:
        """A tail whose first poll reports only what changes after this call."""
        tail = cls(db)
        if db.stores.session:
            tail._segment_count, tail._last_segment = await tail_queries.segment_totals(
                db
            )
        if db.stores.checkpoint:
            await tail._heads.start()
        return tail

    def follow_run(self, run_id: str | None, after_seq: int = -1) -> None:
        """Report ``run_id``'s entries stored after batch ``after_seq`` (None: none).

        Pass the ``last_seq`` of the :func:`new_snapshot_entries` the view
        was loaded from, so no entry is shown twice or missed.
        """
        self._run = None if run_id is None else (run_id, after_seq)

    def follow_session(
        self, session_id: str | None, shown: list[SegmentInfo], total: int
    ) -> None:
        """Report when the segments ``shown`` (a session's newest, as listed by
        ``segment_reads.newest_segments``; later ones too) are rewritten.

        ``total`` is the session's segment count from the same statement. Call
        it before reading the segments' entries: a rewrite in between is then
        reported (once too often at worst), never missed. Costs no statement.
        """
        if session_id is None or not self.db.stores.session:
            self._session = None
            return
        from_id = shown[0].row_id if shown else 0
        last_id = shown[-1].row_id if shown else 0
        chars = sum(segment.stored_bytes for segment in shown)
        self._session = _Followed(session_id, from_id, None, (total, last_id, chars))

    async def watch_older(self, count: int) -> None:
        """Also watch the ``count`` segments just older than those watched
        (the ones the view is about to show): call it before loading them."""
        followed = self._session
        if followed is not None and followed.from_id:
            from_id = await tail_queries.nth_newest_id(
                self.db, followed.session_id, count, followed.from_id
            )
            await self.watch_ids(from_id or followed.from_id, followed.to_id)

    async def watch_newer(self, count: int) -> None:
        """Also watch the ``count`` segments just newer than those watched
        (up to the newest if fewer remain): call it before loading them."""
        followed = self._session
        if followed is not None and followed.to_id is not None:
            to_id = await tail_queries.nth_oldest_id(
                self.db, followed.session_id, count + 1, followed.to_id
            )
            await self.watch_ids(followed.from_id, None if to_id is None else to_id - 1)

    async def watch_ids(self, from_id: int, to_id: int | None) -> None:
        """Watch the followed session's segments with ids in [from_id, to_id]
        (None: up to the newest), the ones the view shows.

        The fingerprint gains the bytes of the ids added and loses those
        of the ids dropped, instead of being taken anew: a rewrite of the
        segments still shown since the last poll is then still reported.
        """
        followed = self._session
        if followed is None or (from_id, to_id) == (followed.from_id, followed.to_id):
            return
        sid, chars = followed.session_id, 0
        top = _end(followed.to_id)
        chars += await self._chars(sid, from_id, followed.from_id)  # added below
        chars -= await self._chars(sid, followed.from_id, from_id)  # dropped below
        chars += await self._chars(sid, top + 1, _end(to_id) + 1)  # added above
        chars -= await self._chars(sid, _end(to_id) + 1, top + 1)  # dropped above
        if self._session is followed:
            segments, last_id, shown = followed.fingerprint
            self._session = _Followed(
                sid, from_id, to_id, (segments, last_id, shown + chars)
            )

    async def _chars(self, session_id: str, from_id: int, below_id: int) -> int:
        if from_id >= below_id:
            return 0
        return await tail_queries.session_chars(self.db, session_id, from_id, below_id)

    async def poll(self) -> Changes:
        """What changed since the last poll (or :meth:`start`)."""
        stores_changed = await self._refresh_stores()
        segments, sessions_changed = await self._poll_segments()
        heads = await self._heads.look() if self.db.stores.checkpoint else HeadsSeen()
        return Changes(
            segments=segments,
            heads=heads.saved,
            runs_removed=heads.removed,
            run_entries=await self._poll_run(),
            rewritten_sessions=await self._poll_session(),
            sessions_changed=sessions_changed,
            stores_changed=stores_changed or heads.unlisted,
        )

    async def _refresh_stores(self) -> bool:
        """Notice a store whose tables a writer created after we opened the file."""
        stores = self.db.stores
        if stores.session and stores.checkpoint:
            return False
        names = {row[0] for row in await self.db.fetchall(TABLES_SQL)}
        found = Stores.of(names, stores.refused)
        if found == stores:
            return False
        self.db.stores = found
        return True

    async def _poll_segments(self) -> tuple[tuple[NewSegment, ...], bool]:
        if not self.db.stores.session:
            return (), False
        # Count first, then read up to the last id it saw: the two agree
        # unless rows were deleted meanwhile, which is then reported early.
        count, last_id = await tail_queries.segment_totals(self.db)
        rows = await tail_queries.segments_between(
            self.db, self._last_segment, last_id, NEW_SEGMENTS_LIMIT + 1
        )
        self._segment_count, expected = count, self._segment_count + len(rows)
        if len(rows) > NEW_SEGMENTS_LIMIT:
            self._last_segment = last_id
            return (), True
        if rows:
            self._last_segment = rows[-1][0]
        segments = tuple(
            NewSegment(row_id, stored_key(session_id), stored_key(run_id))
            for row_id, session_id, run_id in rows
        )
        return segments, count != expected

    async def _poll_run(self) -> RunEntries | None:
        followed = self._run
        if followed is None or not self.db.stores.checkpoint:
            return None
        found = await new_snapshot_entries(self.db, *followed)
        if self._run != followed or found.last_seq == followed[1]:
            return None  # re-targeted meanwhile, or nothing new
        self._run = (found.run_id, found.last_seq)
        return found

    async def _poll_session(self) -> frozenset[str]:
        followed = self._session
        if followed is None:
            return frozenset()
        _, last_id, _ = followed.fingerprint
        whole, known = await tail_queries.session_fingerprint(
            self.db, followed.session_id, last_id, followed.from_id, followed.to_id
        )
        if self._session is followed:
            self._session = _Followed(
                followed.session_id, followed.from_id, followed.to_id, whole
            )
        return (
            frozenset()
            if known == followed.fingerprint
            else frozenset({followed.session_id})
        )


def _end(to_id: int | None) -> int:
    """The last id of a range whose end may be open (None)."""
    return database.NO_ID_ABOVE if to_id is None else to_id


async def live_changes(
    watch: CommitWatch, tail: Tail, stop: asyncio.Event | None = None
) -> AsyncIterator[Changes]:
    """The non-empty :class:`Changes` after each commit by another process.

    What a live view's worker loops over; ends when ``stop`` is set or the
    consuming task is cancelled.
    """
    async with aclosing(watch.commits(stop)) as commits:
        async for _ in commits:
            changes = await tail.poll()
            if not changes.empty:
                yield changes
