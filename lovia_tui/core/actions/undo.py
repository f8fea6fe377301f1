"""Undoing one journal entry across its files: one write transaction per file.

Row by row (:mod:`lovia_tui.core.actions.row_undo`): each group's journaled rows that
are missing or altered are put back, the rows the action added taken out,
everything else left as it is. All files are checked before any is written,
and all commit together; a failure rolls every one back. An undo killed
before it commits leaves its own entry pending: the rows are as they were.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from lovia_tui.core.actions.row_undo import (
    ChangedSinceError,
    Journaled,
    RowUndo,
    apply_groups,
    plan_group,
    put_back_rows,
)
from lovia_tui.core.actions.run_undo import RUN_ACTIONS, refuse_moved_on
from lovia_tui.core.errors import ActionError
from lovia_tui.core.formatting import plural
from lovia_tui.core.store import row_check
from lovia_tui.core.store.rows import (
    Captured,
    Cell,
    RowGroup,
    capture_now,
)

if TYPE_CHECKING:
    from lovia_tui.core.actions.locked_stores import HeldConnection


@dataclass(frozen=True)
class UndoResult:
    """What an undo restored, and the journal entry recording the undo itself."""

    entry_id: int
    undo_entry_id: int
    rows_restored: int
    databases: tuple[str, ...]
    rows_removed: int = 0
    """Rows the action had added (a finalize's segment), taken out again."""
    rows_in_place: int = 0
    """Journaled rows already as they were: never removed, or back already."""
    in_place: tuple[str, ...] = ()
    """Which, as ``table key: name`` (the first few)."""
    recorded: bool = False
    """The entry was undone already by ``undo_entry_id``, an undo killed after
    its commit: only the journal's record was completed."""


def read_journaled(conn: sqlite3.Connection, entry_id: int) -> list[Journaled]:
    """An entry's journaled rows per group, from the journal's own tables."""
    groups = []
    files: dict[str, Path] = {}  # one Path a file: grouping by file compares them
    for position, database, table, key, columns_json, rowids, before, after, added in conn.execute(
        "SELECT position, database, tbl, key, columns_json, rowids_json, before_digest, "
        "after_digest, added_json FROM groups WHERE entry_id = ? ORDER BY position",
        (entry_id,),
    ).fetchall():  # fmt: skip
        rows: dict[int, list[Cell]] = {}
        for row_no, kind, value in conn.execute(
            "SELECT row_no, type, value FROM cells WHERE entry_id = ? AND position = ? "
            "ORDER BY row_no, col_no",
            (entry_id, position),
        ):
            rows.setdefault(row_no, []).append((kind, value))
        captured = Captured(
            RowGroup(files.setdefault(database, Path(database)), table, key),
            tuple(orjson.loads(columns_json)),
            tuple(tuple(r) for r in rows.values()),
            tuple(orjson.loads(rowids)),
            before,
        )
        names = None if added is None else tuple(orjson.loads(added))
        groups.append((captured, after, names))
    return groups


def undo_rows(
    entry_id: int,
    action: str,
    databases: Sequence[str],
    unfinished: bool,
    groups: Sequence[Journaled],
    begin: Callable[[Sequence[Captured], Sequence[tuple[str, ...]]], int],
    finish: Callable[..., None],
    runs_free: Callable[[], None],
) -> UndoResult:
    """Undo the groups in one transaction per file; ``begin``/``finish`` journal the undo.

    As for an action, everything is read, planned and journaled first (with
    the rows the undo will add back, so an interrupted undo is told apart
    from a finished one); the write lock is then held only to see the rows
    are still as read, and to change them — exactly them: a file whose
    triggers would change others is refused. ``unfinished``: the entry never recorded
    what the action left, so there is nothing to check against (its rows
    are as journaled, as the action left them, or between). ``runs_free``
    raises, under the lock, if a resume of a run in the groups is running.
    """
    from lovia_tui.core.actions.write_lock import PartlyCommitted, held_write

    what = f"journal entry {entry_id} ({action})"
    undo_id: int | None = None
    try:
        current = capture_now([rows.group for rows, _, _ in groups])
        if action in CREATES_ITS_SESSION:
            _refuse_continued(groups, current, what)
        if unfinished and action in RUN_ACTIONS:
            refuse_moved_on(groups, current, what)
        plans = [
            plan_group(rows, now, None if unfinished else after, added, what)
            for (rows, after, added), now in zip(groups, current, strict=True)
        ]
        undo_id = begin(
            current,
            [_put_back_names(p, now) for p, now in zip(plans, current, strict=True)],
        )

        def by_name(held: dict[Path, HeldConnection]) -> dict[Path, HeldConnection]:
            # Held by resolved path: resolved once, not per group under the lock.
            return {Path(d): held[Path(d).resolve()] for d in databases}

        backs = [put_back_rows(plan) for plan in plans]

        def stage(held: dict[Path, HeldConnection]) -> None:
            row_check.stage(by_name(held).__getitem__, current)
            row_check.stage(by_name(held).__getitem__, backs, row_check.BACK)

        def check(held: dict[Path, HeldConnection]) -> None:
            if not row_check.unchanged(by_name(held).__getitem__, current):
                raise ActionError(
                    f"the rows of {what} changed while its undo was prepared; "
                    "nothing changed: undo it again"
                )

        with held_write((Path(d) for d in databases), check, stage) as held:
            runs_free()
            applied = apply_groups(
                by_name(held).__getitem__, plans, backs, current, what
            )
        changes = list(zip(current, applied.after(), strict=True))
    except PartlyCommitted as exc:
        if undo_id is not None:
            finish(undo_id, "failed", {}, str(exc))
        raise ActionError(
            f"the undo of {what} was interrupted half way ({exc}); undo entry "
            f"{entry_id} again to finish it"
        ) from exc
    except BaseException as exc:
        if undo_id is not None:
            finish(undo_id, "rolled back", {}, str(exc))
        raise
    restored = sum(len(p.put_back) for p in plans)
    removed = sum(p.added_out for p in plans)
    in_place = [
        f"{p.journaled.group.table} {p.journaled.group.key}: {name}"
        for p in plans
        for name in p.in_place
    ]
    finish(
        undo_id,
        "done",
        {"rows_restored": restored, "rows_removed": removed},
        None,
        changes,
    )
    return UndoResult(
        entry_id, undo_id, restored, tuple(databases), removed,
        len(in_place), tuple(in_place[:10]),
    )  # fmt: skip


CREATES_ITS_SESSION = frozenset({"fork"})
"""Actions that create the session they write: runs stored in it since then
continue the action's own, and an undo would leave them without their beginning."""


def _refuse_continued(
    groups: Sequence[Journaled], current: Sequence[Captured], what: str
) -> None:
    """Refuse to undo a fork whose new session has runs of its own since."""
    for (rows, _, added), now in zip(groups, current, strict=True):
        if rows.group.table != "session_runs":
            continue
        ours = {*rows.identities(), *(added or ())}
        later = [name for name in now.identities() if name not in ours]
        if later:
            raise ChangedSinceError(
                f"cannot undo {what}: session {rows.group.key!r} has "
                f"{plural(len(later), 'run')} stored since, which would be left "
                "without the beginning it continues; `lovia-tui clear` removes "
                "the session whole",
                rows.group,
            )


def _put_back_names(plan: RowUndo, current: Captured) -> tuple[str, ...]:
    """The rows the undo adds to the group: journaled ones absent now."""
    present = set(current.identities())
    names = plan.journaled.identities()
    return tuple(names[i] for i in plan.put_back if names[i] not in present)
