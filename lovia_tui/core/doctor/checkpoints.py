"""Doctor checks on checkpoints: leftovers, lost appends, crashes, orphans, rewinds.

Keyset pages of run ids; in each, the heads in one statement and the runs'
batches in statements of about ``GROUP_BYTES`` (sized from the values'
headers: a run weighing more is read alone), parsed off the event loop. So
memory stays bounded however many checkpoints piled up, and a fleet's million
heads cost a few thousand statements, not three a run. Each checkpoint gets
at most one finding, the most telling one; where the web UI still has
records about the run, its fix settles them too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.doctor.findings import (
    Finding,
    FindingList,
    Fix,
    Progress,
    Severity,
    command,
)
from lovia_tui.core.doctor.web import WebState
from lovia_tui.core.entries import UnreadableError, drop_dangling, parse_entries
from lovia_tui.core.formatting import age
from lovia_tui.core.models import RunInfo, SessionLink, Unreadable
from lovia_tui.core.run_status import RunStatus, stale_reason
from lovia_tui.core.store.checkpoint_reads import run_info
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.web_reads import with_web_records
from lovia_tui.core.store.workspace import Workspace

HEAD_CHUNK = 500
"""Run ids per page of the checkpoint walk (and per link lookup)."""
GROUP_BYTES = 4 << 20
"""Stored bytes read and parsed together (batches, segments): whole runs up to this weight."""


def _delete(run_id: str) -> Fix:
    return Fix("delete-run", f"delete the checkpoint ({command('delete-run', run_id)})")


def _cleanup(run_id: str, session_id: str, web: WebState) -> Fix:
    """Drop a checkpoint whose run is stored; finalize also settles the web UI's records."""
    if not web.leftovers(run_id):
        return _delete(run_id)
    return Fix(
        "finalize",
        "finalize it: nothing is appended, the checkpoint goes and the web UI's records "
        f"are settled ({command('finalize', run_id)})",
        session_id,
    )


def _choose(run_id: str) -> Fix:
    return Fix(
        "finalize",
        "finalize it into the session it belongs to (nothing records which: choose one; "
        f"{command('finalize', run_id, '--session', 'SID')}), or delete it",
    )


def same_entries(stored: list[dict[str, Any]], snapshot: list[dict[str, Any]]) -> bool:
    """Whether a segment holds the checkpoint's entries: as appended, or as finalized
    (dangling calls dropped). Call arguments are left out: a replay stores them
    normalized (lovia's ``normalize_replayed_entries``)."""

    def shape(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "arguments"} for e in entries]

    return shape(stored) in (shape(snapshot), shape(drop_dangling(snapshot)))


