"""What an action will do, as frozen records a dialog or the CLI renders as is.

Each preview carries a :class:`Plan`: the rows the action touches and their
fingerprint when the preview was computed, so performing it refuses if the
database changed in between. ``preview_*`` in :mod:`lovia_tui.core.actions.session_plans`
and :mod:`lovia_tui.core.actions.run_plans` build them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from lovia_tui.core.formatting import plural
from lovia_tui.core.store.rows import RowGroup

# How a run's session is known: its segment, the web UI's records, or the user.
SessionSource = Literal["segment", "web", "given"]
# What a finalize keeps of an abandoned run. "stop": lovia web's Stop on a web
# chat (a stranded run: nothing; a live one: its whole turns); "keep-partial":
# everything it saved, a half-finished turn included, minus calls without a
# result (also what finalizing a run outside lovia web does: "store").
FinalizeMode = Literal["stop", "keep-partial", "store"]


@dataclass(frozen=True)
class Plan:
    """The row groups an action touches and their fingerprint at preview time."""

    groups: tuple[RowGroup, ...]
    fingerprint: str
    forced: bool


@dataclass(frozen=True)
class ToolCallRef:
    """A tool call leaving the transcript: whatever it did stays done."""

    run_id: str
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class CheckpointDeletion:
    """A checkpoint an action deletes, and why."""

    file: Path
    run_id: str
    status: str
    stale: bool
    live: bool
    entries: int
    reason: str
    session_id: str | None
    # Whether the run is already a segment of its session: if not, its
    # entries exist only in this checkpoint and deleting it loses them.
    appended: bool
    # The web UI chat whose ``active_run_id`` names this run (cleared with it).
    web_pointer: str | None
    # Why a run whose head says running is not live (core.run_status), else None.
    stale_reason: str | None = None
    # lovia web's record of the run (``chat_runs.status``), when there is one.
    web_record: str | None = None
    # The agent the run had handed off to and not yet started (head
    # ``pending_handoff``): only a resume of this checkpoint continues there.
    pending_handoff: str | None = None


@dataclass(frozen=True)
class Truncation:
    """The segment a rewind cuts inside: kept in part, its meta dropped."""

    run_id: str
    kept_entries: int
    removed_entries: int
    loses_meta: bool
    dropped_calls: tuple[ToolCallRef, ...]


@dataclass(frozen=True)
class RewindPreview:
    """``SQLiteSession.rewind(session_id, keep_entries)`` and its consequences."""

    action: ClassVar[str] = "rewind"
    file: Path
    session_id: str
    keep_entries: int
    total_entries: int
    entries_removed: int
    runs_deleted: tuple[str, ...]
    truncated: Truncation | None
    # The removed calls that ran (answered by a result that is not a rejection).
    side_effects: tuple[ToolCallRef, ...]
    checkpoints: tuple[CheckpointDeletion, ...]
    # Live runs nothing links to a session: one may be writing to this one.
    unknown_live_runs: tuple[str, ...]
    plan: Plan
    # Completed checkpoints of a segment only truncated: kept, since a replay
    # adds nothing to a segment that exists.
    kept_checkpoints: tuple[str, ...] = ()
    # The first segment the cut changes (row id), and the entries before it:
    # lovia's rewind need not read the segments it keeps whole.
    cut_row: int | None = None
    kept_before: int = 0

    @property
    def noop(self) -> bool:
        return self.entries_removed == 0 and not self.checkpoints


@dataclass(frozen=True)
class TrimCut:
    """One stored tool result ``trim_tool_results`` will shorten."""

    run_id: str
    call_id: str
    tool: str
    old_chars: int
    new_chars: int
    # Offloaded with this output's digest: recoverable with recall_tool_result
    # if the run's context policy had a result store; otherwise gone for good.
    archived: bool
    drops_parts: bool


@dataclass(frozen=True)
class TrimRun:
    """What trimming does to one segment."""

    run_id: str
    results: int
    bytes_before: int
    bytes_after: int

    @property
    def bytes_reclaimed(self) -> int:
        return self.bytes_before - self.bytes_after


@dataclass(frozen=True)
class TrimPreview:
    """``SQLiteSession.trim_tool_results(session_id, keep_chars, keep_runs)``."""

    action: ClassVar[str] = "trim"
    file: Path
    session_id: str
    keep_chars: int
    keep_runs: int
    results_trimmed: int
    bytes_reclaimed: int
    lost_for_good: int
    cuts: tuple[TrimCut, ...]
    runs: tuple[TrimRun, ...]
    plan: Plan
    # What the runs before the last ``keep_runs`` hold: why nothing is cut.
    older_runs: int = 0
    older_results: int = 0
    """Tool results in those runs, trimmed already or not."""
    already_trimmed: int = 0
    largest_result: int | None = None
    """Characters of the longest result not trimmed yet, if any."""
    largest_cut_above: int | None = None
    """The length past which that result would be cut: ``keep_chars`` plus
    lovia's marker (lovia skips a result where the marker outweighs the saving)."""

    @property
    def noop(self) -> bool:
        return self.results_trimmed == 0


