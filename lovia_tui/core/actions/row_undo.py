"""Undo one row group row by row: put back what an action took, keep what came after.

A group's journaled rows (as they were before the action) are matched with
its rows now by name (a segment's run id, a checkpoint batch's seq; see
:meth:`Captured.identities`). A journaled row missing or altered now is put
back; one as journaled is left in place; a row the action added is taken out.
Rows nobody journaled — a lovia writer's newer runs — are never touched, so
undoing a rewind of a session an agent kept appending to keeps the agent's
runs.

The check that makes this safe: after a finished action, the digest of the
rows it could have touched (the journaled ones and the ones it added) is
recorded; undo refuses if those rows changed since, since putting the old
ones back would lose that change — unless they are exactly as journaled
already (then there is nothing to do). An unfinished entry (the process was
killed, or the commit failed half way) has no such digest: its rows are
either as journaled or as the action left them, and undo puts back exactly
the journaled rows that are missing or altered.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.row_check import put_back
from lovia_tui.core.store.rows import (
    TABLES,
    Captured,
    Cell,
    RowGroup,
    changed,
    digest,
    read_order,
)

Journaled = tuple[Captured, str | None, tuple[str, ...] | None]
"""A group's journaled rows, the digest of what the action left, the rows it added."""


def touched_rows(
    captured: Captured, names: Iterable[str]
) -> tuple[tuple[Cell, ...], ...]:
    """The group's rows with these names, in the group's order."""
    wanted = set(names)
    return tuple(
        row
        for row, name in zip(captured.rows, captured.identities(), strict=True)
        if name in wanted
    )


def only_rows(captured: Captured, names: Iterable[str]) -> Captured:
    """The group with only its rows of these names: what an action journals
    when it touches a few rows of a group others write to (a resumed run's
    segment in a session)."""
    wanted = set(names)
    keep = [at for at, name in enumerate(captured.identities()) if name in wanted]
    return Captured(
        captured.group,
        captured.columns,
        tuple(captured.rows[at] for at in keep),
        tuple(captured.rowids[at] for at in keep),
    )


def touched_digest(captured: Captured, names: Iterable[str]) -> str:
    """The :func:`~lovia_tui.core.store.rows.digest` of :func:`touched_rows`."""
    return digest(touched_rows(captured, names))


def after_state(before: Captured, after: Captured) -> tuple[str, tuple[str, ...]]:
    """What an action left in a group: its touched rows' digest, and the rows it added.

    ``after`` is read inside the action's own transaction, so every row in it
    that was not in ``before`` is the action's.
    """
    known = set(before.identities())
    added = tuple(name for name in after.identities() if name not in known)
    return touched_digest(after, known | set(added)), added


class ChangedSinceError(ActionError):
    """Undo refused: a group's rows changed after the action (``group`` says which)."""

    def __init__(self, message: str, group: RowGroup) -> None:
        super().__init__(message)
        self.group = group


@dataclass(frozen=True)
class RowUndo:
    """What undoing one group does to its rows."""

    journaled: Captured
    added: tuple[str, ...]
    put_back: tuple[int, ...]
    """Indices of journaled rows inserted again."""
    take_out: tuple[int, ...]
    """Rowids of current rows deleted: altered versions, and rows the action added."""
    in_place: tuple[str, ...]
    """Journaled rows already as journaled (never removed, or back already), by
    their run id or seq as Python shows it."""
    added_out: int
    """How many of ``take_out`` are rows the action added."""
    kept: tuple[int, ...]
    """Rowids of the rows ``in_place``, in the journaled order."""


