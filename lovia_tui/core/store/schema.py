"""What lovia's tables look like, mirrored from lovia 0.9 (never invented).

Used to recognise a lovia file and to refuse one written by a newer lovia or
holding tables with lovia's names but not lovia's columns.
"""

from __future__ import annotations

from pathlib import Path

from lovia_tui.core.errors import OpenError

STORE_TABLES: dict[str, set[str]] = {
    "session": {"session_runs"},
    "checkpoint": {"snapshot_heads", "snapshot_turns"},
}
CHAT_TABLES = {"chat_sessions", "chat_runs"}

REQUIRED_COLUMNS: dict[str, set[str]] = {
    "session_runs": {
        "id",
        "session_id",
        "run_id",
        "entries_json",
        "meta_json",
        "created_at",
    },
    "snapshot_heads": {"run_id", "head_json", "updated_at"},
    "snapshot_turns": {"run_id", "seq", "entries_json"},
}


def known_version(store: str) -> int | None:
    """The schema version the installed lovia writes for ``store``.

    Session and checkpoint stores are still at version 0; the chat store's
    version is its number of migrations (lovia's own rule in SQLiteStore),
    counted from lovia's source so that no read path imports lovia.web.
    """
    if store in STORE_TABLES:
        return 0
    if store == "chat":
        from lovia_tui.core.store.chat_schema import chat_version

        return chat_version()
    return None


def check_versions(path: Path, versions: dict[str, int]) -> None:
    for store, version in versions.items():
        known = known_version(store)
        if known is not None and int(version) > known:
            raise OpenError(
                f"{path}: the {store!r} tables are at schema version {version}, "
                f"newer than the installed lovia knows ({known}); upgrade lovia"
            )


def check_columns(path: Path, table: str, columns: set[str]) -> None:
    missing = REQUIRED_COLUMNS.get(table, set()) - columns
    if missing:
        raise OpenError(
            f"{path}: table {table} lacks lovia's columns "
            f"({', '.join(sorted(missing))}); not a lovia database"
        )
