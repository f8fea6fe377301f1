"""Rows exactly as stored: read, fingerprint and put back byte-identical.

A row group is one table's rows under one key (a session's ``session_runs``,
a run's ``snapshot_turns``, ...). Each cell keeps its SQLite storage class and,
for text, its raw bytes, so a restore reproduces what ``quote()`` would show
even for text lovia never wrote. Rows go back under their old ``rowid`` too
(all of lovia's tables have one), unless a newer row has taken it.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.store.connect import BUSY_TIMEOUT_MS, sqlite_uri
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.table_shape import TABLE_SQL, refuse_odd_table

# The tables an action may touch: key column, the order rows are read in,
# and the column naming a row within its group (what undo matches rows by).
TABLES: dict[str, tuple[str, str, str]] = {
    "session_runs": ("session_id", "id", "run_id"),
    "snapshot_heads": ("run_id", "run_id", "run_id"),
    "snapshot_turns": ("run_id", "seq", "seq"),
    "chat_sessions": ("id", "id", "id"),
    "chat_runs": ("id", "id", "id"),
    "chat_ui_data": ("session_id", "id", "id"),
}

# A stored value and its SQLite storage class; text is kept as its raw bytes.
Cell = tuple[str, Any]


@dataclass(frozen=True)
class RowGroup:
    """The rows of one table with one key in one file: a unit of undo."""

    file: Path
    table: str
    key: str

    @property
    def key_column(self) -> str:
        return TABLES[self.table][0]


@dataclass(frozen=True)
class Captured:
    """A row group's rows exactly as stored, and their digest."""

    group: RowGroup
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    # Where each row sits; not part of the digest, which is about content.
    rowids: tuple[int, ...]
    journaled_digest: str | None = None
    """The digest stored with journaled rows; None for rows just read."""

    @functools.cached_property
    def digest(self) -> str:
        """The rows' :func:`digest`, computed on first use (a check under the
        write lock compares rows, and spends no time hashing them)."""
        return self.journaled_digest or digest(self.rows)

    def column(self, name: str) -> list[Any]:
        """One column's values as Python sees them (text decoded leniently)."""
        index = self.columns.index(name)
        return [_python(row[index]) for row in self.rows]

    def identities(self) -> tuple[str, ...]:
        """Each row's name within the group (its run id, seq, ...), unique.

        A name seen twice (only a file lovia did not write can hold that) gets
        its occurrence number, so every row still has one of its own.
        """
        return self._identities

    @functools.cached_property
    def _identities(self) -> tuple[str, ...]:
        """Worked out once: an undo asks under its lock, for every group."""
        if not self.rows:
            return ()
        at = self.columns.index(TABLES[self.group.table][2])
        seen: dict[str, int] = {}
        names = []
        for row in self.rows:
            name = identity(*row[at])
            seen[name] = seen.get(name, 0) + 1
            names.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
        return tuple(names)


def identity(kind: str, value: Any) -> str:
    """A cell as a row name: storage class and exact value."""
    return f"{kind}:{bytes(value).hex() if kind in ('text', 'blob') else value}"


def _python(cell: Cell) -> Any:
    kind, value = cell
    return value.decode("utf-8", errors="replace") if kind == "text" else value


def digest(rows: Iterable[Sequence[Cell]]) -> str:
    """A hash of rows over storage class and exact bytes (floats as hex)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(b"R")
        for kind, value in row:
            if kind == "real":
                raw = float(value).hex().encode()
            elif kind == "integer":
                raw = str(value).encode()
            elif kind == "null":
                raw = b""
            else:
                raw = bytes(value)
            h.update(f"{kind}:{len(raw)}:".encode())
            h.update(raw)  # not joined to the prefix: that copies a 200 MB output
    return h.hexdigest()


def combined(captured: Iterable[Captured]) -> str:
    return hashlib.sha256("".join(c.digest for c in captured).encode()).hexdigest()


def _select(
    group: RowGroup,
    columns: Sequence[str],
    keys: int = 1,
    *,
    large: int | None = None,
    from_rowid: bool = False,
) -> str:
    """Rows of ``keys`` groups of the group's table: rowid, key, then each cell
    (NULL for a text or blob of more than ``large`` bytes, read apart);
    ``from_rowid``: only rows at or after the rowid given last."""
    apart = (
        ""
        if large is None
        else "WHEN typeof(\"{c}\") IN ('text', 'blob') AND "
        f'length(CAST("{{c}}" AS BLOB)) > {large} THEN NULL '
    )
    cells = ", ".join(
        f'typeof("{c}"), CASE {apart.format(c=c)}WHEN typeof("{c}") = \'text\' '
        f'THEN CAST("{c}" AS BLOB) ELSE "{c}" END'
        for c in columns
    )
    tail = " AND rowid >= ?" if from_rowid else ""
    return (
        f'SELECT rowid, "{group.key_column}", {cells} FROM {group.table} '
        f'WHERE "{group.key_column}" IN ({", ".join("?" * keys)}){tail} '
        + _order_by(group)
    )


def _order_by(group: RowGroup) -> str:
    """The order a group's rows are captured in."""
    return f'ORDER BY "{group.key_column}", "{TABLES[group.table][1]}"'


