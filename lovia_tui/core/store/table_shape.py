"""Tables lovia never makes, which no action may touch.

Every action previews, journals and puts back rows by their ``rowid``,
compared byte for byte under the key lovia's statement names. A table of a
file's own making can break that without any trigger: a WITHOUT ROWID table
has no rowid, a column named ``rowid`` hides it, and a collation of its own
makes lovia's ``session_id = 'chat'`` match ``'CHAT'`` too. lovia creates
none of these, so such a table is refused by name, before anything changes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from lovia_tui.core.errors import ActionError

ROWID_NAMES = frozenset({"rowid", "oid", "_rowid_"})
TABLE_SQL = "SELECT sql FROM sqlite_master WHERE type = 'table' AND lower(name) = ?"
"""A table's CREATE statement, by its name as SQLite compares names."""
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def folded(name: str) -> str:
    """A table or column name as SQLite compares names: ASCII case folded,
    nothing else (Python's ``lower`` would make the Kelvin sign a ``k``)."""
    return name.translate(ASCII_LOWER)


TABLES_SQL = "SELECT lower(name), sql FROM sqlite_master WHERE type = 'table'"
"""A file's tables and their CREATE statements, each named as SQLite compares
names (ASCII case folded): a ``SESSION_RUNS`` table is lovia's ``session_runs``,
which lovia reads and writes."""


def columns_sql(tables: int) -> str:
    """The columns of ``tables`` tables named as :data:`TABLES_SQL` names
    them, in one statement (a statement each made opening a 200-file
    directory a third slower)."""
    return (
        "SELECT lower(m.name), c.name FROM sqlite_master AS m, "
        "pragma_table_info(m.name) AS c WHERE m.type = 'table' "
        f"AND lower(m.name) IN ({', '.join('?' * tables)})"
    )


def rowid_problem(sql: str | None, columns: Iterable[str]) -> str | None:
    """Why a table (its CREATE statement and columns) has no rowid to read
    its rows by; None if it has one."""
    hiding = [c for c in columns if folded(c) in ROWID_NAMES]
    if "without rowid" in (sql or "").lower():
        return "is a WITHOUT ROWID table"
    if hiding:
        return f"has a column named {hiding[0]!r}, which hides SQLite's rowid"
    return None


def refuse_odd_table(
    path: object, table: str, sql: str | None, columns: Iterable[str]
) -> None:
    """ActionError if ``table`` (its CREATE statement and columns) is not one
    an action can preview and undo exactly."""
    why = rowid_problem(sql, columns)
    if why is None and "collate" in (sql or "").lower():
        why = "declares a collation of its own (COLLATE): a key matches other spellings"
    if why is None:
        return
    raise ActionError(
        f"{path}: {table} {why}, which lovia never makes: what lovia's statements "
        "change there cannot be previewed or put back exactly; nothing was done"
    )


def refuse_odd_table_on(conn: sqlite3.Connection, path: object, table: str) -> None:
    """:func:`refuse_odd_table` of ``table`` as it is on ``conn`` (if it is there)."""
    found = conn.execute(TABLE_SQL, (table,)).fetchone()
    if found is not None:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        refuse_odd_table(path, table, found[0], columns)
