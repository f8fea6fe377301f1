"""Which segment holds a run, in a compact map walked from lovia's index once.

lovia indexes segments by (session_id, run_id): nothing leads from a run id
alone to its row, so every lookup walked that whole index (0.47 s at 1M
segments, for each page of the runs list and each page of the doctor's
checkpoints). One walk now builds a sorted array of 64-bit keys, a run id's
32-bit hash above its segment's id: 8 bytes a segment, 8 MB at 1M. A lookup
bisects it and confirms each candidate by reading its row, so a key gone
stale (a rewind, a clear) or a hash two runs share is never taken for a
link. Segments appended since the walk are found by a scan of the ids above
it, folded into the map once they are many.
"""

from __future__ import annotations

import asyncio
import heapq
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from lovia_tui.core.store.connect import as_stored
from lovia_tui.core.store.database import Database
from lovia_tui.core.stored import stored_key

WALK_CHUNK = 10_000
"""Index entries per statement of the walk (~20-35 ms each at 1M segments)."""
FOLD_AFTER = 20_000
"""Segments appended since the walk that are scanned for, before they are mapped."""
CONFIRM_CHUNK = 500
ID_BITS = 32
LOW = (1 << ID_BITS) - 1


def _top(run_id: str) -> int:
    """A key's upper half: the run id's hash (this process's: the map is never stored)."""
    return hash(run_id) & LOW


class RunSegments:
    """The segments of a file's runs, by run id (built on first use)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._keys = array("Q")
        self._wide: dict[str, list[int]] = {}
        """Segments whose id does not fit in a key (a hostile file's): few."""
        self._upto: int | None = None
        """The highest segment id mapped; None until the first walk."""
        self._lock = asyncio.Lock()

    async def sessions(self, run_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(run_id, session_id) of the given runs that have a segment, in
        session id order (a run forked into several sessions is in each)."""
        wanted = set(run_ids)
        if not self.db.stores.session or not wanted:
            return []
        async with self._lock:
            upto = await self._current()
        found = await self._confirmed(wanted, self._candidates(wanted))
        ordered = sorted(wanted)
        for start in range(0, len(ordered), CONFIRM_CHUNK):
            chunk = tuple(ordered[start : start + CONFIRM_CHUNK])
            found += _keys(
                await self.db.fetchall(
                    "SELECT run_id, session_id FROM session_runs WHERE id > ? "
                    f"AND run_id IN ({','.join('?' * len(chunk))})",
                    (upto, *chunk),
                )
            )
        return sorted(found, key=lambda pair: (pair[1], pair[0]))

    def _candidates(self, run_ids: set[str]) -> list[int]:
        keys, found = self._keys, []
        for run_id in run_ids:
            top = _top(run_id)
            at = bisect_left(keys, top << ID_BITS)
            while at < len(keys) and keys[at] >> ID_BITS == top:
                found.append(keys[at] & LOW)
                at += 1
            found += self._wide.get(run_id, ())
        return found

    async def _confirmed(
        self, run_ids: set[str], row_ids: list[int]
    ) -> list[tuple[str, str]]:
        """The candidates whose row is still there and holds one of the runs."""
        found = []
        for start in range(0, len(row_ids), CONFIRM_CHUNK):
            chunk = tuple(row_ids[start : start + CONFIRM_CHUNK])
            rows = await self.db.fetchall(
                "SELECT run_id, session_id FROM session_runs "
                f"WHERE id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            found += [pair for pair in _keys(rows) if pair[0] in run_ids]
        return found

    async def _current(self) -> int:
        """Walk lovia's index the first time; later, map the segments
        appended since once they are many. The highest id mapped. A walk
        cut short (its worker cancelled) maps nothing: the next call walks."""
        top = (await self.db.fetchrow("SELECT COALESCE(MAX(id), 0) FROM session_runs"))[
            0
        ]
        if self._upto is None:
            await self._map(self._walk(top))
            self._upto = top
        elif top - self._upto > FOLD_AFTER:
            await self._map(self._appended(self._upto, top))
            self._upto = top
        return self._upto

    async def _walk(self, upto: int):
        """(run_id, id) of every segment up to ``upto``, by keyset over the
        (session_id, run_id) index (covering: of the rows, only the one each
        step continues from is read, for its key as stored)."""
        after: tuple[Any, ...] = ()
        key = f"({as_stored('session_id', '?3', '?1')}, {as_stored('run_id', '?3', '?2')})"
        while True:
            rows = await self.db.fetchall(
                "SELECT session_id, run_id, id FROM session_runs "
                f"WHERE {f'(session_id, run_id) > {key}' if after else '1'} "
                "ORDER BY session_id, run_id LIMIT ?4",
                (*(after or (None, None, None)), WALK_CHUNK),
            )
            if not rows:
                return
            after = tuple(rows[-1])
            yield [(run_id, row_id) for _, run_id, row_id in rows if row_id <= upto]

    async def _appended(self, after: int, upto: int):
        """(run_id, id) of the segments with ids in (after, upto], by rowid."""
        while after < upto:
            rows = await self.db.fetchall(
                "SELECT run_id, id FROM session_runs WHERE id > ? AND id <= ? "
                "ORDER BY id LIMIT ?",
                (after, upto, WALK_CHUNK),
            )
            if not rows:
                return
            after = rows[-1][1]
            yield rows

    async def _map(self, batches) -> None:
        """Merge the batches' keys into the sorted array (never a list of all),
        in one step once every batch is read."""
        runs, wide = [self._keys], {r: list(ids) for r, ids in self._wide.items()}
        async for batch in batches:
            keys = []
            for stored, row_id in batch:
                run_id = stored_key(stored)  # hashed as the lookups hash it
                if 0 < row_id <= LOW:
                    keys.append(_top(run_id) << ID_BITS | row_id)
                else:
                    wide.setdefault(run_id, []).append(row_id)
            runs.append(array("Q", sorted(keys)))
        self._keys, self._wide = array("Q", heapq.merge(*runs)), wide


def _keys(rows: list[Any]) -> list[tuple[str, str]]:
    """(run_id, session_id) rows as keys (:func:`stored_key`): what lookups compare."""
    return [(stored_key(run_id), stored_key(sid)) for run_id, sid in rows]
