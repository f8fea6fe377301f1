"""Damaged copies of a lovia file, made the ways files really break.

Each writes a consistent copy first (SQLite's backup, rollback-journal mode,
no connection left open) and then changes its bytes: no SQLite connection
of this process is on the copy, so its locks are not at stake.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path


def _copy(source: Path, target: Path) -> tuple[int, dict[str, int]]:
    """A journal-mode copy of ``source``: its page size and tables' root pages."""
    source_uri = f"file:{source}?mode=ro"
    with (
        contextlib.closing(sqlite3.connect(source_uri, uri=True)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
        page_size = dst.execute("PRAGMA page_size").fetchone()[0]
        roots = dict(
            dst.execute("SELECT name, rootpage FROM sqlite_master WHERE rootpage > 0")
        )
    return page_size, roots


def swapped_pages(source: Path, target: Path) -> Path:
    """``session_runs``'s root page overwritten by ``snapshot_turns``'s: what the
    reported corruption looked like (checkpoint rows read as segments, integer
    session ids, NULL entries) — every statement still reads."""
    page_size, roots = _copy(source, target)
    with target.open("r+b") as handle:
        handle.seek((roots["snapshot_turns"] - 1) * page_size)
        page = handle.read(page_size)
        handle.seek((roots["session_runs"] - 1) * page_size)
        handle.write(page)
    return target


def clobbered_page(source: Path, target: Path, table: str = "session_runs") -> Path:
    """``table``'s root page with garbage cell pointers: reads of it fail with
    SQLITE_CORRUPT ("database disk image is malformed")."""
    page_size, roots = _copy(source, target)
    with target.open("r+b") as handle:
        handle.seek((roots[table] - 1) * page_size + 8)
        handle.write(b"\xff\xfe" * 20)
    return target


def unindexed_segment(source: Path, target: Path) -> Path:
    """A copy whose session index misses one segment of ``chat-kyoto``: the
    index pointed at another table while the row was written (damage
    ``quick_check`` does not see, ``integrity_check`` does; a read by the
    index then leaves that segment out)."""
    _copy(source, target)
    index = "idx_session_runs_sid"
    elsewhere = f"CREATE INDEX {index} ON lovia_schema(store, version)"
    with contextlib.closing(sqlite3.connect(target)) as conn:
        (restored,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = ?", (index,)
        ).fetchone()
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute(
            "UPDATE sqlite_master SET tbl_name = 'lovia_schema', sql = ? WHERE name = ?",
            (elsewhere, index),
        )
        conn.commit()
    with contextlib.closing(sqlite3.connect(target)) as conn:
        conn.execute(
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
            "VALUES ('chat-kyoto', 'unindexed', '[]', 0)"
        )
        conn.commit()
    with contextlib.closing(sqlite3.connect(target)) as conn:
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute(
            "UPDATE sqlite_master SET tbl_name = 'session_runs', sql = ? WHERE name = ?",
            (restored, index),
        )
        conn.commit()
    return target
