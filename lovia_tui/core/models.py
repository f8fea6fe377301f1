"""Frozen records the read layer returns: plain data, no lovia objects.

Rendering works from these and from plain entry dicts; lovia's dataclasses
(and lovia itself, slow to import) stay off the browsing path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lovia_tui.core.run_status import WEB_SETTLED, RunStatus, head_is_stale

LinkKind = Literal["segment", "web"]
SessionKey = tuple[str, str]
"""(file, session_id): a session across the open files."""


@dataclass(frozen=True)
class Unreadable:
    """A stored row that could not be parsed; the rest stays usable."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True)
class SessionSummary:
    """One session in a sessions list, newest activity first."""

    file: Path
    session_id: str
    runs: int
    last_id: int
    last_activity: float | None
    title: str = ""
    pinned: bool = False
    """Pinned in lovia web's sidebar (listed first, as there)."""
    parent_id: str | None = None
    """A subagent task chat's parent chat (lovia web's ``chat_sessions.parent_id``)."""


@dataclass(frozen=True)
class SegmentInfo:
    """One completed run's segment (a ``session_runs`` row) without its entries."""

    file: Path
    row_id: int
    session_id: str
    run_id: str
    entry_count: int | None
    first_index: int | None
    created_at: float | None
    """None where the stored value is no number (shown as unreadable)."""
    started_at: float | None
    finished_at: float | None
    has_context_state: bool
    """Its meta holds compaction decisions (results offloaded or cleared, a summary)."""
    has_notice: bool
    """Its meta holds a compaction notice (the run compacted its context)."""
    stored_bytes: int
    """Bytes of its stored ``entries_json``, read from the value's header
    (SQLite's ``length()`` reads a TEXT whole to count its characters)."""
    unreadable: Unreadable | None = None
    counting: bool = False
    """Its ``first_index`` is still being counted (the view shows it later)."""
    uncounted: bool = False
    """Its entries are still being counted (a run of a million entries, listed
    before the stream pass that counts it): the app holds its first ones until then."""
    meta: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """Its ``meta`` as stored, where a batch is listed for the app (``r`` on its
    header shows it; its compaction notice is a row): a list of a whole session
    keeps only the flags above, the meta of every run being unbounded."""


@dataclass(frozen=True)
class Entry:
    """One transcript entry as stored, with its flat index in the session.

    ``index`` is what ``rewind(keep_entries=)`` counts; ``None`` for the
    entries of an in-flight checkpoint, which are not in the session yet.
    """

    index: int | None
    data: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.data.get("type", "?"))


@dataclass(frozen=True)
class DanglingCall:
    """A tool call with no result: a resume executes it (again)."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RunInfo:
    """A checkpoint: its head (every RunHead field) plus entry count and last seq."""

    file: Path
    run_id: str
    agent_name: str
    status: str
    turns: int
    usage: dict[str, Any]
    output: Any
    error: dict[str, Any] | None
    last_input_tokens: int | float | None
    """A number as stored (lovia writes an int; a hostile head may hold a float)."""
    context_state: dict[str, Any]
    pending_handoff: str | None
    updated_at: float | None
    """The last save; None where the stored value is no number (unreadable)."""
    started_at: float | None
    entries: int
    last_seq: int | None
    head: dict[str, Any] = field(repr=False)
    unreadable: Unreadable | None = None
    web_status: str | None = None
    """``chat_runs.status`` of this run in the same file, when lovia web keeps one."""

    @property
    def web_settled(self) -> bool:
        """The head says running but lovia web has closed the run's record (its
        start-up sweep marks the runs a dead server left as interrupted)."""
        return self.status == RunStatus.RUNNING and self.web_status in WEB_SETTLED

    def is_stale(self, now: float, stale_after: float) -> bool:
        """Running in its head, yet dead: lovia web settled it, or no save for
        ``stale_after`` seconds (likely crashed)."""
        return head_is_stale(
            self.status, self.updated_at, self.web_settled, now, stale_after
        )

    def is_live(self, now: float, stale_after: float) -> bool:
        """Running and saved recently: another process may still own it."""
        return self.status == RunStatus.RUNNING and not self.is_stale(now, stale_after)


@dataclass(frozen=True)
class SessionLink:
    """Which session a checkpoint belongs to, and how we know it."""

    file: Path
    session_id: str
    kind: LinkKind
