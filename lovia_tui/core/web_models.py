"""lovia web's own records about a chat, as plain frozen data: run records,
the chat row's ties (subagent parent, fork origin) and schedules.

Every field is read from a cell that may hold anything (a hostile or damaged
file): text fields are text or None, numbers numbers or None, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lovia_tui.core.entries import shorten
from lovia_tui.core.formatting import plural, timestamp, usage_line
from lovia_tui.core.stored import stored_number

SCHEDULE_SOURCE = "schedule:"
SUBAGENT_SOURCE = "subagent:"
REPORT_SOURCE = "subagent-report:"
SPAWN_SOURCE = "spawn:"
COUNT_CAP = 10_000
"""Counts of tasks and schedule runs stop here (shown as "10,000+")."""


def stored_text(value: Any) -> str | None:
    """A text cell as text; a number as its digits; a BLOB decoded (bad bytes
    replaced); NULL as None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def stored_time(value: Any) -> float | None:
    """A stored epoch time, else None (a hostile cell)."""
    number = stored_number(value)
    return None if number is None else float(number)


ENDED_UNFINISHED = frozenset({"failed", "cancelled", "interrupted"})
"""lovia web's statuses of a run that ended without completing."""
NOTE_ERROR_WIDTH = 160
"""Characters of a run's error on its segment's header line."""


def started_by(source: str) -> str:
    """What started a run, in words, from lovia web's ``chat_runs.source``."""
    for prefix, words in (
        (SCHEDULE_SOURCE, "schedule"),
        (REPORT_SOURCE, "report of subagent task"),
        (SUBAGENT_SOURCE, "subagent task"),
        (SPAWN_SOURCE, "spawned by chat"),
    ):
        if source.startswith(prefix):
            return f"{words} {source[len(prefix) :]}"
    return "the user" if source == "user" else source


@dataclass(frozen=True)
class RunRecord:
    """One ``chat_runs`` row: lovia web's record of a run, kept whatever the
    run left behind (a failed or cancelled run may have no checkpoint and no
    segment: the record is then all there is of it)."""

    run_id: str
    session_id: str | None
    agent: str | None
    source: str
    status: str
    error: str | None
    started_at: float | None
    finished_at: float | None
    usage: dict[str, Any] | None
    usage_problem: str | None = None
    """Why ``usage_json`` could not be read (it is then None)."""
    saved: bool | None = None
    """Its run has a segment in the chat (None: not looked up)."""

    @property
    def started_by(self) -> str:
        return started_by(self.source)

    def segment_note(self, error_width: int = NOTE_ERROR_WIDTH) -> str:
        """What the record adds to its run's segment: what started it when not
        the user, and how it ended when it did not complete (lovia web keeps
        a failed or stopped run's finished turns, its user message at least:
        the segment alone reads as a run that got no answer)."""
        parts = [f"by {self.started_by}"] if self.source not in ("", "user") else []
        if self.status in ENDED_UNFINISHED:
            error = self.error if self.error and self.error != self.status else None
            parts.append(
                self.status + (f": {shorten(error, error_width)}" if error else "")
            )
        return " · ".join(parts)

    @property
    def schedule_id(self) -> str | None:
        return (
            self.source[len(SCHEDULE_SOURCE) :]
            if self.source.startswith(SCHEDULE_SOURCE)
            else None
        )

    def as_dict(self) -> dict[str, Any]:
        """The keys ``show --json`` and the JSON export print."""
        fields: dict[str, Any] = {
            "run_id": self.run_id,
            "status": self.status,
            "source": self.source,
            "agent": self.agent,
            "error": self.error,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "usage": self.usage,
        }
        if self.usage_problem:
            fields["usage_unreadable"] = self.usage_problem
        if self.saved is not None:
            fields["in_transcript"] = self.saved
        return fields


@dataclass(frozen=True)
class Schedule:
    """One ``chat_schedules`` row, with how many runs it started and the last one."""

    schedule_id: str
    agent: str | None
    input: str | None
    session_id: str | None
    """The chat every fire runs in; None: a fresh chat per fire."""
    trigger_kind: str | None
    trigger_expr: str | None
    next_fire: float | None
    active: bool
    fire_count: int | None
    max_fires: int | None
    until: str | None
    expires_at: float | None
    finished_reason: str | None
    last_session_id: str | None
    runs: int = 0
    last_run: RunRecord | None = None

    @property
    def state(self) -> str:
        """active, paused, or done (lovia web's reading of ``active`` and
        ``finished_reason``)."""
        if self.active:
            return "active"
        return f"done: {self.finished_reason}" if self.finished_reason else "paused"

    def as_dict(self) -> dict[str, Any]:
        return {
            "schedule_id": self.schedule_id,
            "agent": self.agent,
            "input": self.input,
            "session_id": self.session_id,
            "trigger_kind": self.trigger_kind,
            "trigger_expr": self.trigger_expr,
            "next_fire": self.next_fire,
            "active": self.active,
            "state": self.state,
            "fire_count": self.fire_count,
            "max_fires": self.max_fires,
            "until": self.until,
            "expires_at": self.expires_at,
            "finished_reason": self.finished_reason,
            "last_session_id": self.last_session_id,
            "runs": self.runs,
            "last_run": self.last_run.as_dict() if self.last_run else None,
        }


