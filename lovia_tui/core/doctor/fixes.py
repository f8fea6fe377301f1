"""A finding's fix as an action preview: performed, journaled and undone like any other.

Replay and resume are not previews: they go through
:mod:`lovia_tui.core.runs.preflight` and :mod:`lovia_tui.core.runs.resume`
(:func:`fix_preflight`). Everything else becomes one of the action layer's own
previews, so :func:`lovia_tui.core.actions.perform.perform` checks, journals and does it.
"""

from __future__ import annotations

from lovia_tui.core.actions.plans import (
    checkpoint_groups,
    make_plan,
    refuse_unsound,
    require_current_chat,
)
from lovia_tui.core.actions.previews import (
    CheckpointDeletion,
    DeleteRunsPreview,
    Preview,
)
from lovia_tui.core.actions.run_plans import preview_delete_runs, preview_finalize
from lovia_tui.core.actions.session_plans import preview_clear, preview_rewind
from lovia_tui.core.doctor.findings import UNPAIRED_TOOL_CALL, Finding, FixAction
from lovia_tui.core.errors import ActionError
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.runs.agents import AgentSpec, DepsSpec
from lovia_tui.core.runs.preflight import Preflight, preflight, preflight_replay
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import stored_key

RUN_FIXES = ("replay", "resume")
"""Fixes that run the agent loop (preflight, then the console) instead of an action."""
_NO_CHECKPOINT = {"web-stale-pointer", UNPAIRED_TOOL_CALL, "journal-mode"}
"""Findings about something other than a checkpoint: no delete or finalize instead."""


def fix_action(finding: Finding, instead: FixAction | None = None) -> FixAction:
    """The action to take: the suggested one, or ``instead`` where it applies to the finding."""
    if instead is None:
        if finding.fix is None:
            raise ActionError(f"no one-key fix for a {finding.kind} finding")
        return finding.fix.action
    if (
        instead in ("delete-run", "finalize")
        and finding.run_id
        and finding.kind not in _NO_CHECKPOINT
    ):
        return instead
    raise ActionError(f"{instead} does not apply to a {finding.kind} finding")


async def fix_preview(
    ws: Workspace,
    finding: Finding,
    *,
    instead: FixAction | None = None,
    session_id: str | None = None,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> Preview:
    """The preview of the finding's fix (or of ``instead``), ready for ``perform``.

    ``session_id`` is the session chosen for a finalize when nothing links the
    run; raises ActionError (LiveRunError unless forced) as the previews do.
    """
    action = fix_action(finding, instead)
    fix = finding.fix if instead is None else None
    run_id, sid = finding.run_id, finding.session_id
    if action == "delete-run" and run_id:
        return await preview_delete_runs(
            ws, [run_id], force=force, stale_after=stale_after
        )
    if action == "finalize" and run_id:
        chosen = session_id or (fix.session_id if fix else None)
        return await preview_finalize(
            ws, run_id, chosen, force=force, stale_after=stale_after
        )
    if action == "rewind" and sid and fix and fix.keep_entries is not None:
        return await preview_rewind(
            ws, sid, fix.keep_entries, force=force, stale_after=stale_after
        )
    if action == "clear" and sid:
        return await preview_clear(ws, sid, force=force, stale_after=stale_after)
    if action == "clear-pointer" and run_id and sid:
        return await preview_clear_pointer(ws, finding)
    raise ActionError(
        f"{action} is not an action preview: resume and replay go through their preflight"
    )


async def preview_clear_pointer(ws: Workspace, finding: Finding) -> DeleteRunsPreview:
    """Clear a web chat's ``active_run_id`` that names a run with no checkpoint.

    It is the delete-run action on a checkpoint that is already gone: lovia's
    delete is a no-op on it, and the chat's pointer is cleared as for any
    deleted checkpoint (journaled, so undo puts the pointer back).
    """
    refuse_unsound(ws)
    assert finding.run_id is not None and finding.session_id is not None
    db = ws.database(finding.file)
    if await ws.find_run(finding.run_id) is not None:
        raise ActionError(
            f"run {finding.run_id} has a checkpoint again: run the doctor again"
        )
    row = await db.fetchone(
        "SELECT active_run_id FROM chat_sessions WHERE id = ?", (finding.session_id,)
    )
    if row is None or stored_key(row[0]) != finding.run_id:
        raise ActionError(
            f"web chat {finding.session_id!r} no longer points at {finding.run_id}: nothing to clear"
        )
    await require_current_chat(db)
    gone = CheckpointDeletion(
        file=db.path,
        run_id=finding.run_id,
        status="already gone",
        stale=False,
        live=False,
        entries=0,
        reason="no checkpoint left: only the web chat's pointer to it remains",
        session_id=finding.session_id,
        appended=True,  # nothing exists only here: no entries are lost
        web_pointer=finding.session_id,
    )
    return DeleteRunsPreview(
        run_ids=(finding.run_id,),
        status=None,
        older_than_days=None,
        checkpoints=(gone,),
        plan=await make_plan(ws, checkpoint_groups([gone]), False),
    )


async def fix_preflight(
    ws: Workspace,
    finding: Finding,
    *,
    agent: AgentSpec | None,
    deps: DepsSpec | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    delete_on_success: bool = True,
    force: bool = False,
) -> Preflight:
    """The preflight of a replay or resume fix; :mod:`lovia_tui.core.runs.resume` carries it out.

    The checkpoint goes once the run is stored: kept, it would be the next finding.
    """
    if (
        finding.fix is None
        or finding.fix.action not in RUN_FIXES
        or finding.run_id is None
    ):
        raise ActionError(
            f"the fix for this {finding.kind} finding is not a resume or replay"
        )
    if finding.fix.action == "replay":
        return await preflight_replay(
            ws,
            finding.run_id,
            agent=agent,
            delete_on_success=delete_on_success,
            force=force,
        )
    return await preflight(
        ws, finding.run_id, agent=agent, deps=deps, stale_after=stale_after,
        delete_on_success=delete_on_success, force=force,
    )  # fmt: skip
