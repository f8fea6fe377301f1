"""The live view's deltas as frozen records, and the feed that never drops one.

A :class:`~lovia_tui.core.live.tail.Tail` poll returns a :class:`Changes`; a worker
that polls faster than the UI takes them merges them in a :class:`ChangeFeed`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lovia_tui.core.models import Entry, Unreadable


@dataclass(frozen=True)
class NewSegment:
    """A segment appended since the last poll: a run finished into its session."""

    row_id: int
    session_id: str
    run_id: str


@dataclass(frozen=True)
class HeadChange:
    """A checkpoint saved since the last poll (new, progressed or finished)."""

    run_id: str
    status: str
    updated_at: float | None


@dataclass(frozen=True)
class RunEntries:
    """A checkpoint's entries stored after batch ``after_seq``, up to ``last_seq``."""

    run_id: str
    after_seq: int
    last_seq: int
    entries: tuple[Entry, ...]
    problems: tuple[Unreadable, ...] = ()


@dataclass(frozen=True)
class Changes:
    """Everything a live view must redraw after some commits by others.

    ``heads`` holds each changed checkpoint's latest save, in save order.
    ``runs_removed`` means checkpoints were deleted (unnamed: naming them
    would mean holding every run id of a fleet's file): re-read the runs.
    ``rewritten_sessions`` lists the followed session when segments it
    already had were deleted or changed (rewind, clear, trim): reload it.
    ``sessions_changed`` means the sessions list changed in ways not listed
    in ``segments`` (rows deleted, or too many new ones): reload the list.
    ``stores_changed`` means a store's tables appeared, or checkpoints
    changed in ways the tail could not list: reload everything.
    """

    segments: tuple[NewSegment, ...] = ()
    heads: tuple[HeadChange, ...] = ()
    runs_removed: bool = False
    run_entries: RunEntries | None = None
    rewritten_sessions: frozenset[str] = frozenset()
    sessions_changed: bool = False
    stores_changed: bool = False

    @property
    def empty(self) -> bool:
        return self == Changes()

    @property
    def session_ids(self) -> frozenset[str]:
        """Sessions that gained a segment."""
        return frozenset(segment.session_id for segment in self.segments)

    def merge(self, later: Changes) -> Changes:
        """These changes followed by ``later``, as if polled once."""
        heads = {head.run_id: head for head in self.heads}
        for head in later.heads:
            heads.pop(head.run_id, None)
            heads[head.run_id] = head
        return Changes(
            segments=self.segments + later.segments,
            heads=tuple(heads.values()),
            runs_removed=self.runs_removed or later.runs_removed,
            run_entries=_merge_entries(self.run_entries, later.run_entries),
            rewritten_sessions=self.rewritten_sessions | later.rewritten_sessions,
            sessions_changed=self.sessions_changed or later.sessions_changed,
            stores_changed=self.stores_changed or later.stores_changed,
        )


def _merge_entries(
    first: RunEntries | None, later: RunEntries | None
) -> RunEntries | None:
    if first is None or later is None or first.run_id != later.run_id:
        return later or first
    return replace(
        first,
        last_seq=later.last_seq,
        entries=first.entries + later.entries,
        problems=first.problems + later.problems,
    )


class ChangeFeed:
    """Changes a live worker gathered that the UI has not taken yet.

    ``Changes`` are deltas, so a message carrying one must never be dropped
    (Textual's ``can_replace`` drops). Instead the worker ``put``s each poll
    here and posts a message only when ``put`` returns True (the feed was
    empty); the handler ``take``s everything at once, however long it lagged.
    """

    def __init__(self) -> None:
        self._pending: Changes | None = None

    def put(self, changes: Changes) -> bool:
        first = self._pending is None
        self._pending = (
            changes if self._pending is None else self._pending.merge(changes)
        )
        return first

    def take(self) -> Changes:
        pending, self._pending = self._pending or Changes(), None
        return pending
