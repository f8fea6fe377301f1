"""What lovia's tables look like, as the installed lovia writes them (never invented).

Used to recognise a lovia file and to decide, store by store, which of its
stores can be read: lovia refuses only a store newer than it knows and keeps
reading the others, and so does lovia-tui. Versions and columns come from the
installed lovia (:mod:`lovia_tui.core.lovia_facts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lovia_tui.core.lovia_facts import STORE_TABLES, installed
from lovia_tui.core.store.table_shape import rowid_problem

CHAT_TABLES = frozenset({"chat_sessions", "chat_runs"})
CHAT_COLUMNS: Mapping[str, frozenset[str]] = {
    "chat_sessions": frozenset(
        {"id", "title", "agent", "created_at", "updated_at", "active_run_id"}
    ),
    "chat_runs": frozenset(
        {"id", "session_id", "agent", "source", "status", "error", "started_at",
         "finished_at", "usage_json"}
    ),
}  # fmt: skip
"""The columns every lovia web file has (its first chat schema); those added
later (``pinned``, ``parent_id``, ``origin_*``…) are read where present. A
table of that name without them is another program's."""
STORE_NAMES = {"session": "session", "checkpoint": "checkpoint", "chat": "web UI"}
LOVIA_VIEWS_SQL = (
    "SELECT lower(name) FROM sqlite_master WHERE type = 'view' "
    "AND lower(name) IN ('session_runs', 'snapshot_heads') ORDER BY 1"
)
"""Views that bear the name of a lovia table (see :func:`not_lovia`)."""


def not_lovia(views: list[str]) -> str:
    """Why a file without lovia's tables is not read: a view may bear the name
    (``views``: :data:`LOVIA_VIEWS_SQL`'s)."""
    if views:
        return (
            f"{views[0]} is a view, not a table as lovia makes it (lovia-tui "
            "reads lovia's tables by rowid); not shown"
        )
    return "not a lovia database (no session_runs or snapshot_heads table)"


@dataclass(frozen=True)
class Stores:
    """Which lovia stores of a file can be read (tables appear on a store's
    first use; a store a newer lovia wrote is ``refused``, the rest are read)."""

    session: bool
    checkpoint: bool
    chat: bool
    refused: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tables: set[str], refused: frozenset[str] = frozenset()) -> Stores:
        """The stores whose tables are all there, less those refused."""
        return cls(
            session="session" not in refused and STORE_TABLES["session"] <= tables,
            checkpoint="checkpoint" not in refused
            and STORE_TABLES["checkpoint"] <= tables,
            chat="chat" not in refused and tables >= CHAT_TABLES,
            refused=refused,
        )

    @property
    def any(self) -> bool:
        return self.session or self.checkpoint


def known_version(store: str) -> int | None:
    """The schema version the installed lovia writes for ``store`` (lovia's
    rule: its number of migrations), None for a store lovia does not have."""
    return installed().versions.get(store)


def stored_version(value: object) -> int | None:
    """A ``lovia_schema`` version as lovia reads it (``int()``), None where
    lovia could not: text, a blob or NULL that a writer other than lovia left."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None


def refusals(
    tables: Mapping[str, str | None],
    columns: Mapping[str, set[str]],
    versions: Mapping[object, object],
) -> dict[str, str]:
    """Each store of a file that cannot be read, with the line that says why
    (``tables``: the file's tables and their CREATE statements).

    A store at a version newer than the installed lovia knows was written by a
    newer lovia (lovia itself refuses that store alone); one whose version is
    not a number was not written by lovia (lovia would fail to open it); a
    table with lovia's name that lacks lovia's columns, or the rowid every
    read walks by, is not lovia's.
    """
    refused: dict[str, str] = {}
    for store, stored in versions.items():
        if not isinstance(store, str) or (known := known_version(store)) is None:
            continue
        name = STORE_NAMES.get(store, store)
        version = stored_version(stored)
        if version is None:
            refused[store] = (
                f"the {name} tables' schema version is not a number: "
                "not written by lovia, not shown"
            )
        elif version > known:
            refused[store] = (
                f"the {name} tables are at schema "
                f"version {version}, newer than the installed lovia knows ({known}): "
                "not shown; upgrade lovia to read them"
            )
    required = {**installed().columns, **CHAT_COLUMNS}
    for store, store_tables in {**STORE_TABLES, "chat": CHAT_TABLES}.items():
        for table in sorted(store_tables & tables.keys()):
            missing = required.get(table, frozenset()) - columns.get(table, set())
            rowless = rowid_problem(tables[table], columns.get(table, set()))
            if missing and store not in refused:
                refused[store] = (
                    f"table {table} lacks lovia's columns "
                    f"({', '.join(sorted(missing))}); not a lovia table, not shown"
                )
            elif rowless and store not in refused:
                refused[store] = (
                    f"table {table} {rowless}, which lovia never makes "
                    "(lovia-tui reads its rows by rowid); not shown"
                )
    return refused