@dataclass(frozen=True)
class DeleteRunsPreview:
    """Checkpoints to delete, named or chosen by a filter."""

    action: ClassVar[str] = "delete-run"
    run_ids: tuple[str, ...]
    status: str | None
    older_than_days: float | None
    checkpoints: tuple[CheckpointDeletion, ...]
    plan: Plan

    @property
    def noop(self) -> bool:
        return not self.checkpoints


@dataclass(frozen=True)
class FinalizePreview:
    """An abandoned run settled: on a web chat as lovia web's Stop, else stored."""

    action: ClassVar[str] = "finalize"
    file: Path
    run_id: str
    checkpoint: CheckpointDeletion
    session_id: str
    session_source: SessionSource
    already_appended: bool
    entries_appended: int
    dropped_calls: tuple[ToolCallRef, ...]
    timing: dict[str, float] | None
    # The web UI's open run record (chat_runs) status, and what it becomes.
    web_record: str | None
    plan: Plan
    mode: FinalizeMode = "store"
    # Whether lovia-tui judged the run live (a Stop then keeps its whole turns).
    live: bool = False
    # Entries the run saved that are not appended (its partial turn, or all of
    # a stranded run's), system inputs aside.
    entries_left_out: int = 0
    web_record_after: str | None = None
    # No segment of the session exists yet: the append starts it (a typo would too).
    new_session: bool = False

    @property
    def noop(self) -> bool:
        return False


@dataclass(frozen=True)
class ClearPreview:
    """``SQLiteSession.clear(session_id)`` and the checkpoints linked to it."""

    action: ClassVar[str] = "clear"
    file: Path
    session_id: str
    segments: int
    entries: int | None
    run_ids: tuple[str, ...]
    checkpoints: tuple[CheckpointDeletion, ...]
    unknown_live_runs: tuple[str, ...]
    plan: Plan

    @property
    def noop(self) -> bool:
        return self.segments == 0 and not self.checkpoints


Preview = (
    RewindPreview | TrimPreview | DeleteRunsPreview | FinalizePreview | ClearPreview
)


def subject(preview: Preview) -> str:
    """What an action acts on, in a few words: the journal's one-line summary.

    A bulk delete says how many and how they were chosen, not every id.
    """
    if isinstance(preview, FinalizePreview):
        return f"run {preview.run_id} into session {preview.session_id}"
    if not isinstance(preview, DeleteRunsPreview):
        return f"session {preview.session_id}"
    ids = [c.run_id for c in preview.checkpoints]
    if len(ids) <= 3:
        return ("checkpoint " if len(ids) == 1 else "checkpoints ") + ", ".join(ids)
    chosen = [
        *([f"{len(preview.run_ids):,} named"] if preview.run_ids else []),
        *([preview.status] if preview.status else []),
        *(
            [f"older than {preview.older_than_days:g} days"]
            if preview.older_than_days is not None
            else []
        ),
    ]
    return f"{plural(len(ids), 'checkpoint')}: {', '.join(chosen)}"


_HOW = frozenset({"plan", "cut_row", "kept_before"})
"""Fields that say how an action is checked and done, not what it does."""


def preview_dict(preview: Preview) -> dict[str, Any]:
    """A preview as plain JSON-ready data (paths as strings, no plan)."""
    data: dict[str, Any] = {"action": preview.action}
    data.update((k, v) for k, v in asdict(preview).items() if k not in _HOW)
    data["forced"] = preview.plan.forced
    return _plain(data)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value) if isinstance(value, Path) else value
