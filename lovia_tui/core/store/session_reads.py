"""Reads of a file's sessions: the session list, summaries, titles and the session index.

Every statement is bounded (by LIMIT, an index lookup or an id range) so that
it stays short on a million-segment file and never holds up lovia's writers.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from typing import Any

import orjson

from lovia_tui.core.entries import (
    shorten,
    text_of,
)
from lovia_tui.core.models import (
    SessionSummary,
)
from lovia_tui.core.store.connect import as_stored
from lovia_tui.core.store.database import NO_ID_ABOVE, Database
from lovia_tui.core.store.pace import Cut, Pace, paced
from lovia_tui.core.store.web_chats import parent_ids
from lovia_tui.core.store.web_reads import (
    checkpoint_only_sessions,
    web_chat_rows,
    web_chats,
)
from lovia_tui.core.stored import stored_key, stored_time

WALK_CHUNK = 1_000
"""Most rows per statement of the newest-first walk: ~25 ms on a cold cache at
8 KB a row (each walk starts smaller: :mod:`~lovia_tui.core.store.pace`)."""
INDEX_CHUNK = 4_000
"""Most sessions per statement of the session index walk (424 ms cold at a
million segments: it starts smaller)."""
TITLE_WIDTH = 500
"""Characters of a session's title kept (one line, whitespace collapsed):
wider than a list's title column gets, even maximized, so the list cuts it
with "…" at the column's real edge (60 cut it mid-column on a wide screen);
bounded, as a first message may be megabytes."""
# The first user message, as lovia serialises it, near the start of a segment.
_FIRST_USER = re.compile(
    r'"role":\s*"user",\s*"content":\s*(?:\[\{"text":\s*)?"((?:[^"\\]|\\.)*)(")?'
)
"""A user message's text, or the text of its first part (lovia stores a text
part's ``text`` first): an attachment after it may run past the start read,
and so may a long message itself (its start is the title)."""
_CUT_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,3}$")
"""A ``\\uXXXX`` escape the start read cut short."""


async def recent_session_ids(
    db: Database, limit: int, *, before_id: int | None = None
) -> list[tuple[str, int, float | None]]:
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
    pace = Pace(WALK_CHUNK)
    while len(seen) < limit:
        below = NO_ID_ABOVE if upper is None else upper
        rows = await paced(pace, partial(_newest_rows, db, below))
        pace.took(len(rows))
        if not rows:
            break
        for row_id, stored in rows:
            session_id = stored_key(stored)
            if session_id not in seen:
                seen[session_id] = row_id
                if len(seen) == limit:
                    break
        upper = rows[-1][0]
    ids = list(seen.values())
    created: dict[int, Any] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        created.update(
            await db.fetchall(
                f"SELECT id, created_at FROM session_runs WHERE id IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
        )
    return [
        (sid, row_id, stored_time(created[row_id]))
        for sid, row_id in seen.items()
        if row_id in created
    ]


async def session_index(
    db: Database,
) -> AsyncIterator[tuple[dict[str, tuple[int, int]], float]]:
    """Every session's (runs, last id), chunk by chunk of up to ``INDEX_CHUNK`` sessions.

    Read from lovia's ``(session_id, id)`` index alone, in session id order
    (keyset pagination), so each session comes whole in one chunk and no
    statement reads more than one chunk: about 25 ms each, 0.6 s in all, at a
    million segments (by id ranges through the table it was 9 s). Yields each
    chunk's counts and about the fraction of segments counted so far.
    """
    if not db.stores.session:
        return
    # The highest id stands for the row count in the fraction: counting the
    # rows reads the whole index (1 s cold at a million), the highest id one page.
    total = (await db.fetchrow("SELECT MAX(id) FROM session_runs"))[0] or 0
    after: tuple[Any, int] | None = None
    counted = 0
    pace = Pace(INDEX_CHUNK)
    while True:
        rows = await paced(pace, partial(_sessions_after, db, after))
        asked = pace.size
        pace.took(len(rows))
        if not rows:
            return
        counted += sum(row[1] for row in rows)
        done = len(rows) < asked
        yield (
            {stored_key(sid): (count, last) for sid, count, last in rows},
            1.0 if done else min(1.0, counted / max(1, total)),
        )
        if done:
            return
        after = (rows[-1][0], rows[-1][2])


async def _newest_rows(
    db: Database, below: int, rows: int, cut: Cut | None
) -> list[Any]:
    """(id, session_id) of the ``rows`` newest segments below id ``below``."""
    return await db.fetchall(
        "SELECT id, session_id FROM session_runs WHERE id < ? ORDER BY id DESC LIMIT ?",
        (below, rows),
        cut=cut,
    )


async def _sessions_after(
    db: Database, after: tuple[Any, int] | None, sessions: int, cut: Cut | None
) -> list[Any]:
    """(session_id, runs, last id) of ``sessions`` sessions after ``after`` (a
    session id and the id of one of its rows), in session id order, from
    lovia's index."""
    where = (
        ""
        if after is None
        else f"WHERE session_id > {as_stored('session_id', '?2', '?1')} "
    )
    return await db.fetchall(
        f"SELECT session_id, COUNT(*), MAX(id) FROM session_runs {where}"
        "GROUP BY session_id ORDER BY session_id LIMIT ?3",
        (*(after or (None, None)), sessions),
        cut=cut,
    )


