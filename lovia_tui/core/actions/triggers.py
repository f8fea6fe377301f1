"""Refuse to act on a file whose own triggers would change rows outside the preview.

A trigger fires inside lovia's statements (and undo's), in the same
transaction, on rows no preview named and no journal entry holds: an
``AFTER DELETE`` on ``session_runs`` can delete another session. lovia
creates no trigger, and its effect cannot be previewed, only detected after
the fact; so a file with a trigger on a table lovia-tui writes is refused,
naming the triggers, and nothing is changed; so is one of lovia's tables
made other than lovia makes it (:mod:`~lovia_tui.core.store.table_shape`).
The check runs under the write lock (before the rows are checked against the
preview, which such a table would fail unexplained), where no trigger can be
added before the action commits.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.connect import read_only
from lovia_tui.core.store.rows import TABLES
from lovia_tui.core.store.table_shape import refuse_odd_table_on

WRITTEN_TABLES = (*TABLES, "lovia_schema", "chat_schedules")
"""Every table an action or an undo may write through lovia or by itself."""


def refuse_own_schema(conn: sqlite3.Connection, path: Path) -> None:
    """ActionError naming the file's triggers on those tables, if it has any,
    or one of lovia's tables that no action can touch exactly.
    The table is named as the trigger spelled it (``ON Session_Runs`` fires
    on ``session_runs``): compared as SQLite compares names, in ASCII case
    (its ``lower``), never as stored."""
    marks = ", ".join("?" * len(WRITTEN_TABLES))
    found = conn.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' "
        f"AND lower(tbl_name) IN ({marks}) ORDER BY name",
        WRITTEN_TABLES,
    ).fetchall()
    for table in TABLES:
        refuse_odd_table_on(conn, path, table)
    if found:
        named = ", ".join(f"{name!r} on {table}" for name, table in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        raise ActionError(
            f"{path} has triggers of its own ({named}{more}): they would change rows "
            "no preview shows and no undo restores; nothing was done"
        )


def own_schema_problem(path: Path) -> str | None:
    """Why ``path`` is refused by :func:`refuse_own_schema`, or None; read
    on a read-only connection of its own (a resume's preflight: lovia writes
    the file for minutes, under no lock of ours)."""
    with read_only(path) as conn:
        try:
            refuse_own_schema(conn, path)
        except ActionError as exc:
            return str(exc)
    return None