@dataclass(frozen=True)
class ChatInfo:
    """A chat's row in ``chat_sessions``: whose subagent task it is, where it
    was forked from, and what else lovia web keeps about it."""

    session_id: str
    title: str | None
    agent: str | None
    created_at: float | None
    parent_id: str | None
    """Set on a subagent task chat: the chat whose agent spawned it."""
    parent_title: str | None
    origin_kind: str | None
    """``fork`` (a copy) or ``spawn`` (started by another chat's agent)."""
    origin_session_id: str | None
    origin_ref: str | None
    """A fork's cut: the source's user message ``<run_id>:<n>`` it stops before."""
    tasks: int = 0
    """Its own subagent task chats."""
    schedules: tuple[Schedule, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "agent": self.agent,
            "created_at": self.created_at,
            "parent_id": self.parent_id,
            "origin_kind": self.origin_kind,
            "origin_session_id": self.origin_session_id,
            "origin_ref": self.origin_ref,
            "tasks": self.tasks,
            "schedules": [schedule.as_dict() for schedule in self.schedules],
        }


# ----- in words: the same lines in the app, ``show`` and the Markdown export -----


def usage_text(usage: object, last_input_tokens: object = None) -> str:
    """Token counts of a record's ``usage_json`` (lovia web's ``usage_dict``,
    the last call's input inside it) or of a run's head (beside it): ""
    where nothing is stored."""
    if not usage or not isinstance(usage, dict):
        return ""
    last = usage.get("last_input_tokens", last_input_tokens)
    return "tokens " + usage_line(usage, last)


def record_line(record: RunRecord, error_width: int | None = None) -> str:
    """One line about a run record (stored text still raw: the caller makes it
    printable), its error cut to ``error_width``."""
    span = timestamp(record.started_at)
    if record.finished_at is not None:
        span += f" → {timestamp(record.finished_at)[11:]}"
    parts = [f"run {record.run_id} {record.status}", f"by {record.started_by}", span]
    if record.error and record.error != record.status:
        error = (
            record.error if error_width is None else shorten(record.error, error_width)
        )
        parts.append(f"error: {error}")
    if usage := usage_text(record.usage):
        parts.append(usage)
    if record.saved is False:
        parts.append(REWOUND if record.status == "completed" else UNSAVED)
    return f"{record_mark(record)} {' · '.join(parts)}"


def record_mark(record: RunRecord) -> str:
    """✖ for a run that did not complete; ↺ for one that did, its entries
    since gone from the chat (lovia web appends a completed run's segment)."""
    return "↺" if record.status == "completed" else "✖"


def record_details(record: RunRecord) -> list[str]:
    """Every field of a run record, one per line (its error whole)."""
    lines = [
        f"run id:      {record.run_id}",
        f"status:      {record.status} (lovia web's record)",
        f"started by:  {record.started_by} (source {record.source!r})",
        f"agent:       {record.agent or '-'}",
        f"started:     {timestamp(record.started_at)}",
        f"finished:    {timestamp(record.finished_at)}",
        f"usage:       {usage_text(record.usage) or '-'}",
    ]
    if record.usage_problem:
        lines.append(f"usage_json unreadable: {record.usage_problem}")
    if record.saved is False:
        lines.append(
            f"entries:     none in this chat (no segment, no checkpoint): "
            f"{'stopped' if record.status == 'cancelled' else 'ended'} before "
            "anything was saved, or cut away by a rewind"
        )
    error = (record.error or "-").splitlines() or [""]
    return [*lines, f"error:       {error[0]}", *error[1:]]


REWOUND = "its entries since cut from this chat (a rewind or an edit)"
"""A completed run's record with no segment here: lovia web appended one, a
rewind (or an edit and resend) cut it away, and the record stayed."""
UNSAVED = "no entries in this chat"
"""A record of a run that did not complete and left no segment here."""


def trigger_text(schedule: Schedule) -> str:
    kind, expr = schedule.trigger_kind, schedule.trigger_expr or ""
    if kind == "every":
        return f"every {expr} s"
    if kind == "at":
        try:
            return f"once at {timestamp(float(expr))}"
        except ValueError:
            return f"once at {expr}"
    return f"{kind} {expr}"


def schedule_line(schedule: Schedule) -> str:
    fires = f"{schedule.fire_count or 0} fires"
    if schedule.max_fires:
        fires += f" of at most {schedule.max_fires}"
    parts = [
        f"schedule {schedule.schedule_id}: {trigger_text(schedule)}",
        schedule.state,
        fires,
        f"{schedule.runs:,}+ runs"
        if schedule.runs >= COUNT_CAP
        else plural(schedule.runs, "run"),
    ]
    if schedule.active:
        parts.append(f"next {timestamp(schedule.next_fire)}")
    if last := schedule.last_run:
        parts.append(f"last {last.status}" + (f" ({last.error})" if last.error else ""))
    return " · ".join(parts)


def chat_lines(info: ChatInfo) -> list[str]:
    """What lovia web says of a chat beyond its transcript: whose task it is,
    where it was forked from, its tasks and schedules (nothing for a plain chat)."""
    lines = []
    if info.parent_id is not None:
        title = f" “{info.parent_title}”" if info.parent_title else ""
        lines.append(f"↳ subagent task of chat {info.parent_id}{title}")
    if info.origin_kind == "fork":
        cut = (
            f" before its message {info.origin_ref}"
            if info.origin_ref
            else " (the whole chat)"
        )
        lines.append(f"⑂ forked from chat {info.origin_session_id}{cut}")
    elif info.origin_kind == "spawn":
        lines.append(f"⑂ started by chat {info.origin_session_id}'s agent")
    elif info.origin_kind or info.origin_session_id:
        lines.append(f"⑂ origin {info.origin_kind}: chat {info.origin_session_id}")
    if info.tasks:
        more = "+" if info.tasks >= COUNT_CAP else ""
        lines.append(
            f"{info.tasks:,}{more} subagent task {'chat' if info.tasks == 1 else 'chats'}, "
            "listed under it in Sessions"
        )
    lines.extend(f"⏱ {schedule_line(schedule)}" for schedule in info.schedules)
    return lines
