"""Builds transcript rows from the read layer: newest segments first.

A session may hold thousands of runs; only the newest ``BATCH`` segments are
read at first and older ones on demand, so opening it costs the same at any
length. Flat indices need every older segment's entry count: they are counted
in the background (``segment_reads.flat_starts``) and filled in by ``set_indices``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lovia_tui.core.context_meta import notice_of
from lovia_tui.core.entries import UnreadableError
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.live.changes import RunEntries
from lovia_tui.core.models import Entry, RunInfo, SegmentInfo, SessionKey, Unreadable
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import unbindable
from lovia_tui.view.kinds import RowKind, notice_key, seam_key, segment_key
from lovia_tui.view.rows import Row, newer_row, older_row

if TYPE_CHECKING:
    from lovia_tui.core.store.spliced import InFlight

BATCH = 30


Starts = dict[int, int | None]
"""Each segment's first flat index by row id (``segment_reads.flat_starts``)."""


async def segment_rows(
    db: Database, batch: list[SegmentInfo], starts: Starts | None
) -> list[Row]:
    """Header and entry rows of some segments (unreadable ones say so); their
    flat indices from ``starts``, or still being counted when it is None."""
    # The read layer is imported at the first read: a first frame needs none of it.
    from lovia_tui.core.store import segment_reads
    from lovia_tui.core.store.segment_parts import SegmentPart

    if starts is None:
        batch = [replace(segment, counting=True) for segment in batch]
    else:
        batch = [
            replace(segment, first_index=starts.get(segment.row_id))
            for segment in batch
        ]
    loaded = await segment_reads.batch_entries(db, batch)
    rows: list[Row] = []
    for segment in batch:
        header = segment_key(db.path, segment.row_id)
        rows.append(Row(RowKind.SEGMENT, header, segment=segment, fold=header))
        entries = loaded[segment.row_id]
        if isinstance(entries, UnreadableError):
            where = f"{db.name} session_runs id {segment.row_id} (run {segment.run_id})"
            rows.append(
                Row(
                    RowKind.UNREADABLE,
                    f"{header}:bad",
                    problem=Unreadable(where, str(entries)),
                    fold=header,
                )
            )
            continue
        part = (
            entries if isinstance(entries, SegmentPart) else SegmentPart(entries, 0, [])
        )
        rows.extend(_entry_rows(header, segment, part.first, 0))
        if part.skipped or segment.uncounted:
            rows.append(
                Row(
                    RowKind.HELD_BACK,
                    f"{header}:{RowKind.HELD_BACK}",
                    segment=segment,
                    older=part.skipped,
                    fold=header,
                )
            )
        rows.extend(
            _entry_rows(header, segment, part.last, len(part.first) + part.skipped)
        )
        if notice_of(segment.meta) is not None:
            rows.append(
                Row(RowKind.NOTICE, notice_key(header), segment=segment, fold=header)
            )
    return rows


def _entry_rows(
    header: str, segment: SegmentInfo, entries: list[Entry], start: int
) -> list[Row]:
    """Rows of a segment's entries from offset ``start`` (keyed by offset)."""
    return [
        Row(
            RowKind.ENTRY,
            f"{header}:{offset}",
            segment=segment,
            entry=entry,
            fold=header,
        )
        for offset, entry in enumerate(entries, start)
    ]


def set_indices(rows: list[Row], starts: Starts | None) -> None:
    """Fill in the flat indices of rows loaded while they were being counted
    (an uncounted run's rows are read again: see :func:`uncounted`); with no
    ``starts`` (not counted yet), nothing."""
    if starts is None:
        return
    offsets: dict[int, int] = {}  # a segment's entry rows come in order
    for row in rows:
        segment = row.segment
        if segment is None or not segment.counting or segment.uncounted:
            continue
        first = starts.get(segment.row_id)
        if row.kind == RowKind.HELD_BACK:
            offsets[segment.row_id] = offsets.get(segment.row_id, -1) + row.older
        if row.kind == RowKind.ENTRY and row.entry is not None:
            offset = offsets[segment.row_id] = offsets.get(segment.row_id, -1) + 1
            row.entry = replace(
                row.entry, index=None if first is None else first + offset
            )
        row.segment = replace(segment, first_index=first, counting=False)


def held_ids(rows: list[Row]) -> tuple[int, int | None] | None:
    """(first, last) segment ids the rows hold (last None: the newest, no
    newer batch below), for the live tail to watch; None if no segment."""
    ids = [
        row.segment.row_id
        for row in rows
        if row.kind == RowKind.SEGMENT and row.segment
    ]
    if not ids:
        return None
    return ids[0], ids[-1] if rows[-1].kind == RowKind.NEWER else None


def uncounted(rows: list[Row]) -> bool:
    """Whether a large run among ``rows`` was listed before it was counted:
    its last entries are not read yet (the rows are read again once it is)."""
    return any(row.segment is not None and row.segment.uncounted for row in rows)


def run_entry_rows(run: RunInfo, loaded: RunEntries, first_offset: int) -> list[Row]:
    """Rows for a checkpoint's entries (first load, or new ones while following)."""
    seam = seam_key(run.run_id)
    rows = [
        Row(
            RowKind.ENTRY,
            f"{seam}:{first_offset + n}",
            run=run,
            entry=entry,
            fold=seam,
        )
        for n, entry in enumerate(loaded.entries)
    ]
    rows.extend(
        Row(
            RowKind.UNREADABLE,
            f"{seam}:bad{loaded.last_seq}:{n}",
            problem=p,
            fold=seam,
        )
        for n, p in enumerate(loaded.problems)
    )
    return rows


