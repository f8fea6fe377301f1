"""Previews of the checkpoint actions: delete checkpoints, finalize a run."""

from __future__ import annotations

import time
from collections.abc import Sequence

from lovia_tui.core.actions.plans import (
    calls,
    checkpoint_groups,
    deletion,
    make_plan,
    refuse_live,
    refuse_unsound,
    require_current_chat,
)
from lovia_tui.core.actions.previews import (
    DeleteRunsPreview,
    FinalizeMode,
    FinalizePreview,
    SessionSource,
)
from lovia_tui.core.entries import UnreadableError, drop_dangling, known_only
from lovia_tui.core.errors import ActionError
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER, STATUS_FILTERS, RunStatus
from lovia_tui.core.store import checkpoint_reads
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.head_reads import RunFilter, stream_runs
from lovia_tui.core.store.rows import RowGroup
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import refuse_non_text, time_order
from lovia_tui.core.turns import is_system_input, whole_turns

# A web run record still open: the run never reached its wind-down.
_OPEN_RECORDS = ("running", "interrupted")


def _selected(
    runs: list[RunInfo],
    run_ids: Sequence[str],
    status: str | None,
    older_than_days: float | None,
    stale_after: float,
) -> list[RunInfo]:
    if run_ids:
        missing = set(run_ids) - {run.run_id for run in runs}
        if missing:
            raise ActionError(f"no checkpoint {sorted(missing)[0]!r} in the open files")
        runs = [run for run in runs if run.run_id in run_ids]
    now = time.time()
    if status == RunStatus.STALE:
        runs = [run for run in runs if run.is_stale(now, stale_after)]
    elif status is not None:
        runs = [run for run in runs if run.status == status]
    if older_than_days is not None:
        oldest = now - older_than_days * 86400  # an unreadable save time is never old
        runs = [r for r in runs if r.updated_at is not None and r.updated_at <= oldest]
    return runs


async def _chosen(
    ws: Workspace,
    run_ids: Sequence[str],
    status: str | None,
    older_than_days: float | None,
    stale_after: float,
) -> list[RunInfo]:
    """The checkpoints a delete chooses, most recently saved first: the named
    ones read by id, or those of a status found in SQL a head range at a time
    (only the chosen are held: a fleet's file holds a million heads)."""
    if run_ids:
        named = await ws.runs_named(run_ids)
        return _selected(named, run_ids, status, older_than_days, stale_after)
    wanted = RunFilter(status=status, now=time.time(), stale_after=stale_after)
    chosen: list[RunInfo] = []
    for db in ws.checkpoint_dbs:
        async for chunk in stream_runs(db, wanted):
            chosen += _selected(chunk, (), status, older_than_days, stale_after)
    return sorted(chosen, key=lambda run: time_order(run.updated_at), reverse=True)


def _why(link: SessionLink | None) -> str:
    if link is None:
        return "requested; linked to no session: its entries exist only here"
    if link.kind == "segment":
        return f"requested; already a segment of session {link.session_id!r}"
    return f"requested; in-flight run of web chat {link.session_id!r}: its entries exist only here"


