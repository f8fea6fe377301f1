"""Doctor checks on every session segment: unreadable rows and unpaired tool calls.

The scan walks ``session_runs`` in id-range chunks sized to a byte budget, so
a million segments pass through in bounded memory and no statement holds the
file for long; each chunk is read and parsed in one thread, off the caller's
event loop (read in one thread and parsed in another, the two handed the GIL
back and forth: 100,000 segments took 8.3 s against a 3.3 s read and parse).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lovia_tui.core.doctor.findings import (
    UNPAIRED_TOOL_CALL,
    UNREADABLE_ROW,
    Finding,
    FindingList,
    Fix,
    Progress,
    command,
)
from lovia_tui.core.entries import UnreadableError, known_only, parse_object
from lovia_tui.core.store import segment_reads
from lovia_tui.core.store.database import Database, in_thread
from lovia_tui.core.store.entry_stream import (
    STREAM_ABOVE,
    read_entries,
    stored_sizes_on,
    stored_value,
)
from lovia_tui.core.stored import NonTextKey, UndecodedText, stored_key, text_literal

CHUNK_BYTES = 4 << 20
"""What one chunk of segments should weigh: its rows are all in memory at once."""
FIRST_CHUNK = 64
MAX_CHUNK = 5_000
NON_TEXT_SESSION = "non-text-session-id"


@dataclass(frozen=True)
class _Problem:
    """What is wrong with one segment: unreadable, tool entries without their
    pair, or a session id lovia cannot be given."""

    kind: str
    row_id: int
    session_id: str
    run_id: str
    reason: str = ""
    offset: int | None = None
    """Offset in the segment of the first unpaired tool entry."""


def unpaired(entries: Iterable[dict[str, Any]]) -> tuple[int, str] | None:
    """The first tool call without a result, or result without its call, as lovia pairs them.

    lovia pairs by call id, not by occurrence (``drop_dangling_tool_calls``
    keeps a call when any result has its id; ``safe_window`` calls a result an
    orphan when no call has its id). Returns (offset, description) or None.
    One pass, holding call ids and not entries: a segment of a million
    entries is read as a stream. The first call (result) of an id stays a
    suspect until a result (call) of that id turns up; what is left at the
    end is unpaired, and the earliest is reported.
    """
    if isinstance(entries, list) and _paired(entries):
        return None
    seen: dict[Any, int] = {}  # call id -> _CALL | _RESULT bits
    suspects: dict[tuple[int, Any], tuple[int, str]] = {}
    for offset, entry in enumerate(entries):
        kind = entry.get("type")
        if kind not in ("tool_call", "tool_result"):
            continue
        call_id = entry.get("call_id")
        key = _key(call_id)
        mine, other = (_CALL, _RESULT) if kind == "tool_call" else (_RESULT, _CALL)
        bits = seen.get(key, 0)
        seen[key] = bits | mine
        suspects.pop((other, key), None)
        if not bits & other and (mine, key) not in suspects:
            suspects[(mine, key)] = (
                offset,
                f"tool call {entry.get('name', '?')} [{call_id}] has no result"
                if kind == "tool_call"
                else f"tool result [{call_id}] answers no call in its segment",
            )
    return min(suspects.values(), default=None, key=lambda found: found[0])


_CALL, _RESULT = 1, 2


def _paired(entries: list[dict[str, Any]]) -> bool:
    """Whether every call id has a result and every result a call: the usual
    segment, told in one loop (a million segments pass through here)."""
    calls, results = set(), set()
    try:
        for entry in entries:
            kind = entry.get("type")
            if kind == "tool_call":
                calls.add(entry.get("call_id"))
            elif kind == "tool_result":
                results.add(entry.get("call_id"))
    except TypeError:
        return False  # an id that is a list or an object: the careful pass
    return calls == results


def _key(call_id: Any) -> Any:
    """A call id as a set member: lovia writes a string, a hostile row may hold a list."""
    return repr(call_id) if isinstance(call_id, list | dict) else call_id


def _check(db: Database, rows: list[Any]) -> list[_Problem]:
    """Parse a chunk of rows (in a thread) and keep what lovia would choke on."""
    problems = []
    for row_id, stored_session, stored_run, entries_json, meta_json in rows:
        session_id, run_id = stored_key(stored_session), stored_key(stored_run)
        if isinstance(session_id, NonTextKey):
            problems.append(_Problem(NON_TEXT_SESSION, row_id, session_id, run_id))
        try:
            found = _unpaired_in(db, row_id, entries_json)
            parse_object(meta_json)
        except UnreadableError as exc:
            problems.append(
                _Problem(UNREADABLE_ROW, row_id, session_id, run_id, str(exc))
            )
            continue
        if found is not None:
            problems.append(
                _Problem(
                    UNPAIRED_TOOL_CALL, row_id, session_id, run_id, found[1], found[0]
                )
            )
    return problems


def _unpaired_in(
    db: Database, row_id: int, raw: bytes | None
) -> tuple[int, str] | None:
    """:func:`unpaired` of one stored value (raises UnreadableError as
    :func:`parse_entries` does). A large one (:data:`_LARGE` in the chunk) is
    read by itself; its entries as a stream, its huge strings left stored."""
    value = stored_value(db, row_id) if raw == _LARGE else raw
    return unpaired(known_only(read_entries(value)))


async def _bounds(db: Database) -> tuple[int, int] | None:
    row = await db.fetchone(
        "SELECT (SELECT MIN(id) FROM session_runs), (SELECT MAX(id) FROM session_runs)"
    )
    return None if row is None or row[0] is None else (row[0], row[1])


class _FlatIndices:
    """Where each segment of a session starts in its flat indices, read once
    for the session the last problem was in: a session's problems come
    together, and each had read its whole session again (a session of 100,000
    segments, each with an unpaired call: over 40 s for the kept 200)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.session: str | None = None
        self.starts: dict[int, int | None] = {}

    async def of(self, problem: _Problem) -> int | None:
        """The session-wide index of the problem entry: what ``rewind --keep`` counts."""
        if problem.session_id != self.session:
            self.starts = await segment_reads.flat_starts(self.db, problem.session_id)
            self.session = problem.session_id
        first = self.starts.get(problem.row_id)
        return None if first is None else first + (problem.offset or 0)


