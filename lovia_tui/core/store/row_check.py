"""The check that rows are still exactly as captured, compared inside SQLite.

An action checks, under the write lock, that the rows it journaled are
still there as they were (:mod:`~lovia_tui.core.actions.write_lock`). Read
into Python to be compared, a 5,000-run session took 17-39 ms of that lock;
compared by SQLite against a copy of the captured rows in a temporary table
of the same connection, 3-5 ms. :func:`stage` makes that copy before any
transaction (it writes only the connection's own in-memory ``temp``
schema, never the file); :func:`unchanged` compares.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from lovia_tui.core.store.rows import (
    KEYS_PER_STATEMENT,
    Captured,
    by_table,
    insert_rows,
    taken_rowids,
)

ConnFor = Callable[[Path], sqlite3.Connection]


WAS, BACK = "was", "back"
"""What a staged table holds: rows as captured, to check against
(:func:`unchanged`); rows an undo puts back (:func:`put_back`)."""


def stage(conn_for: ConnFor, captured: Sequence[Captured], role: str = WAS) -> None:
    """Copy the captured rows into a temporary table per table of each file,
    on the connection that will use them: the group's position in
    ``captured``, rowid, key (as bytes), then the storage class and stored
    value (text as its bytes) of each cell."""
    for (file, table), members in _by_table(captured).items():
        conn = conn_for(file)
        columns = members[0][1].columns
        if not columns:
            continue
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute(f"DROP TABLE IF EXISTS {_staged(role, table)}")
        cells = ", ".join(f"k{at}, v{at}" for at in range(len(columns)))
        conn.execute(
            f"CREATE TABLE {_staged(role, table)} "
            f"(grp, rid, key, {cells}, PRIMARY KEY (grp, rid))"  # one group's: a range
        )
        marks = ", ".join("?" * (3 + 2 * len(columns)))
        conn.executemany(
            f"INSERT INTO {_staged(role, table)} VALUES ({marks})",
            (
                (grp, rowid, c.group.key.encode(), *(v for cell in row for v in cell))
                for grp, c in members
                for rowid, row in zip(c.rowids, c.rows, strict=True)
            ),
        )


def put_back(conn_for: ConnFor, backs: Sequence[Captured]) -> list[list[int]] | None:
    """Insert each group's rows (:func:`stage`\\ d as ``BACK``), each under
    its rowid unless a row took it since (SQLite gives it another): all but
    those in one statement per table, from the staged copy (2,500 rows one
    by one took ~25 ms of an undo's lock; a bulk undo's 12,000 groups one by
    one, ~360 ms). Each group's rowids, in its order; None if a row does not
    read back exactly as staged."""
    rowids = [list(back.rowids) for back in backs]
    for (file, table), members in _by_table(backs).items():
        conn, columns = conn_for(file), members[0][1].columns
        if not columns:
            continue
        insert, update, verify = _put_back_statements(table, columns)
        taken = taken_rowids(
            conn, table, [r for _, back in members for r in back.rowids]
        )
        conn.execute(insert)
        for grp, back in members:
            moved = [at for at, rowid in enumerate(back.rowids) if rowid in taken]
            if not moved:
                continue
            for at, rowid in zip(moved, insert_rows(conn, back, moved), strict=True):
                conn.execute(update, (rowid, grp, rowids[grp][at]))
                rowids[grp][at] = rowid
        if conn.execute(verify).fetchone()[0] != sum(len(b.rows) for _, b in members):
            return None
    return rowids


@functools.lru_cache(maxsize=32)
def _put_back_statements(table: str, columns: tuple[str, ...]) -> tuple[str, str, str]:
    """:func:`put_back`'s insert, its staged copy's rowid update, and its
    check, for one table (made once: a bulk undo puts back thousands of
    groups)."""
    staged = _staged(BACK, table)
    names = ", ".join(f'"{c}"' for c in columns)
    values = ", ".join(
        f"CASE WHEN k{at} = 'text' THEN CAST(v{at} AS TEXT) ELSE v{at} END"
        for at in range(len(columns))
    )
    return (
        f"INSERT INTO main.{table} (rowid, {names}) SELECT rid, {values} "
        f"FROM {staged} AS w WHERE NOT EXISTS "
        f"(SELECT 1 FROM main.{table} WHERE rowid = w.rid)",
        f"UPDATE {staged} SET rid = ? WHERE grp = ? AND rid = ?",
        f"SELECT count(*) FROM {staged} AS w CROSS JOIN main.{table} AS m "
        f"ON m.rowid = w.rid WHERE {_same(columns)}",
    )


def unchanged(conn_for: ConnFor, captured: Sequence[Captured]) -> bool:
    """Whether every group's rows are still exactly the :func:`stage`\\ d ones:
    the same columns, the same rows under the same rowids (none added, none
    gone), each cell of the same storage class and the same value (text and
    blobs byte for byte)."""
    for (file, table), members in _by_table(captured).items():
        conn = conn_for(file)
        columns = members[0][1].columns
        if not columns:  # the table was not there: is it still not?
            if conn.execute(f"PRAGMA main.table_info({table})").fetchone():
                return False
            continue
        found = tuple(
            row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")
        )
        if found != columns:
            return False
        key = f'"{members[0][1].group.key_column}"'
        keys = sorted({c.group.key for _, c in members})
        now = 0
        for start in range(0, len(keys), KEYS_PER_STATEMENT):
            chunk = keys[start : start + KEYS_PER_STATEMENT]
            marks = ", ".join("?" * len(chunk))
            now += conn.execute(
                f"SELECT count(*) FROM main.{table} WHERE {key} IN ({marks}) "
                f"AND typeof({key}) = 'text' AND CAST({key} AS BLOB) IN ({marks})",
                [*chunk, *(k.encode() for k in chunk)],
            ).fetchone()[0]
        # CROSS JOIN: the staged rows lead, each finds its row by rowid.
        matched = conn.execute(
            f"SELECT count(*) FROM {_staged(WAS, table)} AS w CROSS JOIN "
            f"main.{table} AS m ON m.rowid = w.rid WHERE typeof(m.{key}) = 'text' "
            f"AND CAST(m.{key} AS BLOB) = w.key AND {_same(columns)}"
        ).fetchone()[0]
        expected = sum(len(c.rows) for _, c in members)
        if not now == matched == expected:
            return False
    return True


def _same(columns: Sequence[str]) -> str:
    """Row ``m`` holds staged row ``w``'s cells: storage class and value."""
    return " AND ".join(
        f"typeof(m.\"{c}\") = w.k{at} AND (CASE WHEN w.k{at} = 'text' "
        f'THEN CAST(m."{c}" AS BLOB) ELSE m."{c}" END) IS w.v{at}'
        for at, c in enumerate(columns)
    )


def _staged(role: str, table: str) -> str:
    return f'temp."lovia_tui_{role}_{table}"'


def _by_table(
    captured: Sequence[Captured],
) -> dict[tuple[Path, str], list[tuple[int, Captured]]]:
    """The captured groups by file and table, each with its position."""
    return {
        table: [(grp, captured[grp]) for grp in positions]
        for table, positions in by_table(c.group for c in captured).items()
    }
