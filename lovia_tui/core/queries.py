"""The read API over one open :class:`Database`: short statements, frozen results.

Every statement is bounded (by LIMIT, an index lookup or an id range) so that
it stays short on a million-segment file and never holds up lovia's writers.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson

from lovia_tui.core.database import Database
from lovia_tui.core.entries import (
    UnreadableError,
    parse_entries,
    parse_object,
    shorten,
    text_of,
)
from lovia_tui.core.entry_stream import COUNT_IN_SQL_UP_TO, count_stored
from lovia_tui.core.models import (
    Entry,
    RunInfo,
    SegmentInfo,
    SessionSummary,
    Unreadable,
)
from lovia_tui.core.web_queries import (
    checkpoint_only_sessions,
    web_chat_rows,
    web_chats,
    with_web_records,
)

WALK_CHUNK = 2_000
SEGMENT_CHUNK = 200
SCAN_CHUNK = 20_000
"""Most segments one search statement reads; fewer when they are large (SCAN_BYTES)."""
SCAN_BYTES = 3_500_000
"""What one search statement should read: ~45 ms of instr() at 1M segments on
this kind of machine (5 MB took 63 ms, over the 50 ms rule)."""
RUNS_CHUNK = 500
"""Checkpoints per statement when listing runs (their entries are counted)."""
INDEX_CHUNK = 4_000
"""Sessions per statement of the session index walk."""
LINK_CHUNK = 20_000
"""Index entries per statement when looking for the segments of runs."""
TITLE_WIDTH = 60
NO_ID_ABOVE = 1 << 62
"""Above every row id (SQLite's are 64-bit): the open end of an id range."""
# The first user message, as lovia serialises it, near the start of a segment.
_FIRST_USER = re.compile(r'"role":\s*"user",\s*"content":\s*("(?:[^"\\]|\\.)*")')


# Two subqueries, not MIN(id), MAX(id) in one: SQLite reads a lone MIN or MAX
# from the end of the primary key but scans a whole index for both at once.
_ID_BOUNDS = (
    "SELECT (SELECT MIN(id) FROM session_runs), (SELECT MAX(id) FROM session_runs)"
)


def is_missing_table(exc: sqlite3.Error) -> bool:
    return "no such table" in str(exc)


async def recent_session_ids(
    db: Database, limit: int, *, before_id: int | None = None
) -> list[tuple[str, int, float]]:
    """(session_id, last segment id, its created_at), most recently active first.

    A newest-first walk of ``session_runs`` by primary key: it touches only as
    many rows as it takes to meet ``limit`` distinct sessions. The walk reads
    only ids and session ids; ``created_at`` is stored after the entries, so it
    is read for the chosen rows alone.
    """
    if not db.stores.session:
        return []
    seen: dict[str, int] = {}
    upper = before_id
    while len(seen) < limit:
        if upper is None:
            rows = await db.fetchall(
                "SELECT id, session_id FROM session_runs ORDER BY id DESC LIMIT ?",
                (WALK_CHUNK,),
            )
        else:
            rows = await db.fetchall(
                "SELECT id, session_id FROM session_runs WHERE id < ? "
                "ORDER BY id DESC LIMIT ?",
                (upper, WALK_CHUNK),
            )
        if not rows:
            break
        for row_id, session_id in rows:
            if session_id not in seen:
                seen[session_id] = row_id
                if len(seen) == limit:
                    break
        upper = rows[-1][0]
    ids = list(seen.values())
    created: dict[int, float] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        created.update(
            await db.fetchall(
                f"SELECT id, created_at FROM session_runs WHERE id IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
        )
    return [
        (sid, row_id, created[row_id])
        for sid, row_id in seen.items()
        if row_id in created
    ]


async def session_index(
    db: Database,
) -> AsyncIterator[tuple[dict[str, tuple[int, int]], float]]:
    """Every session's (runs, last id), chunk by chunk of ``INDEX_CHUNK`` sessions.

    Read from lovia's ``(session_id, id)`` index alone, in session id order
    (keyset pagination), so each session comes whole in one chunk and no
    statement reads more than one chunk: about 25 ms each, 0.6 s in all, at a
    million segments (by id ranges through the table it was 9 s). Yields each
    chunk's counts and the fraction of segments counted so far.
    """
    if not db.stores.session:
        return
    total = (await db.fetchone("SELECT COUNT(*) FROM session_runs"))[0]
    after: str | None = None
    counted = 0
    while True:
        where, params = (
            ("", ()) if after is None else ("WHERE session_id > ? ", (after,))
        )
        rows = await db.fetchall(
            f"SELECT session_id, COUNT(*), MAX(id) FROM session_runs {where}"
            "GROUP BY session_id ORDER BY session_id LIMIT ?",
            (*params, INDEX_CHUNK),
        )
        if not rows:
            return
        counted += sum(row[1] for row in rows)
        done = len(rows) < INDEX_CHUNK
        yield (
            {sid: (count, last) for sid, count, last in rows},
            1.0 if done else min(1.0, counted / max(1, total)),
        )
        if done:
            return
        after = rows[-1][0]


async def recent_sessions(db: Database, limit: int) -> list[tuple[str, float]]:
    """(session_id, last activity) of the newest sessions, web chats included,
    in :func:`ranked_sessions` order."""
    return [(sid, when) for sid, when, _ in await ranked_sessions(db, limit)]


async def ranked_sessions(db: Database, limit: int) -> list[tuple[str, float, bool]]:
    """(session_id, last activity, pinned) of the newest sessions, as lovia web
    orders its sidebar: pinned chats first, then by activity, a chat's being
    its ``updated_at`` (bumped when a run starts) or its last segment if later."""
    found = {
        sid: float(_number(created) or 0)
        for sid, _, created in await recent_session_ids(db, limit)
    }
    found.update(await checkpoint_only_sessions(db, limit))
    chats = await web_chats(db, limit)
    chats.update(await web_chat_rows(db, [sid for sid in found if sid not in chats]))
    ranked = []
    for sid in dict.fromkeys([*found, *chats]):
        updated, pinned = chats.get(sid, (None, False))
        when = max(found.get(sid) or 0, updated or 0)
        ranked.append((sid, when, pinned))
    ranked.sort(key=lambda item: (item[2], item[1]), reverse=True)
    return ranked[:limit]


async def session_summary(db: Database, session_id: str) -> SessionSummary | None:
    """One session's run count, last activity, title and pin (all index lookups)."""
    return (await session_summaries(db, [session_id])).get(session_id)


async def _chat_only_summary(db: Database, session_id: str) -> SessionSummary | None:
    """A session with no segment: a web chat row, or only a checkpoint its web
    run record ties to the session (the chat row gone)."""
    if not db.stores.chat:
        return None
    row = await db.fetchone(
        "SELECT updated_at FROM chat_sessions WHERE id = ?", (session_id,)
    )
    if row is None and db.stores.checkpoint:
        row = await db.fetchone(
            "SELECT MAX(h.updated_at) FROM chat_runs r JOIN snapshot_heads h "
            "ON h.run_id = r.id WHERE r.session_id = ?",
            (session_id,),
        )
    if row is None or row[0] is None:
        return None
    return SessionSummary(
        db.path, session_id, 0, 0, row[0], await session_title(db, session_id)
    )


async def session_title(db: Database, session_id: str) -> str:
    """The web UI's chat title when there is one, else the first user message."""
    if db.stores.chat:
        row = await db.fetchone(
            "SELECT title FROM chat_sessions WHERE id = ?", (session_id,)
        )
        if row and row[0]:
            return shorten(str(row[0]), TITLE_WIDTH)
    if not db.stores.session:
        return ""
    row = await db.fetchone(
        "SELECT substr(entries_json, 1, 4000) FROM session_runs "
        "WHERE session_id = ? ORDER BY id LIMIT 1",
        (session_id,),
    )
    return _title_from(row[0] if row else None)


def _title_from(head: Any) -> str:
    """The first user message in the start of a segment's stored JSON."""
    # A BLOB (never written by lovia) has no title to find.
    if isinstance(head, str):
        match = _FIRST_USER.search(head)
        if match:
            try:
                return shorten(text_of(orjson.loads(match.group(1))), TITLE_WIDTH)
            except orjson.JSONDecodeError:
                return ""
    return ""


async def session_summaries(
    db: Database, session_ids: list[str]
) -> dict[str, SessionSummary]:
    """:func:`session_summary` of several sessions in three statements, not three each.

    A screenful of summaries must not queue dozens of statements on the
    connection behind the background index (each waits for one of its chunks).
    """
    found: dict[str, SessionSummary] = {}
    wanted = list(dict.fromkeys(session_ids))
    for start in range(0, len(wanted) if db.stores.session else 0, 200):
        chunk = wanted[start : start + 200]
        counts = await db.fetchall(
            f"SELECT session_id, COUNT(*), MAX(id), MIN(id) FROM session_runs "
            f"WHERE session_id IN ({','.join('?' * len(chunk))}) GROUP BY session_id",
            tuple(chunk),
        )
        lasts = [row[2] for row in counts]
        firsts = [row[3] for row in counts]
        created = dict(await _by_ids(db, "created_at", lasts))
        heads = dict(await _by_ids(db, "substr(entries_json, 1, 4000)", firsts))
        chat_titles: dict[str, Any] = {}
        if db.stores.chat and counts:
            chat_titles = dict(
                await db.fetchall(
                    f"SELECT id, title FROM chat_sessions WHERE id IN ({','.join('?' * len(counts))})",
                    tuple(row[0] for row in counts),
                )
            )
        for session_id, runs, last_id, first_id in counts:
            chat_title = chat_titles.get(session_id)
            found[session_id] = SessionSummary(
                file=db.path,
                session_id=session_id,
                runs=runs,
                last_id=last_id,
                last_activity=created.get(last_id),
                title=shorten(str(chat_title), TITLE_WIDTH)
                if chat_title
                else _title_from(heads.get(first_id)),
            )
    for session_id in wanted:
        if session_id not in found:
            summary = await _chat_only_summary(db, session_id)
            if summary is not None:
                found[session_id] = summary
    # As lovia web shows them: pinned, and active when a run last started.
    for sid, (updated, pinned) in (await web_chat_rows(db, list(found))).items():
        summary = found[sid]
        found[sid] = replace(
            summary,
            pinned=pinned,
            last_activity=max(_number(summary.last_activity) or 0, updated) or None,
        )
    return found


async def _by_ids(db: Database, column: str, ids: list[int]) -> list[Any]:
    if not ids:
        return []
    return await db.fetchall(
        f"SELECT id, {column} FROM session_runs WHERE id IN ({','.join('?' * len(ids))})",
        tuple(ids),
    )


async def list_sessions(db: Database, limit: int) -> list[SessionSummary]:
    """The most recently active sessions, web chats without a segment included."""
    summaries = []
    for session_id, _ in await recent_sessions(db, limit):
        summary = await session_summary(db, session_id)
        if summary is not None:
            summaries.append(summary)
    return summaries


def _number(value: Any) -> int | float | None:
    """A stored number, else None: a hostile row may hold any JSON where lovia writes one."""
    return (
        value
        if isinstance(value, int | float) and not isinstance(value, bool)
        else None
    )


def _segment(
    db: Database, row: Any, count: int | None, first: int | None
) -> SegmentInfo:
    row_id, session_id, run_id, created_at, size, meta_json = row[:6]
    unreadable = None
    try:
        meta = parse_object(meta_json) or {}
    except UnreadableError as exc:
        meta = {}
        unreadable = Unreadable(f"{db.name} session_runs id {row_id} meta", str(exc))
    timing = meta.get("timing") if isinstance(meta.get("timing"), dict) else {}
    if count is None and unreadable is None:
        unreadable = Unreadable(
            f"{db.name} session_runs id {row_id} (run {run_id})",
            "entries_json is not valid JSON",
        )
    return SegmentInfo(
        file=db.path,
        row_id=row_id,
        session_id=session_id,
        run_id=run_id,
        entry_count=count,
        first_index=first,
        created_at=created_at,
        started_at=_number(timing.get("started_at")),
        finished_at=_number(timing.get("finished_at")),
        has_context_state=bool(meta.get("context_state")),
        has_notice=bool(meta.get("context_notice")),
        stored_bytes=size or 0,
        unreadable=unreadable,
    )


async def segments(db: Database, session_id: str) -> list[SegmentInfo]:
    """A session's segments in run order, each with its first flat index.

    Entry counts come from SQLite's ``json_array_length`` in chunks, so no
    segment's JSON crosses into Python here. Once a segment is unreadable the
    flat indices after it are unknown and left ``None``: never guessed.
    """
    result: list[SegmentInfo] = []
    if not db.stores.session:
        return result
    after = 0
    next_index: int | None = 0
    while True:
        rows = await _segment_rows(
            db, "id > ?2", "id", (session_id, after, SEGMENT_CHUNK)
        )
        if not rows:
            return result
        for row in rows:
            count = row[6]
            result.append(_segment(db, row, count, next_index))
            next_index = (
                None if count is None or next_index is None else next_index + count
            )
        after = rows[-1][0]


async def newest_segments(
    db: Database, session_id: str, limit: int, before_id: int | None = None
) -> tuple[list[SegmentInfo], int]:
    """Up to ``limit`` segments of a session older than ``before_id`` (else its
    newest), in run order, and how many older segments remain.

    Costs the same at any session length: the rows come newest first by
    lovia's ``(session_id, id)`` index and the remainder is counted from it.
    Their ``first_index`` is None: it needs every older segment's entry
    count, which :func:`flat_starts` reads (in the background).
    """
    if not db.stores.session:
        return [], 0
    upper = NO_ID_ABOVE if before_id is None else before_id
    rows = await _segment_rows(db, "id < ?2", "id DESC", (session_id, upper, limit))
    rows.reverse()
    older = rows[0][7] - len(rows) if rows else 0
    return [_segment(db, row, row[6], None) for row in rows], older


async def oldest_segments(
    db: Database, session_id: str, limit: int, after_id: int
) -> tuple[list[SegmentInfo], int]:
    """Up to ``limit`` segments of a session newer than ``after_id``, in run
    order, and how many newer ones remain (as :func:`newest_segments`)."""
    if not db.stores.session:
        return [], 0
    rows = await _segment_rows(db, "id > ?2", "id", (session_id, after_id, limit))
    newer = rows[0][7] - len(rows) if rows else 0
    return [_segment(db, row, row[6], None) for row in rows], newer


async def flat_starts(db: Database, session_id: str) -> dict[int, int | None]:
    """The first flat index of each of a session's segments, by row id.

    Every segment's entries are counted (``json_array_length`` in SQLite,
    ``SEGMENT_CHUNK`` rows a statement); after an unreadable segment the
    indices are unknown and ``None``, never guessed.
    """
    starts: dict[int, int | None] = {}
    if not db.stores.session:
        return starts
    after = 0
    next_index: int | None = 0
    while True:
        rows = await _counts(db, session_id, after)
        if not rows:
            return starts
        for row_id, count in rows:
            starts[row_id] = next_index
            next_index = (
                None if count is None or next_index is None else next_index + count
            )
        after = rows[-1][0]


async def _segment_rows(
    db: Database, where: str, order: str, params: tuple[str, int, int]
) -> list[Any]:
    """Segment rows of session ?1 matching ``where`` (about id ?2), at most ?3;
    each row ends with how many of the session's segments match ``where``
    (counted from lovia's index, once: the subquery is not correlated)."""
    base = (
        "SELECT id, session_id, run_id, created_at, length(entries_json), meta_json, {count}, "
        f"(SELECT COUNT(*) FROM session_runs WHERE session_id = ?1 AND {where}) "
        f"FROM session_runs WHERE session_id = ?1 AND {where} ORDER BY {order} LIMIT ?3"
    )
    return await _with_counts(db, base, params, 6, 4)


async def _counts(db: Database, session_id: str, after: int) -> list[Any]:
    base = "SELECT id, {count} FROM session_runs WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?"
    return await _with_counts(db, base, (session_id, after, SEGMENT_CHUNK), 1)


async def _with_counts(
    db: Database,
    base: str,
    params: tuple[Any, ...],
    count_at: int,
    size_at: int | None = None,
) -> list[Any]:
    """Run ``base`` with each row's entry count in place of ``{count}`` (column
    ``count_at``; the row id first). SQLite's count holds the value twice
    (400 MB for one 200 MB output): a row over ``COUNT_IN_SQL_UP_TO`` is
    counted by :func:`count_stored`, reading it once. Where ``base`` reads
    the value's length too (column ``size_at``), counting in the same row
    would hold it twice again: the counts are read by a second statement."""
    if size_at is None:
        rows = await _counted(db, base, params)
    else:
        rows = await db.fetchall(base.format(count="NULL"), params)
        ids = [row[0] for row in rows if (row[size_at] or 0) <= COUNT_IN_SQL_UP_TO]
        counts = dict(
            await _counted(
                db,
                "SELECT id, {count} FROM session_runs "
                f"WHERE id IN ({', '.join('?' * len(ids))})",
                tuple(ids),
            )
        )
        rows = [
            (*row[:count_at], counts.get(row[0], -1), *row[count_at + 1 :])
            for row in rows
        ]
    for number, row in enumerate(rows):
        if row[count_at] == -1:
            count = await count_stored(db, row[0])
            rows[number] = (*row[:count_at], count, *row[count_at + 1 :])
    return rows


async def _counted(db: Database, base: str, params: tuple[Any, ...]) -> list[Any]:
    """``base`` with ``{count}`` the count in SQL, -1 for a row too large for it."""
    huge = (
        f"CASE WHEN length(CAST(entries_json AS BLOB)) > {COUNT_IN_SQL_UP_TO} "
        "THEN -1 ELSE {} END"
    )
    try:
        return list(
            await db.fetchall(
                base.format(count=huge.format("json_array_length(entries_json)")),
                params,
            )
        )
    except sqlite3.OperationalError as exc:
        if "JSON" not in str(exc):
            raise
        # A malformed row among these: count row by row, guarded.
        return list(
            await db.fetchall(base.format(count=huge.format(_SAFE_COUNT)), params)
        )


async def segment_entries(db: Database, segment: SegmentInfo) -> list[Entry]:
    """The entries of one segment with their flat indices (raises UnreadableError)."""
    row = await db.fetchone(
        "SELECT entries_json FROM session_runs WHERE id = ?", (segment.row_id,)
    )
    return _entries(segment, None if row is None else row[0])


async def batch_entries(
    db: Database, segments: list[SegmentInfo]
) -> dict[int, list[Entry] | UnreadableError]:
    """The entries of a batch of segments, by row id, in one statement (one
    round trip a segment kept a screenful waiting on the busy event loop); an
    unreadable or vanished segment maps to the error saying so."""
    ids = [segment.row_id for segment in segments]
    stored = (
        dict(
            await db.fetchall(
                f"SELECT id, entries_json FROM session_runs WHERE id IN ({','.join('?' * len(ids))})",
                tuple(ids),
            )
        )
        if ids
        else {}
    )
    found: dict[int, list[Entry] | UnreadableError] = {}
    for segment in segments:
        try:
            found[segment.row_id] = _entries(segment, stored.get(segment.row_id))
        except UnreadableError as exc:
            found[segment.row_id] = exc
    return found


def _entries(segment: SegmentInfo, stored: str | None) -> list[Entry]:
    if stored is None:
        raise UnreadableError("segment no longer exists")
    first = segment.first_index
    return [
        Entry(None if first is None else first + offset, entry)
        for offset, entry in enumerate(parse_entries(stored))
    ]


async def runs_in_session(
    db: Database, session_id: str, run_ids: list[str]
) -> set[str]:
    """Which of ``run_ids`` have a segment in the session (lovia's unique index)."""
    if not db.stores.session or not run_ids:
        return set()
    found: set[str] = set()
    for start in range(0, len(run_ids), 500):
        chunk = tuple(run_ids[start : start + 500])
        rows = await db.fetchall(
            f"SELECT run_id FROM session_runs WHERE session_id = ? AND run_id IN ({','.join('?' * len(chunk))})",
            (session_id, *chunk),
        )
        found.update(row[0] for row in rows)
    return found


async def appended_runs(db: Database, run_ids: list[str]) -> list[tuple[str, str]]:
    """(run_id, session_id) of the given runs that have a segment, in session id order.

    No index leads from a run id to its segment (lovia's is on (session_id,
    run_id)), so this walks that index once, in ranges of about LINK_CHUNK
    entries found by keyset: each statement stays short at any size, where one
    ``run_id IN (...)`` scanned the whole index (0.3-0.6 s at 1M segments) per
    500 runs.
    """
    if not db.stores.session or not run_ids:
        return []
    found: list[tuple[str, str]] = []
    for start in range(0, len(run_ids), 10_000):
        chunk = tuple(run_ids[start : start + 10_000])
        marks = ",".join("?" * len(chunk))
        after: str | None = None
        while True:
            above = "" if after is None else "WHERE session_id > ? "
            bound = await db.fetchone(
                f"SELECT session_id FROM session_runs {above}ORDER BY session_id LIMIT 1 OFFSET ?",
                (() if after is None else (after,)) + (LINK_CHUNK,),
            )
            upper = bound[0] if bound else None
            where = [] if after is None else ["session_id > ?"]
            params: tuple[Any, ...] = () if after is None else (after,)
            if upper is not None:
                where.append("session_id <= ?")
                params += (upper,)
            where.append(f"run_id IN ({marks})")
            found += await db.fetchall(
                f"SELECT run_id, session_id FROM session_runs WHERE {' AND '.join(where)} "
                "ORDER BY session_id, run_id",
                params + chunk,
            )
            if upper is None:
                break
            after = upper
    return found


def run_info(db: Database, row: Any) -> RunInfo:
    """A checkpoint from its row (``RUN_COLUMNS``); an unparsable head is marked, never fatal."""
    run_id, head_json, updated_at, entries, last_seq = row
    unreadable = None
    try:
        head = parse_object(head_json) or {}
        status = str(head["status"])
        agent = str(head["agent_name"])
        turns = int(head.get("turns") or 0)
        saved_at = float(head.get("updated_at") or updated_at)
    except (UnreadableError, KeyError, TypeError, ValueError) as exc:
        head, status, agent, turns, saved_at = {}, "unreadable", "?", 0, updated_at
        reason = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        unreadable = Unreadable(f"{db.name} snapshot_heads run {run_id}", reason)
    usage = head.get("usage") if isinstance(head.get("usage"), dict) else {}
    context_state = head.get("context_state")
    pending_handoff = head.get("pending_handoff")
    return RunInfo(
        file=db.path,
        run_id=run_id,
        agent_name=agent,
        status=status,
        turns=turns,
        usage={
            key: value for key, value in usage.items() if _number(value) is not None
        },
        output=head.get("output"),
        error=head.get("error") if isinstance(head.get("error"), dict) else None,
        last_input_tokens=_number(head.get("last_input_tokens")),
        context_state=context_state if isinstance(context_state, dict) else {},
        pending_handoff=pending_handoff if isinstance(pending_handoff, str) else None,
        updated_at=saved_at,
        started_at=_number(head.get("started_at")),
        entries=entries or 0,
        last_seq=last_seq,
        head=head,
        unreadable=unreadable,
    )


_SAFE_COUNT = (
    "CASE WHEN json_valid(entries_json) THEN json_array_length(entries_json) END"
)
RUN_COLUMNS = (
    "h.run_id, h.head_json, h.updated_at, "
    f"(SELECT SUM({_SAFE_COUNT}) FROM snapshot_turns t WHERE t.run_id = h.run_id), "
    "(SELECT MAX(seq) FROM snapshot_turns t WHERE t.run_id = h.run_id)"
)
"""What :func:`run_info` reads of a checkpoint (``h`` is ``snapshot_heads``)."""
_RUNS_SQL = f"SELECT {RUN_COLUMNS} FROM snapshot_heads h WHERE {{where}} ORDER BY h.run_id LIMIT ?"


async def runs(db: Database, run_id: str | None = None) -> list[RunInfo]:
    """Every checkpoint in the file (or one), most recently saved first."""
    if not db.stores.checkpoint:
        return []
    if run_id is not None:
        rows = await db.fetchall(_RUNS_SQL.format(where="h.run_id = ?"), (run_id, 1))
        return await with_web_records(db, [run_info(db, row) for row in rows])
    # By run id in chunks (the primary key): counting every checkpoint's
    # entries in one statement took 62 ms at 2,000 checkpoints.
    found: list[RunInfo] = []
    after = ""
    while rows := await db.fetchall(
        _RUNS_SQL.format(where="h.run_id > ?"), (after, RUNS_CHUNK)
    ):
        found.extend(run_info(db, row) for row in rows)
        after = rows[-1][0]
    found = await with_web_records(db, found)
    return sorted(found, key=lambda run: run.updated_at, reverse=True)


async def snapshot_entries(
    db: Database, run_id: str
) -> tuple[list[Entry], list[Unreadable]]:
    """A checkpoint's own entries in seq order; unreadable batches are reported."""
    if not db.stores.checkpoint:
        return [], []
    entries, problems, _ = await snapshot_entries_after(db, run_id, -1)
    return entries, problems


async def snapshot_entries_after(
    db: Database, run_id: str, after_seq: int
) -> tuple[list[Entry], list[Unreadable], int]:
    """The entries a checkpoint stored after batch ``after_seq``, and its last seq.

    A primary-key range, so following a live run reads only its new batches;
    the returned seq is where the next call picks up.
    """
    rows = await db.fetchall(
        "SELECT seq, entries_json FROM snapshot_turns WHERE run_id = ? AND seq > ? "
        "ORDER BY seq",
        (run_id, after_seq),
    )
    entries: list[Entry] = []
    problems: list[Unreadable] = []
    for seq, text in rows:
        try:
            entries.extend(Entry(None, data) for data in parse_entries(text))
        except UnreadableError as exc:
            problems.append(
                Unreadable(f"{db.name} snapshot_turns run {run_id} seq {seq}", str(exc))
            )
    return entries, problems, rows[-1][0] if rows else after_seq


async def search_segments(
    db: Database, needle: str
) -> AsyncIterator[tuple[list[tuple[str, int]], float]]:
    """Segments whose stored JSON contains ``needle``, newest first, in id chunks.

    The needle is escaped the way lovia's ``json.dumps(ensure_ascii=False)``
    stores text, so quotes and newlines match too. Yields (matches, fraction).
    """
    if not db.stores.session or not needle:
        return
    stored = orjson.dumps(needle).decode()[1:-1]
    bounds = await db.fetchone(_ID_BOUNDS)
    if not bounds or bounds[0] is None:
        return
    low, high = bounds
    upper = high + 1
    # Size the id ranges by what an id weighs on disk (the file over the id
    # span): ~SCAN_BYTES a statement, ~400 rows of 8 KB, whatever the rows
    # weigh, so a scan never holds the connection, or without WAL a writer,
    # for long. Timing each statement instead feeds back the UI's own delays.
    pages = await db.fetchone(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
    )
    per_id = (pages[0] if pages and pages[0] else 0) / max(1, high + 1 - low)
    chunk = max(1, min(SCAN_CHUNK, int(SCAN_BYTES / max(per_id, 1.0))))
    while upper > low:
        lower = max(low, upper - chunk)
        rows = await db.fetchall(
            "SELECT session_id, id FROM session_runs WHERE id >= ? AND id < ? "
            "AND instr(entries_json, ?) > 0 ORDER BY id DESC",
            (lower, upper, stored),
        )
        upper = lower
        yield (
            [(sid, row_id) for sid, row_id in rows],
            (high + 1 - upper) / max(1, high + 1 - low),
        )
