"""Reads of a file's checkpoints (``snapshot_heads``, ``snapshot_turns``) and the runs they hold."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from lovia_tui.core.entries import (
    UnreadableError,
    parse_entries,
    parse_object,
    parse_stored,
)
from lovia_tui.core.models import (
    Entry,
    RunInfo,
    Unreadable,
)
from lovia_tui.core.run_status import UNREADABLE, RunStatus, status_text
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.web_reads import (
    with_web_records,
)
from lovia_tui.core.stored import (
    SAFE_ENTRY_COUNT,
    stored_key,
    stored_number,
    stored_time,
    unbindable,
)

RUNS_CHUNK = 200
"""Heads whose full rows one statement reads (their entries are counted):
500 took up to 46 ms on a busy machine."""


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
        found.update(stored_key(row[0]) for row in rows)
    return found


def head_fields(
    head_json: Any, updated_at: Any
) -> tuple[dict[str, Any], str, str, int, float | None]:
    """A head's (head, status, agent, turns, saved at), as lovia needs them;
    raises UnreadableError (or KeyError, TypeError, ValueError) where it cannot.
    The status is shown as stored (:func:`status_text`); a save time that is no
    number is None."""
    try:
        head = orjson.loads(head_json)  # the usual head, in one call (a fleet has 1M)
    except (orjson.JSONDecodeError, TypeError):
        head = None
    if not isinstance(head, dict):  # decoded as the read layer decodes it, or why not
        head = parse_stored(parse_object, head_json) or {}
    if head.get("status") is None:
        raise KeyError("status")
    status = status_text(head["status"])
    agent = str(head["agent_name"])
    turns = int(head.get("turns") or 0)
    saved_at = stored_time(head.get("updated_at")) or stored_time(updated_at)
    return head, status, agent, turns, saved_at


HEAD_ERRORS = (UnreadableError, KeyError, TypeError, ValueError)
"""What :func:`head_fields` raises for a head lovia cannot load."""


def head_completed(head_json: Any, updated_at: Any) -> bool:
    """Whether a head loads and says ``completed``, as :func:`head_fields`
    reads it: the usual head decided by one parse and a few lookups (the
    doctor asks this of a fleet's million heads; :func:`head_fields` took
    0.65 s more), any other as :func:`head_fields` reads it."""
    try:
        head = orjson.loads(head_json)
    except (orjson.JSONDecodeError, TypeError):
        head = None
    if (
        type(head) is dict
        and head.get("status") == RunStatus.COMPLETED
        and "agent_name" in head
        and type(head.get("turns")) in (int, type(None))
    ):
        return True
    try:
        return head_fields(head_json, updated_at)[1] == RunStatus.COMPLETED
    except HEAD_ERRORS:
        return False


def run_info(db: Database, row: Any) -> RunInfo:
    """A checkpoint from its row (``RUN_COLUMNS``); an unparsable head is marked, never fatal."""
    run_id, head_json, updated_at, entries, last_seq = row
    run_id = stored_key(run_id)
    unreadable = None
    try:
        head, status, agent, turns, saved_at = head_fields(head_json, updated_at)
    except HEAD_ERRORS as exc:
        head, status, agent, turns = {}, UNREADABLE, "?", 0
        saved_at = stored_time(updated_at)
        reason = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        unreadable = Unreadable(f"{db.name} snapshot_heads run {run_id}", reason)
    usage = head.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    context_state = head.get("context_state")
    pending_handoff = head.get("pending_handoff")
    return RunInfo(
        file=db.path,
        run_id=run_id,
        agent_name=agent,
        status=status,
        turns=turns,
        usage={
            key: value
            for key, value in usage.items()
            if stored_number(value) is not None
        },
        output=head.get("output"),
        error=head.get("error") if isinstance(head.get("error"), dict) else None,
        last_input_tokens=stored_number(head.get("last_input_tokens")),
        context_state=context_state if isinstance(context_state, dict) else {},
        pending_handoff=pending_handoff if isinstance(pending_handoff, str) else None,
        updated_at=saved_at,
        started_at=stored_number(head.get("started_at")),
        entries=entries or 0,
        last_seq=last_seq,
        head=head,
        unreadable=unreadable,
    )


RUN_COLUMNS = (
    "h.run_id, h.head_json, h.updated_at, "
    f"(SELECT SUM({SAFE_ENTRY_COUNT}) FROM snapshot_turns t WHERE t.run_id = h.run_id), "
    "(SELECT MAX(seq) FROM snapshot_turns t WHERE t.run_id = h.run_id)"
)
"""What :func:`run_info` reads of a checkpoint (``h`` is ``snapshot_heads``)."""
_RUNS_SQL = f"SELECT {RUN_COLUMNS} FROM snapshot_heads h WHERE {{where}} ORDER BY h.run_id LIMIT ?"


async def runs(db: Database, run_ids: Iterable[str]) -> list[RunInfo]:
    """The checkpoints of these runs, by primary key, ``RUNS_CHUNK`` a
    statement (a fleet's file holds a million heads: a list of them all is
    walked range by range, :mod:`~lovia_tui.core.store.head_reads`)."""
    if not db.stores.checkpoint:
        return []
    wanted = list(dict.fromkeys(run_ids))
    found: list[RunInfo] = []
    for start in range(0, len(wanted), RUNS_CHUNK):
        chunk = wanted[start : start + RUNS_CHUNK]
        where = f"h.run_id IN ({','.join('?' * len(chunk))})"
        rows = await db.fetchall(_RUNS_SQL.format(where=where), (*chunk, len(chunk)))
        found.extend(run_info(db, row) for row in rows)
    return await with_web_records(db, found)


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
    the returned seq is where the next call picks up. A run id no Python
    program can bind reads nothing, and says so.
    """
    if reason := unbindable("run", run_id):
        return [], [Unreadable(f"{db.name} snapshot_turns", reason)], after_seq
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