async def recent_sessions(db: Database, limit: int) -> list[tuple[str, float]]:
    """(session_id, last activity) of the newest sessions, web chats included,
    in :func:`ranked_sessions` order."""
    return [(sid, when) for sid, when, _ in await ranked_sessions(db, limit)]


async def ranked_sessions(db: Database, limit: int) -> list[tuple[str, float, bool]]:
    """(session_id, last activity, pinned) of the newest sessions, as lovia web
    orders its sidebar: pinned chats first, then by activity, a chat's being
    its ``updated_at`` (bumped when a run starts) or its last segment if later."""
    found = {
        sid: created or 0.0  # an unreadable time ranks as the oldest
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
    # IS: lovia web's chat id may be NULL (a TEXT primary key allows it).
    row = await db.fetchone(
        "SELECT updated_at FROM chat_sessions WHERE id IS ?", (session_id,)
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
        db.path,
        session_id,
        0,
        0,
        stored_time(row[0]),
        await session_title(db, session_id),
    )


async def session_title(db: Database, session_id: str) -> str:
    """The web UI's chat title when there is one, else the first user message."""
    if db.stores.chat:
        row = await db.fetchone(
            "SELECT title FROM chat_sessions WHERE id IS ?", (session_id,)
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
            text, closed = match.groups()
            if not closed:
                text = _CUT_ESCAPE.sub("", text)
            try:
                return shorten(text_of(orjson.loads(f'"{text}"')), TITLE_WIDTH)
            except orjson.JSONDecodeError:  # a surrogate pair cut in two
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
        for stored, runs, last_id, first_id in counts:
            chat_title = chat_titles.get(stored)
            session_id = stored_key(stored)
            found[session_id] = SessionSummary(
                file=db.path,
                session_id=session_id,
                runs=runs,
                last_id=last_id,
                last_activity=stored_time(created.get(last_id)),
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
            last_activity=max(summary.last_activity or 0, updated) or None,
        )
    for sid, parent in (await parent_ids(db, list(found))).items():
        found[sid] = replace(found[sid], parent_id=parent)
    return found


async def summaries_in_order(
    db: Database, session_ids: list[str]
) -> list[SessionSummary]:
    """The :func:`session_summaries` of ``session_ids`` in their order (those
    that read: a session whose id is not UTF-8 has none)."""
    found = await session_summaries(db, session_ids)
    return [found[sid] for sid in session_ids if sid in found]


async def _by_ids(db: Database, column: str, ids: list[int]) -> list[Any]:
    if not ids:
        return []
    return await db.fetchall(
        f"SELECT id, {column} FROM session_runs WHERE id IN ({','.join('?' * len(ids))})",
        tuple(ids),
    )