def _captured(group: RowGroup, columns: tuple[str, ...], raw: list[Any]) -> Captured:
    """The rows of :func:`_select` (rowid, key, then kind and value per cell)."""
    rows = tuple(tuple(zip(row[2::2], row[3::2], strict=True)) for row in raw)
    return Captured(group, columns, rows, tuple(row[0] for row in raw))


async def capture(db: Database, group: RowGroup) -> Captured:
    """Read a row group through an open database (no row when the table is absent)."""
    columns = tuple(
        row[1] for row in await db.fetchall(f"PRAGMA table_info({group.table})")
    )
    if not columns:
        return Captured(group, (), (), ())
    (sql,) = await db.fetchone(TABLE_SQL, (group.table,)) or (None,)
    refuse_odd_table(db.path, group.table, sql, columns)
    raw = await db.fetchall(_select(group, columns, large=LARGE_CELL), (group.key,))
    for number, row in enumerate(raw):
        for at, column in enumerate(columns):
            kind, value = row[2 + 2 * at], row[3 + 2 * at]
            if kind in ("text", "blob") and value is None:
                read = db.read_blob
                value = await asyncio.to_thread(read, group.table, column, row[0])
                if value is None:
                    raise LoviaTuiError(
                        f"{group.table} row {row[0]} changed while it was read; try again"
                    )
                row = (*row[: 3 + 2 * at], value, *row[4 + 2 * at :])
        raw[number] = row
    return _captured(group, columns, raw)


LARGE_CELL = 4 << 20
"""Bytes of a text or blob above which :func:`capture` reads it by blob I/O."""


KEYS_PER_STATEMENT = 500
"""Groups of one table read by one statement (``WHERE key IN (...)``)."""


def capture_all(
    conn_for: Callable[[Path], sqlite3.Connection], groups: Sequence[RowGroup]
) -> list[Captured]:
    """:func:`capture` of many groups on plain connections, a few statements per table.

    ``conn_for`` gives the connection of a group's file (inside the caller's
    transaction, if it holds one). A bulk action's 3,000 groups are read in
    a dozen statements, not 6,000: the write lock is held that much shorter.
    """
    read = _read_all(conn_for, groups)
    return [_captured(group, *read[group]) for group in groups]


def capture_now(groups: Sequence[RowGroup]) -> list[Captured]:
    """:func:`capture_all` through short read-only connections of its own."""
    conns: dict[Path, sqlite3.Connection] = {}

    def conn_for(file: Path) -> sqlite3.Connection:
        if file not in conns:
            conns[file] = sqlite3.connect(sqlite_uri(file, "ro"), uri=True)
            conns[file].execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return conns[file]

    try:
        return capture_all(conn_for, groups)
    finally:
        for conn in conns.values():
            conn.close()


def by_table(groups: Iterable[RowGroup]) -> dict[tuple[Path, str], list[int]]:
    """The groups' positions by file and table, in their order: what one
    statement reads."""
    tables: dict[tuple[Path, str], list[int]] = {}
    for at, group in enumerate(groups):
        tables.setdefault((group.file, group.table), []).append(at)
    return tables


def _read_all(
    conn_for: Callable[[Path], sqlite3.Connection], groups: Sequence[RowGroup]
) -> dict[RowGroup, tuple[tuple[str, ...], list[Any]]]:
    """Each group's columns and :func:`_select` rows, a statement per 500 keys."""
    found: dict[RowGroup, tuple[tuple[str, ...], list[Any]]] = {}
    for (file, table), positions in by_table(groups).items():
        members = [groups[at] for at in positions]
        conn = conn_for(file)
        columns = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        (sql,) = conn.execute(TABLE_SQL, (table,)).fetchone() or (None,)
        refuse_odd_table(file, table, sql, columns)
        rows: dict[str, list[Any]] = {}
        keys = sorted({g.key for g in members}) if columns else []
        cursor = conn.cursor()
        cursor.row_factory = None  # tuples, whatever the connection's
        for start in range(0, len(keys), KEYS_PER_STATEMENT):
            chunk = keys[start : start + KEYS_PER_STATEMENT]
            for row in cursor.execute(_select(members[0], columns, len(chunk)), chunk):
                rows.setdefault(row[1], []).append(row)
        for group in members:
            found[group] = (columns, rows.get(group.key, []))
    return found


