"""What the user is looking at, as one value: the inspector's commands read
their target from it, and only from it.

A command that acts on a run takes the run highlighted in the Runs pane, and
only while that pane has the focus; one that acts on an entry takes the
transcript's cursor row, only while the transcript has it. So a key never
acts on a pane the user is not looking at (``R`` from Sessions used to
resume the runs pane's run). Each :class:`Need` says, in one line, why a
command does not apply, which the key bar shows dimmed and a key press says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lovia_tui.core.attachments import attachments
from lovia_tui.core.models import RunInfo, SessionKey
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.stored import non_text
from lovia_tui.view.kinds import Pane, RowKind
from lovia_tui.view.rows import Row


@dataclass(frozen=True)
class Selection:
    """The focused pane and what each pane has under its cursor."""

    pane: Pane | None
    session: SessionKey | None
    """The session the transcript shows (the Sessions pane's highlighted one);
    None while it shows a run on its own."""
    row: Row | None
    """The transcript's cursor row."""
    run: RunInfo | None
    """The Runs pane's highlighted run."""
    run_status: str | None
    """That run's status as the list shows it (``stale`` included)."""
    readonly: bool
    run_going: bool
    """A resume or replay is running in the console."""
    approval_waiting: bool = False
    """The run in the console waits for an approval only the user can give."""

    @property
    def entry_index(self) -> int | None:
        """The flat index of the session entry under the transcript's cursor."""
        row = self.row
        if self.session is None or row is None or row.entry is None:
            return None
        return row.entry.index

    @property
    def id_under_cursor(self) -> str | None:
        """What ``y`` copies: a session's id, a run's, or in the transcript the
        tool call's id (on a call or its result), else the row's run id."""
        if self.pane is Pane.SESSIONS:
            return self.session[1] if self.session else None
        if self.pane is Pane.RUNS:
            return self.run.run_id if self.run else None
        row = self.row
        if self.pane is not Pane.TRANSCRIPT or row is None:
            return None
        if row.entry is not None and row.entry.data.get("call_id"):
            return str(row.entry.data["call_id"])
        if row.segment is not None:
            return row.segment.run_id
        if row.record is not None:
            return row.record.run_id
        return row.run.run_id if row.run else None


Test = Callable[[Selection], bool]
Why = Callable[[Selection], str]


@dataclass(frozen=True)
class Need:
    """Something a command needs from the selection, and why it is missing."""

    holds: Test
    why: Why


def _entry_missing(s: Selection) -> str:
    row = s.row
    if s.session is None:
        return "the transcript shows a run on its own: no session entry to act on"
    if row is not None and row.segment is not None and row.segment.counting:
        return "the session's entries are still being counted; try again in a moment"
    if row is not None and row.kind is RowKind.ENTRY and row.run is not None:
        return "the cursor is on an in-flight run's entry, not yet in the session"
    return "put the cursor on an entry of the session"


def _run_is(s: Selection) -> str:
    run = s.run
    return f"run {run.run_id} is {s.run_status}" if run else "no run is selected"


WRITABLE = Need(
    lambda s: not s.readonly,
    lambda s: "the files are open read-only (--readonly): nothing can change them",
)
SESSION = Need(
    lambda s: s.session is not None,
    lambda s: (
        "no session is selected"
        if s.row is None
        else "the transcript shows a run on its own: no session is known for it"
    ),
)
TEXT_SESSION = Need(
    lambda s: non_text("session", s.session[1] if s.session else None) is None,
    lambda s: str(non_text("session", s.session[1] if s.session else None)),
)
"""lovia's methods take text ids: a session stored under another type is shown, never acted on."""
TEXT_RUN = Need(
    lambda s: non_text("run", s.run.run_id if s.run else None) is None,
    lambda s: str(non_text("run", s.run.run_id if s.run else None)),
)
"""As :data:`TEXT_SESSION`, for a run."""
ENTRY = Need(lambda s: s.entry_index is not None, _entry_missing)
ROW_ENTRY = Need(
    lambda s: s.row is not None and s.row.entry is not None,
    lambda s: "put the cursor on an entry",
)
ATTACHED = Need(
    lambda s: (
        s.row is not None
        and s.row.entry is not None
        and isinstance(s.row.entry.data, dict)
        and bool(attachments(s.row.entry.data))
    ),
    lambda s: "put the cursor on an entry with an image or a file attached",
)
RUN = Need(lambda s: s.run is not None, lambda s: "no run is selected")
RESUMABLE = Need(
    lambda s: s.run is not None and s.run.status != RunStatus.COMPLETED,
    lambda s: f"{_run_is(s)}: nothing to resume (P replays a completed run)",
)
REPLAYABLE = Need(
    lambda s: s.run is not None and s.run.status == RunStatus.COMPLETED,
    lambda s: f"replay needs a completed run; {_run_is(s)} (R resumes it)",
)
FOLLOWABLE = Need(
    lambda s: s.pane is not Pane.RUNS or RESUMABLE.holds(s),
    lambda s: (
        f"{_run_is(s)}: nothing more to follow (running runs are listed first)"
        if s.run
        else "no run is selected"
    ),
)
"""In the Runs pane, ``f`` follows the selected run: not a completed one."""
RUN_GOING = Need(
    lambda s: s.run_going,
    lambda s: (
        "nothing is running in the console (R or P in the Runs pane starts a run)"
    ),
)
APPROVAL_WAITING = Need(
    lambda s: s.approval_waiting,
    lambda s: "no tool call is waiting for approval in the console",
)
UNDER_CURSOR = Need(
    lambda s: s.id_under_cursor is not None,
    lambda s: "nothing with an id under the cursor",
)
RAW = Need(
    lambda s: (
        s.run is not None
        if s.pane is Pane.RUNS
        else s.row is not None and s.row.has_raw
    ),
    lambda s: (
        "no run is selected"
        if s.pane is Pane.RUNS
        else "put the cursor on an entry, a run's header or a compaction notice"
    ),
)
