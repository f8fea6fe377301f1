"""Doctor checks on checkpoints: leftovers, lost appends, crashes, orphans, rewinds.

One checkpoint at a time (keyset pages of run ids, then one head and its
batches), so memory stays bounded however many checkpoints piled up. Each
checkpoint gets at most one finding, the most telling one; where the web UI
still has records about the run, its fix settles them too.
"""

from __future__ import annotations

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
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import RunStatus, stale_reason
from lovia_tui.core.store import checkpoint_reads
from lovia_tui.core.store.workspace import Workspace

HEAD_CHUNK = 500
"""Run ids per page of the checkpoint walk (and per link lookup)."""


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

    async def finding(self) -> Finding | None:
        run = self.run
        problem = run.unreadable
        if problem is None:
            entries, problems = await checkpoint_reads.snapshot_entries(
                self.ws.database(run.file), run.run_id
            )
            problem = problems[0] if problems else None
        if problem is not None:
            message = f"{problem}: lovia cannot load this checkpoint"
            return self._found("unreadable-row", "error", message, _delete(run.run_id))
        data = [entry.data for entry in entries]
        if self.link is not None and self.link.kind == "segment":
            return await self._stored(self.link, data)
        return self._unstored()

    async def _stored(self, link: SessionLink, data: list[dict[str, Any]]) -> Finding:
        """The run is a segment already: the checkpoint can only do harm."""
        rid, sid = self.run.run_id, link.session_id
        left, fix = self.web.leftovers(rid), _cleanup(rid, sid, self.web)
        stored = await self._segment_entries(link)
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

    async def _segment_entries(self, link: SessionLink) -> list[dict[str, Any]] | None:
        """The run's segment entries; None when unreadable (the segment scan reports that)."""
        row = await self.ws.database(link.file).fetchone(
            "SELECT entries_json FROM session_runs WHERE session_id = ? AND run_id = ? LIMIT 1",
            (link.session_id, self.run.run_id),
        )
        try:
            return parse_entries(row[0]) if row else None
        except UnreadableError:
            return None

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
            rows = await db.fetchall(
                f"SELECT run_id FROM snapshot_heads {where}ORDER BY run_id LIMIT ?",
                (*params, HEAD_CHUNK),
            )
            if not rows:
                break
            run_ids = [row[0] for row in rows]
            links = await ws.links(run_ids)
            for run_id in run_ids:
                # None when deleted since the page was read.
                for run in await checkpoint_reads.runs(db, run_id):
                    if run.is_live(now, stale_after):
                        continue
                    checkup = _Checkup(
                        ws, run, links.get(run_id), web, now, older_than_days
                    )
                    if (finding := await checkup.finding()) is not None:
                        found.add(finding)
            done += len(run_ids)
            progress(f"checkpoints in {db.name}", min(1.0, done / max(1, total)))
            after = run_ids[-1]