async def _finding(
    db: Database, problem: _Problem, indices: _FlatIndices, *, counted_only: bool
) -> Finding:
    """The finding for one bad segment; ``counted_only`` skips the index lookup of a
    finding past the per-kind limit, which is counted but not kept."""
    sid, rid = problem.session_id, problem.run_id
    if problem.kind == NON_TEXT_SESSION:
        return _non_text_finding(db, problem)
    if problem.kind == UNREADABLE_ROW:
        return Finding(
            UNREADABLE_ROW, "error", db.path,
            f"{db.name} session_runs id {problem.row_id} (run {rid}): {problem.reason}; "
            f"lovia cannot load session {sid!r} at all",
            rid, sid,
            Fix("clear", f"clear the session, every segment of it ({command('clear', sid)}), or repair the row by hand"),
        )  # fmt: skip
    index = None if counted_only else await indices.of(problem)
    fix = (
        Fix(
            "rewind",
            f"rewind the session to before entry {index}: that entry and everything after it go "
            f"({command('rewind', sid, '--keep', str(index))})",
            keep_entries=index,
        )
        if index is not None
        else None
    )
    where = (
        f"entry {index}"
        if index is not None
        else f"entry {problem.offset} of the segment"
    )
    return Finding(
        UNPAIRED_TOOL_CALL, "error", db.path,
        f"segment {rid} of session {sid!r}, {where}: {problem.reason}; providers reject such a transcript",
        rid, sid, fix,
    )  # fmt: skip


