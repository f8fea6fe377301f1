"""Resume or replay a checkpointed run through lovia's own ``Runner``, as a stream of console events.

Both make the one call lovia documents (``Runner.stream(entry_agent, [],
checkpoint=CheckpointOptions(..., if_run_exists="resume_only"))``) from a
:class:`~lovia_tui.core.runs.preflight.Preflight` without problems, and yield
:class:`~lovia_tui.core.runs.console.ConsoleEvent` records, lovia's log lines
included, until the run ends. lovia is imported only once a run starts.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import sqlite3
import threading
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from lovia_tui.core.actions.web_settle import reopen_record, settle_records
from lovia_tui.core.errors import ActionError, LoviaTuiError
from lovia_tui.core.models import RunInfo
from lovia_tui.core.runs.agents import placeholder_agent
from lovia_tui.core.runs.approvals import (
    NEEDS_APPROVAL,
    Decision,
    Rule,
    approval_reasons,
    journal_decision,
)
from lovia_tui.core.runs.console import (
    ConsoleEvent,
    LogCapture,
    approval_event,
    call_data,
    completed_event,
    decision_event,
    failed_event,
    one_line,
    translate,
    unanswered_event,
    usage_event,
)
from lovia_tui.core.runs.preflight import Mode, Preflight
from lovia_tui.core.runs.run_journal import RunJournal
from lovia_tui.core.store import checkpoint_reads
from lovia_tui.core.store.database import open_database

if TYPE_CHECKING:
    from lovia_tui.core.actions.journal import Journal


Answering = Literal["ask", "agent"] | Rule
"""``ask``: a person answers through :meth:`RunControl.approve` / ``reject``;
``agent``: the agent's own ``approval_handler`` (lovia denies without one);
a :class:`Rule`: answered at once, as scripted."""


class RunControl:
    """Stops, and answers the approvals of, one resume or replay; any thread may call it.

    :meth:`cancel` asks lovia to stop at its next safe point (a turn start, a
    tool call); the event stream keeps going to its end and the run ends
    ``interrupted``, resumable again. A cancel while an approval waits leaves
    that call unanswered (lovia stops there), so the next resume asks again.
    The run and every answer lovia-tui gives are written to ``journal``, the
    run with ``reason``.
    """

    def __init__(
        self, *, answering: Answering = "agent", journal: Journal | None = None,
        reason: str | None = None,
    ) -> None:  # fmt: skip
        self.answering, self.journal, self.reason = answering, journal, reason
        self._lock = threading.Lock()
        self._handle: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel_reason: str | None = None
        self._pending: dict[str, asyncio.Future[Decision | None]] = {}

    @property
    def cancelled(self) -> bool:
        return self._cancel_reason is not None

    def cancel(self, reason: str = "cancelled from lovia-tui") -> None:
        with self._lock:
            self._cancel_reason = self._cancel_reason or reason
            handle, loop = self._handle, self._loop
        if handle is not None:
            handle.cancel(self._cancel_reason)
        if loop is not None:
            loop.call_soon_threadsafe(self._decide_all, None)

    def approve(self, call_id: str, reason: str = "") -> None:
        self._decide_soon(call_id, Decision(True, reason or "approved", "you"))

    def reject(self, call_id: str, reason: str = "") -> None:
        self._decide_soon(call_id, Decision(False, reason or "denied", "you"))

    def _attach(self, handle: Any) -> None:
        with self._lock:
            self._handle, self._loop = handle, asyncio.get_running_loop()
            reason = self._cancel_reason
        if reason is not None:
            handle.cancel(reason)

    def _detach(self) -> None:
        """The run is over: later calls only record, they reach no loop (it may be closed)."""
        with self._lock:
            self._handle, self._loop = None, None

    async def _decision(self, tool: str, call_id: str) -> Decision | None:
        """The answer for one call; None leaves it to the agent, or to a cancel."""
        if isinstance(self.answering, Rule):
            return self.answering.decide(tool)
        if self.answering == "agent" or self.cancelled:
            return None
        future = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        try:
            return await future
        finally:
            self._pending.pop(call_id, None)

    def _decide_soon(self, call_id: str, decision: Decision) -> None:
        with self._lock:
            loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._decide, call_id, decision)

    def _decide(self, call_id: str, decision: Decision | None) -> None:
        future = self._pending.get(call_id)
        if future is not None and not future.done():
            future.set_result(decision)

    def _decide_all(self, decision: Decision | None) -> None:
        for call_id in list(self._pending):
            self._decide(call_id, decision)


def resume(
    pf: Preflight, control: RunControl | None = None
) -> AsyncGenerator[ConsoleEvent, None]:
    """Resume the run ``pf`` describes; iterate to the end, even after a cancel.

    Raises :class:`ActionError` at once if the preflight has problems. If the
    consumer stops iterating early, the run is cancelled hard (asyncio) and
    lovia records it ``interrupted``; :meth:`RunControl.cancel` is the gentle way.
    """
    return _run(_checked(pf, "resume"), control or RunControl())


def replay(
    pf: Preflight, control: RunControl | None = None
) -> AsyncGenerator[ConsoleEvent, None]:
    """Replay the completed run ``pf`` describes: its output, and its session append."""
    return _run(_checked(pf, "replay"), control or RunControl())


def _checked(pf: Preflight, mode: Mode) -> Preflight:
    if pf.mode != mode:
        raise ActionError(f"this preflight is for a {pf.mode}, not a {mode}")
    if pf.problems:
        raise ActionError(f"cannot {mode} run {pf.run.run_id!r}: {pf.problems[0]}")
    return pf


async def _run(
    pf: Preflight, control: RunControl
) -> AsyncGenerator[ConsoleEvent, None]:
    from lovia import CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession

    agent = (
        pf.agent.build()
        if pf.agent is not None
        else placeholder_agent(pf.run.agent_name)
    )
    reasons = approval_reasons(agent)
    journal, reason = control.journal, control.reason
    journaled = None if journal is None else await RunJournal.begin(journal, pf, reason)
    try:  # the entry is locked from its start: let go however the run ends
        if pf.web_chat is not None:
            await reopen_record(pf.checkpoint_file, pf.run, pf.web_chat)
        if journaled is None:
            checkpointer = SQLiteCheckpointer(pf.checkpoint_file, wal=True)
        else:
            checkpointer = journaled.checkpointer(pf.checkpoint_file)
        session = None
        if pf.session_file is not None:
            session = (
                SQLiteSession(pf.session_file, wal=True)
                if journaled is None
                else journaled.session(pf.session_file)
            )
        handle = Runner.stream(
            agent,
            [],
            deps=pf.deps.build() if pf.deps is not None else None,
            max_turns=pf.max_turns,
            session=session,
            session_id=pf.session_id,
            checkpoint=CheckpointOptions(
                checkpointer,
                pf.run.run_id,
                if_run_exists="resume_only",
                delete_on_success=pf.delete_on_success,
            ),
        )
        queue: asyncio.Queue[ConsoleEvent | None] = asyncio.Queue()
        with LogCapture(queue.put_nowait) as capture:
            context = contextvars.copy_context()
            context.run(capture.mark_context)
            pump = asyncio.get_running_loop().create_task(
                _pump(handle, pf, control, queue.put_nowait, reasons, journaled),
                context=context,
            )
            try:
                while (event := await queue.get()) is not None:
                    yield event
                await pump
            finally:
                if not pump.done():
                    pump.cancel()
                    await asyncio.gather(pump, return_exceptions=True)
    finally:
        if journaled is not None:
            journaled.release()


async def _pump(
    handle: Any,
    pf: Preflight,
    control: RunControl,
    put: Callable[[ConsoleEvent | None], None],
    reasons: Mapping[str, str],
    journaled: RunJournal | None,
) -> None:
    """Drive lovia's stream to its end, translating every event; runs in its own task.

    The usage and terminal records are held back to the very end, so that
    lovia's closing log lines come before them and the terminal one is last;
    the journal records what the run left once lovia web's records are settled.
    """
    control._attach(handle)
    ending: list[ConsoleEvent] = []
    completed_usage: dict[str, Any] | None = None
    last_input_tokens: int | None = None
    unanswered: list[str] = []
    try:
        async for event in handle:
            kind = type(event).__name__
            if kind == "RunCompleted":
                result = event.result
                completed_usage = dataclasses.asdict(result.usage)
                last_input_tokens = result.last_input_tokens
                ending += [
                    usage_event(completed_usage, result.turns),
                    completed_event(result.output),
                ]
            elif kind == "RunFailed":
                ending += await _failed(pf, event.error)
            elif kind == "ApprovalRequired":
                if not await _answer(event, handle, pf.run, control, put, reasons):
                    unanswered.append(event.call.name)
            else:
                put(translate(event))
    except asyncio.CancelledError:
        if not unanswered:
            raise
        # lovia stopped the run on the unanswered approval: interrupted, the
        # call kept without a result, so the next resume asks again.
        waited = ", ".join(unanswered)
        stop = asyncio.CancelledError(f"cancelled while {waited} waited for approval")
        ending += await _failed(pf, stop)
    finally:
        control._detach()
        if pf.web_chat is not None:
            put(await _settle(pf, completed_usage, last_input_tokens))
        if journaled is not None:
            put(await _journal_finish(journaled))
        for record in ending:
            put(record)
        put(None)


async def _failed(pf: Preflight, error: BaseException) -> list[ConsoleEvent]:
    after = await _head_after(pf)
    usage = [usage_event(after.usage, after.turns)] if after is not None else []
    return [*usage, failed_event(error, after.status if after else "unknown")]


async def _answer(
    event: Any,
    handle: Any,
    run: RunInfo,
    control: RunControl,
    put: Callable[[ConsoleEvent | None], None],
    reasons: Mapping[str, str],
) -> bool:
    """Answer one ``ApprovalRequired``; False when a cancel left it unanswered.

    An unanswered call's approval is cancelled on lovia's own channel, which
    makes lovia end the run ``interrupted`` right there without a result for
    the call (a denial would be stored, and a resume would not ask again).
    """
    call = event.call
    put(approval_event(call, control.answering, reasons.get(call.name, NEEDS_APPROVAL)))
    try:
        decision = await control._decision(call.name, call.id)
    except asyncio.CancelledError:
        # The consumer stopped listening: as a cancel, outside lovia's awaits.
        control.cancel()
        decision = None
    if decision is None and control.cancelled:
        handle.approvals.register(call.id).cancel()
        put(unanswered_event(call))
        return False
    if decision is not None:
        journal_entry = await _journal(control, run, call, decision, put)
        put(decision_event(call, decision, journal_entry))
        (event.approve if decision.approved else event.reject)()
    return True


async def _journal(
    control: RunControl,
    run: RunInfo,
    call: Any,
    decision: Decision,
    put: Callable[[ConsoleEvent | None], None],
) -> int | None:
    """Journal an answer; a journal that cannot be written is a warning, not a stop."""
    if control.journal is None:
        return None
    try:
        return await journal_decision(control.journal, run, call_data(call), decision)
    except (OSError, sqlite3.Error, LoviaTuiError) as exc:
        put(
            ConsoleEvent(
                "log", f"could not journal the answer: {one_line(exc)}", "warning"
            )
        )
        return None


async def _settle(
    pf: Preflight,
    completed_usage: dict[str, Any] | None,
    completed_last_input: int | float | None,
) -> ConsoleEvent:
    """Settle lovia web's records as its server does when a run ends; a failure
    to do so is a warning line, never a failed run (the run itself is done)."""
    try:
        after = await _head_after(pf)
        if completed_usage is not None:
            status, usage, error = "completed", completed_usage, None
            last_input = completed_last_input
        elif after is None:
            return ConsoleEvent(
                "log", "lovia web's records: the checkpoint is gone", "warning"
            )
        else:
            error = (after.error or {}).get("message")
            status, usage = after.status, after.usage
            last_input = after.last_input_tokens
        text = await settle_records(
            pf.checkpoint_file,
            pf.run,
            pf.web_chat or "",
            status,
            (usage, last_input),
            error,
        )
        return ConsoleEvent("log", text, "muted")
    except Exception as exc:  # the run is over whatever happens here
        return ConsoleEvent(
            "log", f"could not settle lovia web's records: {one_line(exc)}", "warning"
        )


async def _journal_finish(journaled: RunJournal) -> ConsoleEvent:
    """Record what the run left; the entry stays unfinished (undone as such)
    when that fails: a warning line, the run itself is over."""
    try:
        text = await journaled.finish()
    except Exception as exc:
        return ConsoleEvent(
            "log", f"could not journal what the run left: {one_line(exc)}", "warning"
        )
    return ConsoleEvent("log", text, "muted", {"journal_id": journaled.entry_id})


async def _head_after(pf: Preflight) -> RunInfo | None:
    """The run's head as lovia left it: the status a failed run ended with."""
    db = await open_database(pf.checkpoint_file, readonly=True)
    try:
        found = await checkpoint_reads.runs(db, [pf.run.run_id])
    finally:
        await db.close()
    return found[0] if found else None
