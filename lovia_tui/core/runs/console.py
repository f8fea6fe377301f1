"""What a resume or replay shows as it runs: lovia's events and log lines as plain records.

A :class:`ConsoleEvent` is frozen, JSON-safe and knows nothing of Textual or
lovia, so a worker can post it as a message, the CLI can print it and
``--json`` can dump it. lovia's events are matched by class name: lovia is
imported only by the code producing them, and an event type a newer lovia
adds still shows (as ``other``) instead of breaking the console.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from lovia_tui.core.entries import entry_text, shorten
from lovia_tui.core.formatting import plural, usage_line
from lovia_tui.core.runs.redact import redact

EventKind = Literal[
    "preflight",
    "run_started",
    "turn_started",
    "turn_ended",
    "text_delta",
    "reasoning_delta",
    "output_discarded",
    "message_completed",
    "user_message",
    "tool_started",
    "tool_result",
    "tool_failed",
    "approval_required",
    "approval_decided",
    "handoff",
    "retrying",
    "compacted",
    "usage",
    "run_completed",
    "run_failed",
    "log",
    "other",
]
StyleHint = Literal[
    "info", "muted", "text", "reasoning", "tool", "success", "warning", "error"
]
PREVIEW_WIDTH = 200
ERROR_WIDTH = 300


@dataclass(frozen=True)
class ConsoleEvent:
    """One line of the live console: ``text`` for people, ``data`` (JSON-safe) for code.

    ``text_delta`` and ``reasoning_delta`` carry a raw fragment to append to
    the current line; every other kind is a line of its own. The last event
    of a run is ``run_completed`` or ``run_failed``, whose ``data["status"]``
    is the checkpoint's status after the run.
    """

    kind: EventKind
    text: str
    style: StyleHint = "info"
    data: Mapping[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "style": self.style,
            "data": dict(self.data),
            "at": self.at,
        }


def one_line(exc: BaseException) -> str:
    """An exception as one line (lovia's errors append an indented hint line),
    with any credential it quotes redacted."""
    text = shorten(redact(str(exc)), ERROR_WIDTH)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def call_data(call: Any) -> dict[str, Any]:
    return {"call_id": call.id, "name": call.name, "arguments": call.arguments}


def _error(exc: BaseException) -> dict[str, Any]:
    return {"error_type": type(exc).__name__, "error": redact(str(exc))}


def usage_event(usage: Mapping[str, Any], turns: int) -> ConsoleEvent:
    """What the run spent, every count lovia keeps (cache tokens too)."""
    text = f"usage: {usage_line(dict(usage))} tokens · {plural(turns, 'turn')}"
    return ConsoleEvent("usage", text, "muted", {"usage": dict(usage), "turns": turns})


def completed_event(output: Any) -> ConsoleEvent:
    from lovia.transcript import to_json_safe

    text = output if isinstance(output, str) else repr(output)
    return ConsoleEvent(
        "run_completed",
        f"completed: {text}",
        "success",
        {"status": "completed", "output": to_json_safe(output)},
    )


def failed_event(error: BaseException, status: str) -> ConsoleEvent:
    return ConsoleEvent(
        "run_failed",
        f"{status}: {one_line(error)}",
        "error",
        {"status": status, **_error(error)},
    )


def _message(ev: Any) -> ConsoleEvent:
    from lovia.transcript import entry_to_dict

    entries = [entry_to_dict(entry) for entry in ev.entries]
    parts = []
    for entry in entries:
        kind = entry["type"]
        label = {"assistant_text": "assistant", "tool_call": "→"}.get(kind, kind)
        parts.append(f"{label} {shorten(entry_text(entry), PREVIEW_WIDTH)}")
    return ConsoleEvent(
        "message_completed",
        " · ".join(parts) or "(empty message)",
        "info",
        {"entries": entries},
    )


def _tool_result(ev: Any) -> ConsoleEvent:
    name = ev.call.name
    text = f"{name} → {shorten(ev.output, PREVIEW_WIDTH)}"
    data = {**call_data(ev.call), "is_error": ev.is_error, "output": ev.output}
    return ConsoleEvent("tool_result", text, "error" if ev.is_error else "tool", data)


def _tool_failed(ev: Any) -> ConsoleEvent:
    call = call_data(ev.call) if ev.call is not None else {}
    text = f"{call.get('name', 'tool')} failed: {one_line(ev.error)}"
    return ConsoleEvent("tool_failed", text, "error", {**call, **_error(ev.error)})


def _retrying(ev: Any) -> ConsoleEvent:
    text = (
        f"model call failed ({one_line(ev.error)}); attempt {ev.attempt + 1}/"
        f"{ev.max_attempts} in {ev.delay:.1f}s"
    )
    data = {
        **_error(ev.error),
        "attempt": ev.attempt,
        "max_attempts": ev.max_attempts,
        "delay": ev.delay,
    }
    return ConsoleEvent("retrying", text, "warning", data)


def _compacted(ev: Any) -> ConsoleEvent:
    notice = ev.notice
    text = f"context compacted ({notice.reason}): {notice.tokens_before} → {notice.tokens_after} tokens"
    if notice.detail:
        text += " · " + "; ".join(notice.detail)
    return ConsoleEvent("compacted", text, "info", dataclasses.asdict(notice))


_TRANSLATIONS: dict[str, Callable[[Any], ConsoleEvent]] = {
    "RunStarted": lambda ev: ConsoleEvent(
        "run_started",
        f"run started on agent {ev.agent.name!r}",
        "info",
        {"agent": ev.agent.name},
    ),
    "TurnStarted": lambda ev: ConsoleEvent(
        "turn_started",
        f"turn {ev.turn} · {ev.agent.name}",
        "muted",
        {"turn": ev.turn, "agent": ev.agent.name},
    ),
    "TurnEnded": lambda ev: ConsoleEvent(
        "turn_ended",
        f"turn {ev.turn} ended",
        "muted",
        {"turn": ev.turn, "agent": ev.agent.name},
    ),
    "TextDelta": lambda ev: ConsoleEvent("text_delta", ev.delta, "text"),
    "ReasoningDelta": lambda ev: ConsoleEvent("reasoning_delta", ev.delta, "reasoning"),
    "OutputDiscarded": lambda ev: ConsoleEvent(
        "output_discarded",
        "partial output discarded: the turn streams again",
        "warning",
    ),
    "MessageCompleted": _message,
    "UserMessageInjected": lambda ev: ConsoleEvent(
        "user_message",
        f"user (injected): {shorten(entry_text({'content': ev.content}), PREVIEW_WIDTH)}",
        "info",
        {"turn": ev.turn},
    ),
    "ToolCallStarted": lambda ev: ConsoleEvent(
        "tool_started",
        f"{ev.call.name}({shorten(ev.call.arguments, PREVIEW_WIDTH)})",
        "tool",
        call_data(ev.call),
    ),
    "ToolCallCompleted": _tool_result,
    "ToolCallFailed": _tool_failed,
    "HandoffOccurred": lambda ev: ConsoleEvent(
        "handoff",
        f"handoff {ev.from_agent.name} → {ev.to_agent.name}",
        "info",
        {"from": ev.from_agent.name, "to": ev.to_agent.name},
    ),
    "ModelRetrying": _retrying,
    "ContextCompacted": _compacted,
}


def translate(event: Any) -> ConsoleEvent:
    """The console record for one lovia event (terminal events are built by the runner)."""
    name = type(event).__name__
    translation = _TRANSLATIONS.get(name)
    if translation is None:
        return ConsoleEvent("other", name, "muted", {"event": name})
    try:
        return translation(event)
    except Exception as exc:  # a display bug must not abandon the run mid-stream
        return ConsoleEvent(
            "other", f"cannot show {name}: {one_line(exc)}", "warning", {"event": name}
        )


def approval_event(call: Any, answering: Any, why: str) -> ConsoleEvent:
    """A call waits for approval; ``answering`` (see resume.Answering) says who answers."""
    asking = answering == "ask"
    if asking:
        who = "waiting for your answer"
    elif answering == "agent":
        who = "left to the agent's approval_handler (lovia denies it without one)"
    else:
        who = f"answered by {answering.flag}"
    text = (
        f"{call.name}({shorten(call.arguments, PREVIEW_WIDTH)}) needs approval "
        f"({why}) · {who}"
    )
    data = {**call_data(call), "why": why, "asking": asking}
    return ConsoleEvent("approval_required", text, "warning", data)


def decision_event(call: Any, decision: Any, journal_entry: int | None) -> ConsoleEvent:
    """How an approval was answered, by whom and why (``journal_entry``: its record)."""
    text = f"{call.name} {decision.verb} by {decision.by}: {decision.reason}"
    data = {
        **call_data(call),
        "approved": decision.approved,
        "reason": decision.reason,
        "by": decision.by,
        "journal_entry": journal_entry,
    }
    style: StyleHint = "success" if decision.approved else "warning"
    return ConsoleEvent("approval_decided", text, style, data)


def unanswered_event(call: Any) -> ConsoleEvent:
    text = f"{call.name} left unanswered: the run stops here, and a resume asks again"
    return ConsoleEvent(
        "approval_decided", text, "warning", {**call_data(call), "approved": None}
    )


def _level_style(levelno: int) -> StyleHint:
    if levelno >= logging.ERROR:
        return "error"
    return "warning" if levelno >= logging.WARNING else "muted"


_CAPTURING: ContextVar[object | None] = ContextVar("lovia_tui_capturing", default=None)


class LogCapture(logging.Handler):
    """Turns the ``lovia`` logger's records from one run into console events.

    Only records emitted in the run's own context (its task, the tasks and
    threads it starts) are taken, so runs in parallel never mix their lines.
    Records from other threads are handed to the loop thread-safely. While
    attached it lowers the ``lovia`` logger to ``level`` if it is higher, so
    handlers an app set on lovia's ancestors see those records too meanwhile.
    """

    def __init__(
        self, sink: Callable[[ConsoleEvent], None], level: int = logging.INFO
    ) -> None:
        super().__init__(level)
        self._sink = sink
        self._token = object()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._logger = logging.getLogger("lovia")
        self._saved_level = self._logger.level

    def mark_context(self) -> None:
        """Call inside the run's context: records emitted there are captured."""
        _CAPTURING.set(self._token)

    def __enter__(self) -> LogCapture:
        self._logger.addHandler(self)
        if self._logger.getEffectiveLevel() > self.level:
            self._logger.setLevel(self.level)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._saved_level)

    def emit(self, record: logging.LogRecord) -> None:
        if _CAPTURING.get() is not self._token:
            return
        try:
            message = record.getMessage()
        except Exception:
            self.handleError(record)
            return
        event = ConsoleEvent(
            "log",
            f"{record.levelname.lower()} {record.name}: {redact(message)}",
            _level_style(record.levelno),
            {"level": record.levelname, "logger": record.name},
            record.created,
        )
        if threading.get_ident() == self._thread:
            self._sink(event)
        else:
            self._loop.call_soon_threadsafe(self._sink, event)
