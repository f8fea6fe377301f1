"""Builds transcript rows from the read layer: newest segments first.

A session may hold thousands of runs; only the newest ``BATCH`` segments are
read at first and older ones on demand, so opening it costs the same at any
length.
"""

from __future__ import annotations

from lovia_tui.core import queries
from lovia_tui.core.database import Database
from lovia_tui.core.entries import UnreadableError
from lovia_tui.core.models import RunInfo, SegmentInfo, Unreadable
from lovia_tui.core.tail import RunEntries, new_snapshot_entries
from lovia_tui.widgets.transcript_rows import Row

BATCH = 30


async def segment_rows(db: Database, batch: list[SegmentInfo]) -> list[Row]:
    """Header and entry rows of some segments (unreadable ones say so)."""
    rows: list[Row] = []
    for segment in batch:
        header = f"seg:{db.path}:{segment.row_id}"
        rows.append(Row("segment", header, segment=segment, extra={"segment": header}))
        try:
            entries = await queries.segment_entries(db, segment)
        except UnreadableError as exc:
            where = f"{db.name} session_runs id {segment.row_id} (run {segment.run_id})"
            rows.append(Row("unreadable", f"{header}:bad", problem=Unreadable(where, str(exc)), extra={"segment": header}))
            continue
        rows.extend(
            Row("entry", f"{header}:{offset}", segment=segment, entry=entry, extra={"segment": header})
            for offset, entry in enumerate(entries)
        )
    return rows


def older_row(remaining: list[SegmentInfo]) -> list[Row]:
    if not remaining:
        return []
    return [Row("older", f"older:{remaining[-1].row_id}", older=len(remaining), extra={"segments": remaining})]


def run_entry_rows(run: RunInfo, loaded: RunEntries, first_offset: int) -> list[Row]:
    """Rows for a checkpoint's entries (first load, or new ones while following)."""
    seam = f"seam:{run.run_id}"
    rows = [
        Row("entry", f"{seam}:{first_offset + n}", run=run, entry=entry, extra={"segment": seam})
        for n, entry in enumerate(loaded.entries)
    ]
    rows.extend(
        Row("unreadable", f"{seam}:bad{loaded.last_seq}:{n}", problem=p, extra={"segment": seam})
        for n, p in enumerate(loaded.problems)
    )
    return rows


async def inflight_rows(db: Database, run: RunInfo, status: str) -> tuple[list[Row], int]:
    """The seam and a checkpoint's own entries, not yet in the session; and
    the last batch seq read, from which following the run picks up."""
    seam = f"seam:{run.run_id}"
    loaded = await new_snapshot_entries(db, run.run_id)
    rows = [Row("seam", seam, run=run, extra={"segment": seam, "status": status})]
    return rows + run_entry_rows(run, loaded, 0), loaded.last_seq


async def session_rows(
    db: Database, session_id: str, inflight: list[tuple[Database, RunInfo, str]]
) -> tuple[list[Row], dict[str, int]]:
    """The newest batch of a session, then each linked run not yet appended;
    and, per such run, the last batch seq read (to follow it from there)."""
    segments = await queries.segments(db, session_id)
    appended = {segment.run_id for segment in segments}
    rows = older_row(segments[:-BATCH]) + await segment_rows(db, segments[-BATCH:])
    seqs: dict[str, int] = {}
    for run_db, run, status in inflight:
        if run.run_id not in appended:
            more, seqs[run.run_id] = await inflight_rows(run_db, run, status)
            rows.extend(more)
    return rows, seqs


async def older_rows(db: Database, remaining: list[SegmentInfo]) -> list[Row]:
    """The next older batch above what is shown, with a new "older" row if needed."""
    return older_row(remaining[:-BATCH]) + await segment_rows(db, remaining[-BATCH:])
