"""What a resume or replay of a checkpoint will do, read before anything is written.

The preflight names the session the run continues in and how that is known,
the dangling tool calls that run again first, whether the entry agent reaches
the run's agent, the turn limit, and the ``problems`` that stop it. The UI
shows it and asks; :mod:`lovia_tui.core.runs.resume` then carries it out.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.actions.previews import SessionSource
from lovia_tui.core.actions.triggers import own_schema_problem
from lovia_tui.core.actions.web_settle import afterwards, settled_chat
from lovia_tui.core.entries import dangling_calls
from lovia_tui.core.errors import ActionError, LoviaTuiError
from lovia_tui.core.formatting import ago, plural
from lovia_tui.core.models import DanglingCall, RunInfo
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER, RunStatus, stale_reason
from lovia_tui.core.runs.agents import AgentSpec, DepsSpec, unreachable_reason
from lovia_tui.core.runs.approvals import Approvals, approvals_of, nested_note
from lovia_tui.core.runs.redact import error_line
from lovia_tui.core.runs.run_session import Findings, Mode, RunSession, run_session
from lovia_tui.core.store import checkpoint_reads
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import refuse_non_text

LOVIA_MAX_TURNS = 50  # Runner.stream's default
EXTRA_TURNS = 10


@dataclass(frozen=True)
class Preflight:
    """What a resume or replay will do, and what stops it (``problems``).

    ``session_source`` says how the session is known: ``segment`` (the run is
    already stored in it), ``web`` (the web UI's records) or ``given`` (the
    user chose it; lovia cannot check that choice). ``session_id`` is ``None``
    for a run continued without a session.
    """

    mode: Mode
    run: RunInfo
    agent: AgentSpec | None
    deps: DepsSpec | None
    session_id: str | None
    session_source: SessionSource | None
    session_file: Path | None
    dangling: tuple[DanglingCall, ...]
    reachable: bool | None
    max_turns: int
    delete_on_success: bool
    stale: bool
    already_in_session: bool
    warnings: tuple[str, ...]
    problems: tuple[str, ...]
    stale_reason: str | None = None
    """Why a run whose head says running is not live (see core.run_status)."""
    web_chat: str | None = None
    """The lovia web chat whose records the run's end settles (core.web_settle)."""
    afterwards: tuple[str, ...] = ()
    """What the run leaves behind once it ends (checkpoint, web records)."""
    approvals: Approvals = Approvals()
    """Which calls will ask for approval, and whether the agent answers itself."""

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def status(self) -> str:
        return self.run.status

    @property
    def error(self) -> dict[str, Any] | None:
        return self.run.error

    @property
    def checkpoint_file(self) -> Path:
        return self.run.file


async def _find_run(ws: Workspace, run_id: str) -> RunInfo:
    run = await ws.find_run(run_id)
    if run is None:
        raise ActionError(f"no checkpoint {run_id!r} in the open files")
    return run


async def _check_files(
    ws: Workspace, run: RunInfo, session: RunSession, found: Findings
) -> None:
    """The run's head readable; the files it writes writable, without triggers of their own."""
    if run.unreadable is not None:
        found.problems.append(
            f"the run's head is unreadable ({run.unreadable.reason}): lovia cannot load it"
        )
    writes = {session.file: "this appends to it"} if session.file else {}
    for path, how in {**writes, run.file: "this writes to it"}.items():
        if ws.database(path).readonly:
            found.problems.append(f"{path} was opened read-only, and {how}")
        elif problem := await asyncio.to_thread(own_schema_problem, path):
            found.problems.append(problem)


def _check_status(
    run: RunInfo, stale_after: float, force: bool, found: Findings
) -> bool:
    """Status checks for a resume; returns whether the run looks crashed (stale)."""
    now = time.time()
    if run.status == RunStatus.COMPLETED:
        found.problems.append(
            "it completed: there is nothing to resume; replay it to see its "
            "output (and to store it in its session if that append was lost)"
        )
    elif run.is_live(now, stale_after):
        found.block(
            f"it is running and saved {ago(now, run.updated_at)} (under the "
            f"{stale_after:g}s staleness threshold): another process may still own it, and "
            "resuming a live run corrupts it (if its process is gone, a shorter "
            "--stale-after says so; --force overrides)", unless=force,
        )  # fmt: skip
    elif run.is_stale(now, stale_after):
        found.warnings.append(
            f"running in its head, but not live: {stale_reason(run, now, stale_after)}"
        )
    elif run.status == RunStatus.FAILED and run.error:
        found.warnings.append(
            f"it failed with {error_line(run.error)}; resuming "
            "continues from its last save and the same error may recur"
        )
    return run.is_stale(now, stale_after)


def _max_turns(run: RunInfo, max_turns: int | None, found: Findings) -> int:
    """Turns carry over into a resume, so the limit must exceed the turns already taken."""
    chosen = (
        max(LOVIA_MAX_TURNS, run.turns + EXTRA_TURNS)
        if max_turns is None
        else max_turns
    )
    if chosen <= run.turns:
        found.problems.append(
            f"max_turns {chosen} must exceed the {plural(run.turns, 'turn')} the run already took "
            "(turns carry over into a resume)"
        )
    elif (run.error or {}).get("type") == "MaxTurnsExceeded":
        found.warnings.append(
            f"it stopped on MaxTurnsExceeded after {plural(run.turns, 'turn')}; turns carry over, "
            f"so this resume allows up to {chosen} in all"
        )
    return chosen


