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

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from lovia_tui.core.store.rows import KEYS_PER_STATEMENT, Captured

ConnFor = Callable[[Path], sqlite3.Connection]


def stage(conn_for: ConnFor, captured: Sequence[Captured]) -> None:
    """Copy the captured rows into a temporary table per table of each file,
    on the connection that will check them: rowid, key (as bytes), then the
    storage class and stored value (text as its bytes) of each cell."""
    for (file, table), members in _by_table(captured).items():
        conn = conn_for(file)
        columns = members[0].columns
        if not columns:
            continue
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute(f"DROP TABLE IF EXISTS {_staged(table)}")
        cells = ", ".join(f"k{at}, v{at}" for at in range(len(columns)))
        conn.execute(f"CREATE TABLE {_staged(table)} (rid, key, {cells})")
        marks = ", ".join("?" * (2 + 2 * len(columns)))
        conn.executemany(
            f"INSERT INTO {_staged(table)} VALUES ({marks})",
            (
                (rowid, c.group.key.encode(), *(v for cell in row for v in cell))
                for c in members
                for rowid, row in zip(c.rowids, c.rows, strict=True)
            ),
        )


def unchanged(conn_for: ConnFor, captured: Sequence[Captured]) -> bool:
    """Whether every group's rows are still exactly the :func:`stage`\\ d ones:
    the same columns, the same rows under the same rowids (none added, none
    gone), each cell of the same storage class and the same value (text and
    blobs byte for byte)."""
    for (file, table), members in _by_table(captured).items():
        conn = conn_for(file)
        columns = members[0].columns
        if not columns:  # the table was not there: is it still not?
            if conn.execute(f"PRAGMA main.table_info({table})").fetchone():
                return False
            continue
        found = tuple(
            row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")
        )
        if found != columns:
            return False
        key = f'"{members[0].group.key_column}"'
        keys = sorted({c.group.key for c in members})
        now = 0
        for start in range(0, len(keys), KEYS_PER_STATEMENT):
            chunk = keys[start : start + KEYS_PER_STATEMENT]
            marks = ", ".join("?" * len(chunk))
            now += conn.execute(
                f"SELECT count(*) FROM main.{table} WHERE {key} IN ({marks}) "
                f"AND typeof({key}) = 'text' AND CAST({key} AS BLOB) IN ({marks})",
                [*chunk, *(k.encode() for k in chunk)],
            ).fetchone()[0]
        same = " AND ".join(
            f"typeof(m.\"{c}\") = w.k{at} AND (CASE WHEN w.k{at} = 'text' "
            f'THEN CAST(m."{c}" AS BLOB) ELSE m."{c}" END) IS w.v{at}'
            for at, c in enumerate(columns)
        )
        # CROSS JOIN: the staged rows lead, each finds its row by rowid.
        matched = conn.execute(
            f"SELECT count(*) FROM {_staged(table)} AS w CROSS JOIN main.{table} AS m "
            f"ON m.rowid = w.rid WHERE typeof(m.{key}) = 'text' "
            f"AND CAST(m.{key} AS BLOB) = w.key AND {same}"
        ).fetchone()[0]
        expected = sum(len(c.rows) for c in members)
        if not now == matched == expected:
            return False
    return True


def _staged(table: str) -> str:
    return f'temp."lovia_tui_was_{table}"'


def _by_table(
    captured: Sequence[Captured],
) -> dict[tuple[Path, str], list[Captured]]:
    by_table: dict[tuple[Path, str], list[Captured]] = {}
    for c in captured:
        by_table.setdefault((c.group.file, c.group.table), []).append(c)
    return by_table