class _Checkup:
    """The checks on one checkpoint; :meth:`finding` returns the most telling one."""

    def __init__(
        self, ws: Workspace, run: RunInfo, link: SessionLink | None, web: WebState,
        now: float, older_than_days: float,
    ) -> None:  # fmt: skip
        self.ws, self.run, self.link, self.web = ws, run, link, web
        self.now, self.older_than_days = now, older_than_days
        self.status = "stale running" if run.status == RunStatus.RUNNING else run.status
        self.dead = stale_reason(run, now, 0.0)

    def _found(
        self, kind: str, severity: Severity, message: str, fix: Fix | None
    ) -> Finding:
        sid = self.link.session_id if self.link else None
        return Finding(
            kind, severity, self.run.file, message, self.run.run_id, sid, fix
        )

    def finding(
        self, loaded: _Loaded, stored: list[dict[str, Any]] | None
    ) -> Finding | None:
        """The most telling finding, from the checkpoint's entries and, for a
        run stored already, its segment's (None where that is unreadable:
        the segment scan reports it)."""
        problem = self.run.unreadable or loaded.problem
        if problem is not None:
            message = f"{problem}: lovia cannot load this checkpoint"
            return self._found(
                "unreadable-row", "error", message, _delete(self.run.run_id)
            )
        if self.link is not None and self.link.kind == "segment":
            return self._stored(self.link, loaded.entries, stored)
        return self._unstored()

    def _stored(
        self,
        link: SessionLink,
        data: list[dict[str, Any]],
        stored: list[dict[str, Any]] | None,
    ) -> Finding:
        """The run is a segment already: the checkpoint can only do harm."""
        rid, sid = self.run.run_id, link.session_id
        left, fix = self.web.leftovers(rid), _cleanup(rid, sid, self.web)
        if stored is not None and not same_entries(stored, data):
            return self._found(
                "rewound-checkpoint", "error",
                f"{self.status} checkpoint of {len(data)} entries, but its segment in session {sid!r} "
                f"holds {len(stored)} different ones (rewound since): a resume or replay would bring "
                f"the removed content back{left}",
                fix,
            )  # fmt: skip
        if self.run.status == RunStatus.COMPLETED:
            message = f"completed and already stored in session {sid!r}: the checkpoint is a leftover{left}"
            return self._found(
                "completed-in-session", "warning" if left else "info", message, fix
            )
        message = (
            f"{self.status}, yet already stored in session {sid!r} (finalized): "
            f"a resume would repeat its entries{left}"
        )
        return self._found("finalized-in-session", "warning", message, fix)

    def _unstored(self) -> Finding | None:
        """The run is in no session: its entries exist only in the checkpoint."""
        run, link, rid = self.run, self.link, self.run.run_id
        sid = link.session_id if link else None
        # Not stored, so a link can only come from the web UI's records.
        where = (
            f"the web UI links it to session {sid!r}"
            if link
            else "nothing links it to a session"
        )
        ago = age(self.now - run.updated_at)
        if run.status == RunStatus.COMPLETED:
            chats = self.web.chats(rid)
            doom = (
                f"; opening chat {chats[0]!r} in lovia web deletes it, answer and all"
                if chats
                else ""
            )
            replay = f"replay it into session {sid!r}, which stores it ({command('replay', rid, '--delete-on-success')}); or finalize it"
            return self._found(
                "crash-window", "error" if chats else "warning",
                f"completed but stored in no session (its append was lost: the crash window); {where}; "
                f"its entries exist only in this checkpoint{doom}",
                Fix("replay", replay, sid) if link else _choose(rid),
            )  # fmt: skip
        if run.status == RunStatus.RUNNING:
            resume = f"resume it ({command('resume', rid, '--agent', 'MODULE:ATTR', '--delete-on-success')}); or finalize or delete it"
            return self._found(
                "stale-running", "warning",
                f"running in its head, but not live ({self.dead}); {where}",
                Fix("resume", resume, sid) if link else _choose(rid),
            )  # fmt: skip
        if link is None:
            return self._found(
                "orphan", "warning",
                f"{self.status} {ago} ago and linked to no session (no segment, no web UI record): "
                "nothing will resume it",
                _choose(rid),
            )  # fmt: skip
        if self.now - run.updated_at >= self.older_than_days * 86_400:
            return self._found(
                "old-unfinished", "warning",
                f"{self.status} {ago} ago in session {sid!r} and never resumed",
                Fix("finalize", f"finalize it into {sid!r} ({command('finalize', rid)}); or resume or delete it", sid),
            )  # fmt: skip
        return None  # resumable, as it should be


@dataclass
class _Loaded:
    """A checkpoint's own entries, or the first of its batches that is unreadable."""

    entries: list[dict[str, Any]]
    problem: Unreadable | None = None
    count: int = 0
    last_seq: int | None = None


def _parse_turns(db: Database, run_id: str, turns: list[tuple[int, str]]) -> _Loaded:
    """A checkpoint's batches in seq order, as ``snapshot_entries`` reads them."""
    loaded = _Loaded([])
    for seq, text in turns:
        loaded.last_seq = seq
        try:
            entries = parse_entries(text)
        except UnreadableError as exc:
            where = f"{db.name} snapshot_turns run {run_id} seq {seq}"
            loaded.problem = loaded.problem or Unreadable(where, str(exc))
            continue
        loaded.entries += entries
        loaded.count += len(entries)
    return loaded


def _groups(weights: dict[str, int], order: list[str]) -> Iterator[list[str]]:
    """Runs in ``order``, grouped to about ``GROUP_BYTES`` of stored batches a group."""
    group: list[str] = []
    weight = 0
    for run_id in order:
        if group and weight + weights.get(run_id, 0) > GROUP_BYTES:
            yield group
            group, weight = [], 0
        group.append(run_id)
        weight += weights.get(run_id, 0)
    if group:
        yield group