def flight_rows(flight: InFlight) -> list[Row]:
    """The seam and a checkpoint's own entries below it, as ``show`` splices them."""
    run = flight.run
    seam = seam_key(run.run_id)
    loaded = RunEntries(
        run.run_id, -1, flight.last_seq, flight.entries, flight.problems
    )
    return [
        Row(RowKind.SEAM, seam, run=run, fold=seam, status=flight.status),
        *run_entry_rows(run, loaded, 0),
    ]


async def inflight_rows(
    ws: Workspace, run: RunInfo, stale_after: float
) -> tuple[list[Row], int]:
    """A run shown by itself behind its seam; and the last batch seq read,
    from which following the run picks up."""
    from lovia_tui.core.store.spliced import read_flight

    flight = await read_flight(ws, run, None, stale_after=stale_after)
    return flight_rows(flight), flight.last_seq


@dataclass(frozen=True)
class Seams:
    """What the seams below a session come from: the runs the Runs pane links
    to it (shown unless already stored), their files, when they go stale."""

    workspace: Workspace
    runs: list[RunInfo]
    stale_after: float


class Watcher(Protocol):
    """What the live tail offers the transcript: which rows to watch."""

    def follow_session(
        self, file: Path, session_id: str, shown: list[SegmentInfo], total: int
    ) -> None: ...
    async def watch_older(self, file: Path) -> None: ...
    async def watch_newer(self, file: Path) -> None: ...
    async def watch_window(
        self, file: Path, from_id: int, to_id: int | None
    ) -> None: ...
    def follow_run(self, file: Path, run_id: str, seq: int) -> bool: ...
    def stop_following(self) -> None: ...


class Runs(Protocol):
    """What the Runs pane tells the transcript: the runs a seam shows."""

    stale_after: float

    def linked_to(self, key: SessionKey) -> list[RunInfo]: ...
    def find(self, run_id: str) -> RunInfo | None: ...


async def newest_batch(db: Database, session_id: str) -> tuple[list[SegmentInfo], int]:
    """A session's newest ``BATCH`` segments, listed (their entries not read
    yet), and how many older ones there are. A session id no Python program
    can bind raises LoviaTuiError saying so: its segments exist, and none reads."""
    from lovia_tui.core.store import segment_reads

    if reason := unbindable("session", session_id):
        raise LoviaTuiError(reason)
    return await segment_reads.newest_segments(db, session_id, BATCH)


async def session_rows(
    db: Database,
    session_id: str,
    listed: tuple[list[SegmentInfo], int],
    seams: Seams,
    starts: Starts | None = None,
) -> tuple[list[Row], dict[str, int]]:
    """The newest batch of a session (as listed by ``segment_reads.newest_segments``),
    then each linked run not yet appended; and, per such run, the last batch
    seq read (to follow it from there)."""
    batch, older = listed
    rows = await _batch_rows(
        db, session_id, batch, starts, at_start=not older, next_id=None
    )
    rows = (older_row(older, batch[0].row_id) if batch else []) + rows
    more, seqs = await _seam_rows(db, session_id, seams)
    return rows + more, seqs


async def older_rows(
    db: Database, session_id: str, before_id: int, starts: Starts | None
) -> list[Row]:
    """The next older batch above what is shown, with a new "older" row if needed."""
    from lovia_tui.core.store import segment_reads

    batch, older = await segment_reads.newest_segments(db, session_id, BATCH, before_id)
    rows = await _batch_rows(
        db, session_id, batch, starts, at_start=not older, next_id=before_id
    )
    return (older_row(older, batch[0].row_id) if batch else []) + rows


async def newer_rows(
    db: Database,
    session_id: str,
    after_id: int,
    starts: Starts | None,
    seams: Seams,
) -> tuple[list[Row], dict[str, int]]:
    """The next newer batch below what is shown: with a "newer" row if more
    follow, else with the in-flight runs' seams (as :func:`session_rows`)."""
    from lovia_tui.core.store import segment_reads

    batch, newer = await segment_reads.oldest_segments(db, session_id, BATCH, after_id)
    rows = await _batch_rows(
        db,
        session_id,
        batch,
        starts,
        at_start=not after_id,
        next_id=batch[-1].row_id + 1 if newer else None,
    )
    if newer:
        return rows + newer_row(newer, batch[-1].row_id), {}
    more, seqs = await _seam_rows(db, session_id, seams)
    return rows + more, seqs


async def _batch_rows(
    db: Database,
    session_id: str,
    batch: list[SegmentInfo],
    starts: Starts | None,
    *,
    at_start: bool,
    next_id: int | None,
) -> list[Row]:
    """A batch's rows with lovia web's records among them (as
    :func:`~lovia_tui.view.record_rows.with_records` places them)."""
    from lovia_tui.view.record_rows import with_records

    rows = await segment_rows(db, batch, starts)
    return await with_records(
        db, session_id, rows, batch, at_start=at_start, next_id=next_id
    )


async def _seam_rows(
    db: Database, session_id: str, seams: Seams
) -> tuple[list[Row], dict[str, int]]:
    from lovia_tui.core.store.spliced import splice

    # Unnumbered: an entry not stored yet is no place to rewind to.
    flights = await splice(
        seams.workspace, db, session_id, seams.runs, None, stale_after=seams.stale_after
    )
    rows = [row for flight in flights for row in flight_rows(flight)]
    return rows, {flight.run.run_id: flight.last_seq for flight in flights}
