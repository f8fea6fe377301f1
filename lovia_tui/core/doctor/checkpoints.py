"""Doctor checks on checkpoints: leftovers, lost appends, crashes, orphans, rewinds.

Each checkpoint gets at most one finding, the most telling one; where the
web UI still has records about the run, its fix settles them too. How the
checkpoints are read, in bounded memory and the tables' own order, is
:mod:`~lovia_tui.core.doctor.checkpoint_scan`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia_tui.core.doctor import checkpoint_scan as scan
from lovia_tui.core.doctor.batch_scan import unreadable_batches
from lovia_tui.core.doctor.checkpoint_scan import Loaded
from lovia_tui.core.doctor.findings import (
    AGENT,
    UNREADABLE_ROW,
    Finding,
    FindingList,
    Fix,
    Progress,
    Severity,
    command,
)
from lovia_tui.core.doctor.web import WebState
from lovia_tui.core.entries import (
    drop_dangling,
)
from lovia_tui.core.formatting import ago, plural
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import RunStatus, stale_reason
from lovia_tui.core.store.checkpoint_reads import run_info
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.web_reads import with_web_records
from lovia_tui.core.store.workspace import Workspace


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


def _settle(run_id: str, session_id: str, web: bool) -> str:
    """How an unfinished run of a known session is settled: on a web chat,
    finalize is lovia web's Stop, which keeps nothing of a stranded run."""
    if not web:
        return f"finalize it into {session_id!r} ({command('finalize', run_id)}); or resume or delete it"
    return (
        "stop it as lovia web's Stop does: its checkpoint goes and nothing of it is stored "
        f"({command('finalize', run_id)}); or store all it saved in {session_id!r} "
        f"({command('keep-partial', run_id)}); or resume it"
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
        self, loaded: Loaded, stored: list[dict[str, Any]] | None
    ) -> Finding | None:
        """The most telling finding, from the checkpoint's entries and, for a
        run stored already, its segment's (None where that is unreadable:
        the segment scan reports it)."""
        problem = self.run.unreadable or loaded.problem
        if problem is not None:
            message = f"{problem}: lovia cannot load this checkpoint"
            return self._found(
                UNREADABLE_ROW, "error", message, _delete(self.run.run_id)
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
            if self.run.status == RunStatus.COMPLETED:
                return self._found(
                    "rewound-checkpoint", "warning" if left else "info",
                    f"completed checkpoint of {plural(len(data), 'entry', 'entries')}, but its segment in session {sid!r} "
                    f"holds {len(stored)} different ones (rewound since): a replay adds nothing while "
                    f"that segment exists, yet the checkpoint still holds what the rewind removed{left}",
                    fix,
                )  # fmt: skip
            return self._found(
                "rewound-checkpoint", "error",
                f"{self.status} checkpoint of {plural(len(data), 'entry', 'entries')}, but its segment in session {sid!r} "
                f"holds {len(stored)} different ones (rewound since): a resume would give the model "
                f"the removed content again{left}",
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
        when = ago(self.now, run.updated_at)
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
            resume = (
                f"resume it ({command('resume', rid, '--agent', AGENT, '--delete-on-success')}; "
                "add --approve TOOL or --deny-all if its tools ask for approval); "
                "or finalize or delete it"
            )
            return self._found(
                "stale-running", "warning",
                f"running in its head, but not live ({self.dead}); {where}",
                Fix("resume", resume, sid) if link else _choose(rid),
            )  # fmt: skip
        if link is None:
            return self._found(
                "orphan", "info",
                f"{self.status} {when}; nothing records its session (no segment, no web UI "
                "record), as for any run checkpointed without one: plain lovia resumes it when "
                "the same run_id is issued again (resume_only), with the session named by the caller",
                Fix(
                    "finalize",
                    "if the run is over, store it in the session it belongs to (nothing records "
                    f"which: choose one; {command('finalize', rid, '--session', 'SID')}); or resume it "
                    f"there ({command('resume', rid, '--session', 'SID', '--agent', AGENT)}). "
                    "Deleting it loses the only copy of its entries",
                ),
            )  # fmt: skip
        saved = run.updated_at  # a save time that does not read is never old
        if saved is not None and self.now - saved >= self.older_than_days * 86_400:
            return self._found(
                "old-unfinished", "warning",
                f"{self.status} {when} in session {sid!r} and never resumed",
                Fix("finalize", _settle(rid, link.session_id, link.kind == "web"), sid),
            )  # fmt: skip
        return None  # resumable, as it should be


COMPLETED_ALONE = "completed-unchecked"


def _unchecked(file: Path, count: int) -> Finding:
    return Finding(
        COMPLETED_ALONE, "info", file,
        f"{count:,} completed checkpoints are stored in no session, and no session store is "
        "open to tell a lost append (the crash window) from a run that used none: open the "
        "sessions file beside this one to check them",
    )  # fmt: skip


async def checkpoint_findings(
    ws: Workspace, found: FindingList, web: WebState, *,
    now: float, stale_after: float, older_than_days: float, progress: Progress,
) -> None:  # fmt: skip
    """At most one finding per checkpoint, in every file that holds checkpoints.

    A run saved less than ``stale_after`` ago may be live in another process:
    nothing may touch it, so it is not looked at. With no session store open,
    a completed checkpoint in no session proves nothing: they are counted in
    one finding, not each called the crash window.
    """
    sessions_open = bool(ws.session_dbs)
    for db in ws.checkpoint_dbs:
        total = (await db.fetchrow("SELECT COUNT(*) FROM snapshot_heads"))[0]
        unreadable = await unreadable_batches(db, progress)
        done, unchecked = 0, 0
        async for page in scan.head_pages(db, unreadable or {}):
            ids = [*page.completed, *(row[0] for row in page.others)]
            links = await ws.links(ids) if sessions_open else {}
            # A completed run that loads and is in no session, no chat: the
            # fleet's million. Counted, unless its finding is still to keep.
            again = []
            if unreadable is None:
                again = page.completed  # a hostile file's: each looked at whole
            elif not sessions_open and not web.pointers:
                unchecked += len(page.completed)
            else:
                for run_id in page.completed:
                    if run_id in links or web.chats(run_id):
                        again.append(run_id)
                    elif not sessions_open:
                        unchecked += 1
                    elif found.full(db.path, "crash-window"):
                        found.tally(db.path, "crash-window")
                    else:
                        again.append(run_id)
            heads = [*page.others, *await scan.heads_of(db, again)]
            await _look_at(ws, db, heads, links, web, found, now=now,
                           stale_after=stale_after, older_than_days=older_than_days)  # fmt: skip
            done += len(ids)
            progress(f"checkpoints in {db.name}", min(1.0, done / max(1, total)))
        if unchecked:
            found.add(_unchecked(db.path, unchecked))


async def _look_at(
    ws: Workspace, db: Database, heads: list[Any], links: dict[str, SessionLink],
    web: WebState, found: FindingList, *, now: float, stale_after: float,
    older_than_days: float,
) -> None:  # fmt: skip
    """The checkups of these checkpoints (run_id, head, updated_at), their
    entries (and stored segments') read and parsed a group at a time."""
    by_id = {row[0]: row for row in heads}
    async for loaded in scan.loaded(db, list(by_id)):
        runs = await with_web_records(db, [
            run_info(db, (*by_id[run_id], load.count, load.last_seq))
            for run_id, load in loaded.items()
        ])  # fmt: skip
        runs = [run for run in runs if not run.is_live(now, stale_after)]
        stored = await scan.stored_entries(ws, [
            (run.run_id, link) for run in runs
            if (link := links.get(run.run_id)) and link.kind == "segment"
            and loaded[run.run_id].problem is None and not run.unreadable
        ])  # fmt: skip
        for run in runs:
            checkup = _Checkup(
                ws, run, links.get(run.run_id), web, now, older_than_days
            )
            finding = checkup.finding(loaded[run.run_id], stored.get(run.run_id))
            if finding is not None:
                found.add(finding)