async def _turn_weights(
    db: Database, run_ids: list[str]
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Each run's stored bytes of batches and their rowids (from the primary
    key's index and the values' headers: no batch is read)."""
    marks = ",".join("?" * len(run_ids))
    rows = await db.fetchall(
        f"SELECT run_id, rowid FROM snapshot_turns WHERE run_id IN ({marks})",
        tuple(run_ids),
    )
    rowids: dict[str, list[int]] = {}
    for run_id, rowid in rows:
        rowids.setdefault(run_id, []).append(rowid)
    sizes = await asyncio.to_thread(
        db.blob_sizes, "snapshot_turns", "entries_json", [row[1] for row in rows]
    )
    weights = {
        run_id: sum(sizes.get(rowid, 0) for rowid in ids)
        for run_id, ids in rowids.items()
    }
    return weights, rowids


async def _loaded(
    db: Database, group: list[str], rowids: dict[str, list[int]]
) -> dict[str, _Loaded]:
    """The group's checkpoints' entries, read in one statement, parsed in a thread."""
    wanted = [rowid for run_id in group for rowid in rowids.get(run_id, [])]
    turns: dict[str, list[tuple[int, str]]] = {run_id: [] for run_id in group}
    if wanted:
        for run_id, seq, text in await db.fetchall(
            "SELECT run_id, seq, entries_json FROM snapshot_turns "
            f"WHERE rowid IN ({','.join('?' * len(wanted))}) ORDER BY run_id, seq",
            tuple(wanted),
        ):
            turns[run_id].append((seq, text))

    def parse() -> dict[str, _Loaded]:
        return {
            run_id: _parse_turns(db, run_id, batches)
            for run_id, batches in turns.items()
        }

    return await asyncio.to_thread(parse)


async def _stored_entries(
    ws: Workspace, links: list[tuple[str, SessionLink]]
) -> dict[str, list[dict[str, Any]] | None]:
    """The segment entries of runs stored already (None where unreadable),
    found by lovia's (session_id, run_id) index, read in groups of about
    ``GROUP_BYTES`` and parsed in a thread."""
    found: dict[str, list[dict[str, Any]] | None] = {}
    by_file: dict[Path, list[tuple[str, str]]] = {}
    for run_id, link in links:
        by_file.setdefault(link.file, []).append((link.session_id, run_id))
    for file, pairs in by_file.items():
        db = ws.database(file)
        for start in range(0, len(pairs), HEAD_CHUNK):
            chunk = pairs[start : start + HEAD_CHUNK]
            rows = await db.fetchall(
                "SELECT run_id, id FROM session_runs WHERE (session_id, run_id) IN "
                f"(VALUES {','.join(['(?, ?)'] * len(chunk))})",
                tuple(value for pair in chunk for value in pair),
            )
            ids = dict(rows)  # a run forked elsewhere: its linked session's row
            sizes = await asyncio.to_thread(
                db.blob_sizes, "session_runs", "entries_json", list(ids.values())
            )
            weights = {run_id: sizes.get(row_id, 0) for run_id, row_id in ids.items()}
            for group in _groups(weights, list(ids)):
                texts = await db.fetchall(
                    "SELECT run_id, entries_json FROM session_runs "
                    f"WHERE id IN ({','.join('?' * len(group))})",
                    tuple(ids[run_id] for run_id in group),
                )
                found.update(await asyncio.to_thread(_parsed_segments, texts))
    return found


def _parsed_segments(rows: list[Any]) -> dict[str, list[dict[str, Any]] | None]:
    parsed: dict[str, list[dict[str, Any]] | None] = {}
    for run_id, text in rows:
        try:
            parsed[run_id] = parse_entries(text)
        except UnreadableError:
            parsed[run_id] = None
    return parsed


async def checkpoint_findings(
    ws: Workspace, found: FindingList, web: WebState, *,
    now: float, stale_after: float, older_than_days: float, progress: Progress,
) -> None:  # fmt: skip
    """At most one finding per checkpoint, in every file that holds checkpoints.

    A run saved less than ``stale_after`` ago may be live in another process:
    nothing may touch it, so it is not looked at.
    """
    for db in ws.checkpoint_dbs:
        total = (await db.fetchrow("SELECT COUNT(*) FROM snapshot_heads"))[0]
        done, after = 0, None
        while True:
            where, params = (
                ("", ()) if after is None else ("WHERE run_id > ? ", (after,))
            )
            heads = await db.fetchall(
                f"SELECT run_id, head_json, updated_at FROM snapshot_heads {where}"
                "ORDER BY run_id LIMIT ?",
                (*params, HEAD_CHUNK),
            )
            if not heads:
                break
            after = heads[-1][0]
            by_id = {row[0]: row for row in heads}
            weights, rowids = await _turn_weights(db, list(by_id))
            links = await ws.links(by_id)
            for group in _groups(weights, list(by_id)):
                loaded = await _loaded(db, group, rowids)
                runs = await with_web_records(db, [
                    run_info(db, (*by_id[run_id], loaded[run_id].count, loaded[run_id].last_seq))
                    for run_id in group
                ])  # fmt: skip
                runs = [run for run in runs if not run.is_live(now, stale_after)]
                stored = await _stored_entries(ws, [
                    (run.run_id, link) for run in runs
                    if (link := links.get(run.run_id)) and link.kind == "segment"
                    and loaded[run.run_id].problem is None and not run.unreadable
                ])  # fmt: skip
                for run in runs:
                    checkup = _Checkup(
                        ws, run, links.get(run.run_id), web, now, older_than_days
                    )
                    finding = checkup.finding(
                        loaded[run.run_id], stored.get(run.run_id)
                    )
                    if finding is not None:
                        found.add(finding)
            done += len(heads)
            progress(f"checkpoints in {db.name}", min(1.0, done / max(1, total)))