async def preview_delete_runs(
    ws: Workspace,
    run_ids: Sequence[str] = (),
    *,
    status: str | None = None,
    older_than_days: float | None = None,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> DeleteRunsPreview:
    """Checkpoints to delete: the named runs, narrowed by status and age.

    ``status`` is a head status or ``"stale"`` (running, no recent save).
    Raises ActionError for a live run unless forced: its writer would keep
    appending to a checkpoint that no longer has a head.
    """
    refuse_unsound(ws)
    if not run_ids and status is None and older_than_days is None:
        raise ActionError("name the runs to delete, or choose them by status or age")
    if status is not None and status not in STATUS_FILTERS:
        raise ActionError(
            f"unknown status {status!r} (one of {', '.join(STATUS_FILTERS)})"
        )
    chosen = await _chosen(ws, run_ids, status, older_than_days, stale_after)
    links = await ws.links(run.run_id for run in chosen)
    refuse_live(chosen, force, stale_after, "deleting its checkpoint")
    checkpoints = [
        await deletion(
            ws, run, links.get(run.run_id), _why(links.get(run.run_id)), stale_after
        )
        for run in chosen
    ]
    return DeleteRunsPreview(
        run_ids=tuple(run_ids),
        status=status,
        older_than_days=older_than_days,
        checkpoints=tuple(checkpoints),
        plan=await make_plan(ws, checkpoint_groups(checkpoints), force),
    )


async def _finalize_target(
    ws: Workspace, run: RunInfo, link: SessionLink | None, session_id: str | None
) -> tuple[str, SessionSource, Database]:
    """The session (and its file) an abandoned run is folded into, and how we know."""
    if link and session_id and link.session_id != session_id:
        raise ActionError(
            f"run {run.run_id} belongs to session {link.session_id!r} "
            f"({'its segment' if link.kind == 'segment' else 'the web UI'} says so); "
            f"refusing to finalize it into {session_id!r}"
        )
    if link is None and session_id is None:
        raise ActionError(
            f"run {run.run_id} is linked to no session: name the session it belongs to"
        )
    target = session_id or link.session_id  # type: ignore[union-attr]
    db = await ws.find_session(target)
    if db is None or not db.stores.session:
        # No segment yet: the run's own file if it holds sessions (the web UI's
        # layout), else the only file that does. Never a file without the store.
        own = ws.database(run.file)
        candidates = (
            [own]
            if own.stores.session
            else [d for d in ws.databases if d.stores.session]
        )
        if len(candidates) != 1:
            raise ActionError(
                f"session {target!r} has no stored runs and no single open file holds "
                "a session store: open only the file it belongs in"
            )
        db = candidates[0]
    return target, link.kind if link else "given", db


async def preview_finalize(
    ws: Workspace,
    run_id: str,
    session_id: str | None = None,
    *,
    keep_partial: bool = False,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> FinalizePreview:
    """Settle an abandoned run: on a lovia web chat as its Stop does, else store it.

    On a web chat (lovia web's records link the run) this is lovia web's Stop
    (``POST /api/chat/cancel``): a stranded run (not live) loses its
    checkpoint and the chat's pointer, nothing is appended and its run record
    stays, ``interrupted`` (as lovia web's restart leaves it before a Stop can
    reach it); a live one (forced) keeps its whole turns only, and its
    record closes as cancelled. ``keep_partial`` (and any run outside lovia
    web) stores everything the checkpoint saved, a half-finished turn
    included, minus calls left dangling, as a segment under the run's id (a
    no-op if already there), then deletes the checkpoint; an open web record
    closes as cancelled. The session is the linked one, or ``session_id``
    when nothing links the run.
    """
    refuse_unsound(ws)
    refuse_non_text("run", run_id)
    run = await ws.find_run(run_id)
    if run is None:
        raise ActionError(f"no checkpoint {run_id!r} in the open files")
    if run.unreadable:
        raise ActionError(f"{run.unreadable}: lovia cannot load this run")
    refuse_live([run], force, stale_after, "finalizing it")
    link = (await ws.links([run_id])).get(run_id)
    target, source, db = await _finalize_target(ws, run, link, session_id)
    refuse_non_text("session", target)
    run_db = ws.database(run.file)
    entries, problems = await checkpoint_reads.snapshot_entries(run_db, run_id)
    if problems:
        raise ActionError(f"{problems[0]}: lovia cannot load this run")
    try:
        data = list(known_only(e.data for e in entries))
    except UnreadableError as exc:
        raise ActionError(f"run {run_id}: {exc}; lovia cannot load this run") from exc
    mode: FinalizeMode = (
        "keep-partial" if keep_partial else "stop" if source == "web" else "store"
    )
    checkpoint = await deletion(ws, run, link, _FINALIZED[mode], stale_after)
    own = [e for e in data if not is_system_input(e)]
    if mode != "stop":
        chosen = data
    else:
        chosen = own[: whole_turns(data)] if checkpoint.live else []
    kept = drop_dangling(chosen)
    kept_ids = {id(e) for e in kept}
    appended = bool(
        await db.fetchone(
            "SELECT 1 FROM session_runs WHERE session_id = ? AND run_id = ? LIMIT 1",
            (target, run_id),
        )
    )
    record = None
    if run_db.stores.chat:
        row = await run_db.fetchone(
            "SELECT status FROM chat_runs WHERE id = ?", (run_id,)
        )
        record = row[0] if row and row[0] in _OPEN_RECORDS else None
    after = _record_after(mode, checkpoint.live, record)
    if after is not None:
        await require_current_chat(run_db)
    groups = [
        RowGroup(db.path, "session_runs", target),
        *checkpoint_groups([checkpoint]),
    ]
    if after is not None:
        groups.append(RowGroup(run.file, "chat_runs", run_id))
    return FinalizePreview(
        file=db.path,
        run_id=run_id,
        checkpoint=checkpoint,
        session_id=target,
        session_source=source,
        already_appended=appended,
        entries_appended=0 if appended else len(kept),
        dropped_calls=tuple(calls(run_id, (e for e in own if id(e) not in kept_ids))),
        timing=(
            {"started_at": run.started_at, "finished_at": run.updated_at}
            if run.started_at is not None and run.updated_at is not None and kept
            else None
        ),
        web_record=record,
        plan=await make_plan(ws, groups, force),
        mode=mode,
        live=checkpoint.live,
        entries_left_out=len(own) - len([e for e in kept if not is_system_input(e)]),
        web_record_after=after,
        new_session=await ws.find_session(target) is None,
    )


def _record_after(mode: FinalizeMode, live: bool, record: str | None) -> str | None:
    """What the run's open web record becomes, None if it stays. A stranded run
    can only be stopped in lovia web after its server restarted, and the
    restart's sweep made its record ``interrupted`` first; Stop leaves it so."""
    if record is None:
        return None
    if mode != "stop" or live:
        return "cancelled"
    return "interrupted" if record == "running" else None


_FINALIZED = {
    "stop": "stopped as lovia web's Stop: its checkpoint goes",
    "keep-partial": "finalized: its entries now live in the session",
    "store": "finalized: its entries now live in the session",
}