def capture_tail(
    conn: sqlite3.Connection, captured: Captured, from_rowid: int
) -> Captured:
    """A session's rows as they are now, given ``captured`` (as they were,
    read under the write lock still held) and that no row before
    ``from_rowid`` can have changed since: only the rows from it are read
    again (a rewind's read-back; the whole session took 17-29 ms of the lock
    at 2,000 runs). ``session_runs`` only: its ``id`` is its rowid, so
    the rows before it come first in the order :func:`capture` reads."""
    group = captured.group
    if group.table != "session_runs":
        raise ValueError(f"capture_tail reads session_runs, not {group.table}")
    raw = conn.execute(
        _select(group, captured.columns, from_rowid=True), (group.key, from_rowid)
    ).fetchall()
    tail = _captured(group, captured.columns, raw)
    kept = [at for at, rowid in enumerate(captured.rowids) if rowid < from_rowid]
    return Captured(
        group,
        captured.columns,
        (*(captured.rows[at] for at in kept), *tail.rows),
        (*(captured.rowids[at] for at in kept), *tail.rowids),
    )


def read_order(
    conn_for: Callable[[Path], sqlite3.Connection], groups: Sequence[RowGroup]
) -> list[list[int]]:
    """Each group's rowids in the order :func:`capture` reads its rows, a
    statement per 500 groups: what an undo reads back under its lock (a
    5,000-run session read whole took 25-40 ms of it); :func:`changed`
    makes the rows from them."""
    order: list[list[int]] = [[] for _ in groups]
    for (file, table), positions in by_table(groups).items():
        first = groups[positions[0]]
        key = f'"{first.key_column}"'
        for start in range(0, len(positions), KEYS_PER_STATEMENT):
            chunk = {
                groups[at].key: at
                for at in positions[start : start + KEYS_PER_STATEMENT]
            }
            for name, rowid in conn_for(file).execute(
                f"SELECT {key}, rowid FROM {table} WHERE {key} IN "
                f"({', '.join('?' * len(chunk))}) {_order_by(first)}",
                list(chunk),
            ):
                if name in chunk:  # the same key exactly, as capture() groups them
                    order[chunk[name]].append(rowid)
    return order


def changed(
    before: Captured,
    order: Sequence[int],
    removed: Collection[int],
    added: Mapping[int, tuple[Cell, ...]],
) -> Captured:
    """A group's rows as they are now, in :func:`read_order`'s ``order``, given
    its rows ``before`` (checked under the write lock since) and that only
    its rows ``removed`` went and its rows ``added`` came, by rowid, each
    checked to hold what it was given. A row that is neither is a bug, and
    raises."""
    rows = {
        rowid: row
        for rowid, row in zip(before.rowids, before.rows, strict=True)
        if rowid not in removed
    }
    rows.update(added)
    return Captured(
        before.group, before.columns, tuple(rows[r] for r in order), tuple(order)
    )


def capture_sync(conn: sqlite3.Connection, group: RowGroup) -> Captured:
    """:func:`capture` on a plain connection, inside a caller's transaction."""
    return capture_all(lambda _: conn, [group])[0]


def taken_rowids(
    conn: sqlite3.Connection, table: str, rowids: Sequence[int]
) -> set[int]:
    """Which of ``rowids`` a row of ``table`` holds now: under a write lock,
    read in a statement per 500, not one per row."""
    taken: set[int] = set()
    for start in range(0, len(rowids), KEYS_PER_STATEMENT):
        chunk = rowids[start : start + KEYS_PER_STATEMENT]
        taken.update(
            rowid
            for (rowid,) in conn.execute(
                f"SELECT rowid FROM {table} WHERE rowid IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
        )
    return taken


def insert_rows(
    conn: sqlite3.Connection, journaled: Captured, indices: Sequence[int]
) -> list[int]:
    """Put captured rows back, each under its old rowid unless a newer row
    took it (then SQLite gives it one); their rowids."""
    table, wanted = journaled.group.table, [journaled.rowids[i] for i in indices]
    taken = taken_rowids(conn, table, wanted)
    names = ", ".join(f'"{c}"' for c in journaled.columns)
    inserted: list[int] = []
    for index, rowid in zip(indices, wanted, strict=True):
        row = journaled.rows[index]
        marks = ", ".join(
            "CAST(? AS TEXT)" if kind == "text" else "?" for kind, _ in row
        )
        values = tuple(value for _, value in row)
        if rowid in taken:
            cursor = conn.execute(
                f"INSERT INTO {table} ({names}) VALUES ({marks})", values
            )
            rowid = cursor.lastrowid or 0
            taken.add(rowid)  # a later row's old rowid, perhaps
        else:
            conn.execute(
                f"INSERT INTO {table} (rowid, {names}) VALUES (?, {marks})",
                (rowid, *values),
            )
        inserted.append(rowid)
    return inserted
