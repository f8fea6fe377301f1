"""What became of an undo that was killed: did its commit go in?

An undo entry records the rows as they were when the undo started; the entry
it undoes records the rows as they were before the action. Comparing the rows
the undo could touch now with both tells the outcome, group by group, without
trusting the journal's status (which a SIGKILL right after the commit leaves
``pending``):

- every group as the action found it: the undo committed (record it done);
- every group as the undo found it: it never committed (record it rolled back);
- some of each: killed between two files' commits (the next undo of the
  action puts back the rest);
- anything else: the rows changed since, and the undo of the action says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from lovia_tui.core.actions.row_undo import Journaled, touched_digest
from lovia_tui.core.store.rows import Captured


class UndoOutcome(Enum):
    """Where an interrupted undo left the rows it could touch."""

    COMMITTED = "committed"
    NOT_COMMITTED = "not committed"
    PARTLY = "partly committed"
    CHANGED = "changed since"


def touched_names(target: Journaled) -> set[str]:
    """The rows an undo of the journaled action can touch: its journaled and added ones."""
    rows, _, added = target
    return {*rows.identities(), *(added or ())}


def undo_outcome(
    target: Sequence[Journaled], started: Sequence[Captured], now: Sequence[Captured]
) -> UndoOutcome:
    """The outcome of an undo of ``target`` that found ``started`` and left ``now``."""
    at_target, at_start = [], []
    for journaled, before_undo, current in zip(target, started, now, strict=True):
        names = touched_names(journaled)
        seen = touched_digest(current, names)
        at_target.append(seen == journaled[0].digest)
        at_start.append(seen == touched_digest(before_undo, names))
    if all(at_target):
        return UndoOutcome.COMMITTED
    if all(at_start):
        return UndoOutcome.NOT_COMMITTED
    if all(t or s for t, s in zip(at_target, at_start, strict=True)):
        return UndoOutcome.PARTLY
    return UndoOutcome.CHANGED
