"""``doctor --integrity``: SQLite's own check of each store, table by table.

``PRAGMA integrity_check(TABLE)`` checks one table and its indexes (pages,
cells, row order, NOT NULL, and that every index holds every row, which
``quick_check`` skips: a row missing from lovia's session index is left out
of its session): run over lovia's tables store by store, it says which store
is damaged; one whole-file ``integrity_check`` then finds pages no table owns. It runs on a connection of its own in a thread, a table at a time, so
progress can be shown and the app's event loop never waits on it. A damaged
file is reported, never "fixed" here: no action changes a damaged file.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lovia_tui.core.store.connect import BUSY_TIMEOUT_MS, sqlite_uri
from lovia_tui.core.store.read_errors import is_damage, read_errors, sqlite_reason
from lovia_tui.core.store.schema import CHAT_TABLES, STORE_TABLES
from lovia_tui.core.store.table_shape import folded

PROBLEMS_KEPT = 20
"""Problems kept per table: the first ones say where; thousands say no more."""


@dataclass(frozen=True)
class TableCheck:
    """One table's (or the file's own) verdict: ``problems`` empty when ok."""

    store: str
    table: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _store_of(name: str) -> str:
    table = folded(name)
    for store, tables in STORE_TABLES.items():
        if table in tables:
            return store
    if table in CHAT_TABLES or table.startswith("chat_"):
        return "web"
    return "other"


def _problems(conn: sqlite3.Connection, sql: str) -> tuple[str, ...]:
    """A check's findings, or none if it says "ok" (read a few at a time)."""
    cursor = conn.execute(sql)
    found: list[str] = []
    while len(found) < PROBLEMS_KEPT and (rows := cursor.fetchmany(PROBLEMS_KEPT)):
        found.extend(str(row[0]) for row in rows)
    cursor.close()
    lines = [line for text in found for line in text.splitlines() if line.strip()]
    counts: dict[str, int] = {}
    for line in lines:
        if not line.startswith("*** in database"):
            counts[line] = counts.get(line, 0) + 1
    if list(counts) == ["ok"]:
        return ()
    return tuple(line if n == 1 else f"{line} (×{n})" for line, n in counts.items())[
        :PROBLEMS_KEPT
    ]


def check_integrity(
    path: Path,
    *,
    immutable: bool = False,
    progress: Callable[[str, float], None] | None = None,
) -> list[TableCheck]:
    """Every table's check, lovia's stores first, then the file's. Blocking:
    run it in a thread. Raises a one-line error if the file cannot be opened."""
    uri = sqlite_uri(path, "ro", immutable=immutable)
    with (
        read_errors(path),
        contextlib.closing(
            sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        ) as conn,
    ):
        try:
            names = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            # Not even the schema reads: no table can be checked by itself.
            return [TableCheck("file", "(the schema)", (sqlite_reason(exc),))]
        tables = sorted(
            (str(name) for (name,) in names),
            key=lambda name: (_store_of(name) == "other", _store_of(name), name),
        )
        checks = []
        for done, table in enumerate(tables):
            if progress:
                progress(f"{path.name}: {table}", done / (len(tables) + 1))
            quoted = table.replace('"', '""')
            try:
                problems = _problems(conn, f'PRAGMA integrity_check("{quoted}")')
            except sqlite3.DatabaseError as exc:
                problems = (str(exc),)
            checks.append(TableCheck(_store_of(table), table, problems))
        if progress:
            progress(f"{path.name}: the whole file", len(tables) / (len(tables) + 1))
        try:
            whole = _problems(conn, "PRAGMA integrity_check")
        except sqlite3.DatabaseError as exc:
            whole = (str(exc),)
        named = {problem for check in checks for problem in check.problems}
        rest = tuple(problem for problem in whole if problem not in named)
        checks.append(TableCheck("file", "(the whole file)", rest))
    return checks