def _non_text_finding(db: Database, problem: _Problem) -> Finding:
    """A session whose id lovia never writes: lovia's session methods take
    text, so none of them reaches its segments. Text that is not UTF-8 cannot
    be bound at all, and lovia-tui lists that session but reads none of it:
    the finding spells out SQL that finds its rows."""
    sid = problem.session_id
    assert isinstance(sid, NonTextKey)
    where = f"session {sid} ({db.name} session_runs id {problem.row_id}, and any later)"
    if not isinstance(sid.stored, UndecodedText):
        return Finding(
            NON_TEXT_SESSION, "warning", db.path,
            f"{where}: its id is not text as lovia writes ids, so lovia cannot "
            "load or change it (lovia-tui shows it, and takes no action on it)",
            problem.run_id, sid,
        )  # fmt: skip
    literal = text_literal(sid)
    find = (
        f"; its rows: SELECT * FROM session_runs WHERE session_id = {literal}"
        if literal
        else ""
    )
    return Finding(
        NON_TEXT_SESSION, "error", db.path,
        f"{where}: its id is text that is not UTF-8, which no Python program "
        f"can bind, lovia included: lovia cannot load or change it, and "
        f"lovia-tui cannot read it either{find}",
        problem.run_id, sid,
    )  # fmt: skip


def _chunk(
    db: Database, conn: sqlite3.Connection, start: int, limit: int
) -> tuple[list[tuple[int, int]], list[_Problem]]:
    """Up to ``limit`` rows from id ``start``, read and checked in this thread
    on ``conn``: each row's id and weight, and the problems found. CAST:
    bytes straight to the parser, no text decoding on the way; a large value
    (its size read from its header: SQLite would read it whole to measure
    it, and hold it thrice to pass it) is a marker, read alone by _check."""
    ids = [
        row[0]
        for row in db.fetchall_in_thread(
            conn,
            "SELECT id FROM session_runs WHERE id >= ? ORDER BY id LIMIT ?",
            (start, limit),
        )
    ]
    if not ids:
        return [], []
    sizes = stored_sizes_on(db, conn, ids)
    large = [i for i in ids if sizes.get(i, 0) > STREAM_ABOVE]
    rows = db.fetchall_in_thread(
        conn,
        "SELECT id, session_id, run_id, CASE WHEN id IN "
        f"({', '.join('?' * len(large)) or 'NULL'}) "
        "THEN ? ELSE CAST(entries_json AS BLOB) END, CAST(meta_json AS BLOB) "
        "FROM session_runs WHERE id BETWEEN ? AND ? ORDER BY id",
        (*large, _LARGE, ids[0], ids[-1]),
    )
    weights = [(row[0], len(row[3] or b"") + len(row[4] or b"")) for row in rows]
    return weights, _check(db, rows)


_LARGE = b"\x00"
"""Stands for a large value in a chunk; a stored value of just these bytes is
read again, which changes nothing."""


async def segment_findings(
    db: Database, found: FindingList, *, progress: Progress
) -> None:
    """Scan every segment of ``db`` in id order, chunk by chunk.

    Each chunk is read and checked in a thread on a connection of the
    scan's own, so one chunk at a time is in memory.
    """
    bounds = await _bounds(db)
    if bounds is None:
        return
    low, high = bounds
    chunk, start = FIRST_CHUNK, low
    indices = _FlatIndices(db)
    reported: set[str] = set()  # sessions with a non-text id (one finding each)
    with contextlib.closing(db.thread_connection()) as conn:
        while start <= high:
            weights, problems = await in_thread(_chunk, db, conn, start, chunk)
            if not weights:
                return
            start = weights[-1][0] + 1
            # Size the next chunk to the byte budget from what these rows weighed.
            weight = sum(w for _, w in weights)
            chunk = max(
                1,
                min(
                    MAX_CHUNK,
                    2 * chunk,
                    int(CHUNK_BYTES * len(weights) / max(1, weight)),
                ),
            )
            for problem in problems:
                full = found.full(db.path, problem.kind)
                if problem.kind == NON_TEXT_SESSION:
                    if problem.session_id in reported:
                        continue
                    if not full:  # past the limit, segments are counted
                        reported.add(problem.session_id)
                found.add(await _finding(db, problem, indices, counted_only=full))
            progress(
                f"segments in {db.name}",
                min(1.0, (start - low) / max(1, high + 1 - low)),
            )