def _check_agent(
    agent: AgentSpec, run: RunInfo, found: Findings, *, strict: bool
) -> bool | None:
    try:
        entry = agent.build()
    except LoviaTuiError as exc:
        found.problems.append(str(exc))
        return None
    reason = unreachable_reason(entry, run)
    if reason is not None:
        if strict:
            found.problems.append(reason)
        else:
            found.warnings.append(
                f"{reason}; the replayed result is attributed to {entry.name!r}"
            )
    return reason is None


async def preflight(
    ws: Workspace,
    run_id: str,
    *,
    agent: AgentSpec | None,
    deps: DepsSpec | None = None,
    session_id: str | None = None,
    no_session: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
    max_turns: int | None = None,
    delete_on_success: bool = False,
    force: bool = False,
) -> Preflight:
    """Everything a resume of ``run_id`` will do, read from ``ws`` without writing.

    Raises :class:`ActionError` only when no open file has the run; anything
    else that stops the resume is listed in ``problems``.
    """
    refuse_non_text("run", run_id)
    run = await _find_run(ws, run_id)
    found = Findings()
    stale = _check_status(run, stale_after, force, found)
    chosen_turns = _max_turns(run, max_turns, found)
    session = await run_session(ws, run, "resume", session_id, no_session, force, found)
    await _check_files(ws, run, session, found)
    entries, unreadable = await checkpoint_reads.snapshot_entries(
        ws.database(run.file), run_id
    )
    found.problems.extend(f"{bad}: lovia cannot load this run" for bad in unreadable)
    dangling = tuple(dangling_calls([entry.data for entry in entries]))
    if dangling:
        found.warnings.append(
            f"{plural(len(dangling), 'tool call')} with no result run again first: at least once, "
            "so a call that already had its effect before the crash has it twice"
        )
    reachable = None
    if agent is None:
        found.problems.append(
            f"resume needs --agent MODULE:ATTR: the entry agent whose handoffs reach {run.agent_name!r}"
        )
    else:
        reachable = _check_agent(agent, run, found, strict=True)
    web_chat = await settled_chat(ws, run, session.session_id, found.problems)
    if web_chat is not None:
        found.warnings.append(
            f"lovia web's page offers to reconnect chat {web_chat!r}'s run while "
            "this resume goes: reconnected there too, its tool calls run twice; "
            "if the server is up, resume it from the page instead"
        )
    delete_on_success = delete_on_success or web_chat is not None
    approvals = (
        approvals_of(agent.build(), run, dangling)
        if reachable and agent
        else Approvals()
    )
    if approvals.nested:
        found.warnings.append(nested_note(approvals.nested))
    return Preflight(
        mode="resume",
        run=run,
        agent=agent,
        deps=deps,
        session_id=session.session_id,
        session_source=session.source,
        session_file=session.file,
        dangling=dangling,
        reachable=reachable,
        max_turns=chosen_turns,
        delete_on_success=delete_on_success,
        stale=stale,
        already_in_session=session.already_in,
        warnings=tuple(found.warnings),
        problems=tuple(found.problems),
        stale_reason=stale_reason(run, time.time(), stale_after) if stale else None,
        web_chat=web_chat,
        afterwards=tuple(afterwards(web_chat, delete_on_success, session.session_id)),
        approvals=approvals,
    )


async def preflight_replay(
    ws: Workspace,
    run_id: str,
    *,
    agent: AgentSpec | None = None,
    session_id: str | None = None,
    no_session: bool = False,
    delete_on_success: bool = False,
    force: bool = False,
) -> Preflight:
    """What a replay of completed ``run_id`` will do: show its output, store it in its session.

    No agent is needed (a completed run's replay never calls a model); a given
    one only names the agent the result is attributed to.
    """
    run = await _find_run(ws, run_id)
    found = Findings()
    if run.status != RunStatus.COMPLETED:
        found.problems.append(f"it is {run.status}, not completed: resume it instead")
    session = await run_session(ws, run, "replay", session_id, no_session, force, found)
    await _check_files(ws, run, session, found)
    if session.already_in:
        found.warnings.append(
            f"already stored in session {session.session_id!r}: the replay leaves it unchanged "
            "(lovia's append is idempotent)"
        )
    elif session.session_id is not None:
        found.warnings.append(
            f"not stored in session {session.session_id!r} yet: the replay appends it"
        )
    reachable = None if agent is None else _check_agent(agent, run, found, strict=False)
    web_chat = await settled_chat(ws, run, session.session_id, found.problems)
    delete_on_success = delete_on_success or web_chat is not None
    return Preflight(
        mode="replay",
        run=run,
        agent=agent,
        deps=None,
        session_id=session.session_id,
        session_source=session.source,
        session_file=session.file,
        dangling=(),
        reachable=reachable,
        max_turns=LOVIA_MAX_TURNS,
        delete_on_success=delete_on_success,
        stale=False,
        already_in_session=session.already_in,
        warnings=tuple(found.warnings),
        problems=tuple(found.problems),
        web_chat=web_chat,
        afterwards=tuple(afterwards(web_chat, delete_on_success, session.session_id)),
    )