def plan_group(
    journaled: Captured,
    current: Captured,
    after: str | None,
    added: tuple[str, ...] | None,
    what: str,
) -> RowUndo:
    """How to undo one group, or ActionError if rows changed since the action.

    ``after``/``added`` are what :func:`after_state` recorded (``after`` None
    for an unfinished entry). ``added`` None is an entry journaled before
    row-level undo: its digest covers the whole group.
    """
    names = journaled.identities()
    now_names = current.identities()
    if added is None:
        seen = current.digest
        added = tuple(n for n in now_names if n not in set(names))
    else:
        seen = touched_digest(current, {*names, *added})
    # Rows already exactly as journaled are back (an undo whose record was
    # lost): nothing to lose, nothing to do.
    changed = after is not None and seen not in (after, journaled.digest)
    if changed:
        group = journaled.group
        raise ChangedSinceError(
            f"cannot undo {what}: the {group.table} rows for {group.key!r} changed "
            "since; undoing would lose that change",
            group,
        )
    now = dict(
        zip(now_names, zip(current.rowids, current.rows, strict=True), strict=True)
    )
    labels = journaled.column(TABLES[journaled.group.table][2]) if names else []
    put_back, take_out, in_place, kept = [], [], [], []
    for index, (name, row) in enumerate(zip(names, journaled.rows, strict=True)):
        found = now.get(name)
        if found is not None and found[1] == row:
            in_place.append(str(labels[index]))
            kept.append(found[0])
            continue
        if found is not None:
            take_out.append(found[0])
        put_back.append(index)
    extra = [now[name][0] for name in added if name in now]
    return RowUndo(
        journaled, added, tuple(put_back), tuple(take_out + extra), tuple(in_place),
        len(extra), tuple(kept),
    )  # fmt: skip


def put_back_rows(undo: RowUndo) -> Captured:
    """The journaled rows an undo inserts again, as a group of their own."""
    journaled = undo.journaled
    return Captured(
        journaled.group,
        journaled.columns,
        tuple(journaled.rows[at] for at in undo.put_back),
        tuple(journaled.rowids[at] for at in undo.put_back),
    )


@dataclass(frozen=True)
class Applied:
    """An undo's groups as it left them, kept as rowids while the lock is
    held (a bulk undo's 12,000 groups made into rows there held it ~200 ms)."""

    undos: Sequence[RowUndo]
    backs: Sequence[Captured]
    currents: Sequence[Captured]
    orders: Sequence[Sequence[int]]
    rowids: Sequence[Sequence[int]]
    """Where each group's :attr:`backs` went."""

    def after(self) -> list[Captured]:
        """Each group's rows after the undo, in its order."""
        return [
            changed(
                current, order, set(undo.take_out), dict(zip(rowids, back.rows, strict=True))
            )
            for undo, back, current, order, rowids in zip(
                self.undos, self.backs, self.currents, self.orders, self.rowids,
                strict=True,
            )
        ]  # fmt: skip


def apply_groups(
    conn_for: Callable[[Path], sqlite3.Connection],
    undos: Sequence[RowUndo],
    backs: Sequence[Captured],
    currents: Sequence[Captured],
    what: str,
) -> Applied:
    r"""Carry out the groups' undo inside the caller's transactions.

    ``backs``: their :func:`put_back_rows`, :func:`~lovia_tui.core.store.row_check.stage`\ d
    in this order; ``currents``: their rows, checked under the write lock the
    caller holds. Raises ActionError (the caller rolls back) unless each
    group's journaled rows are exactly back and the action's additions gone.
    """
    for undo in undos:
        group = undo.journaled.group
        for rowid in undo.take_out:
            conn_for(group.file).execute(
                f"DELETE FROM {group.table} WHERE rowid = ?", (rowid,)
            )
    rowids = put_back(conn_for, backs)
    if rowids is None:
        raise ActionError(
            f"undo of {what} did not put its rows back exactly; nothing changed"
        )
    orders = read_order(conn_for, [current.group for current in currents])
    for undo, current, order, back in zip(undos, currents, orders, rowids, strict=True):
        if not _restored(undo, current, order, back):
            group = undo.journaled.group
            raise ActionError(
                f"undo of {what} did not reproduce the {group.table} rows for "
                f"{group.key!r}; nothing changed"
            )
    return Applied(undos, backs, currents, orders, rowids)


def _restored(
    undo: RowUndo, current: Captured, order: Sequence[int], back: Sequence[int]
) -> bool:
    """Whether a group now holds its rows kept and those put back (at rowids
    ``back``), nothing else, and the journaled ones in the journaled order.
    By rowid: the kept rows were checked under the lock, the put back ones
    as they went in."""
    if not current.rowids:  # the whole group was gone: all of it is put back
        return list(order) == list(back)
    gone = set(undo.take_out)
    if sorted(order) != sorted(
        [r for r in current.rowids if r not in gone] + list(back)
    ):
        return False
    kept, put, chosen = iter(undo.kept), iter(back), set(undo.put_back)
    journaled = [
        next(put) if at in chosen else next(kept)
        for at in range(len(undo.journaled.rows))
    ]
    touched = set(journaled)
    return [r for r in order if r in touched] == journaled
