"""A lovia file holding values of every SQLite storage class where lovia writes
TEXT ids, REAL times and its own statuses, beside rows lovia wrote.

A foreign program created lovia's tables first, without column types (as
``CREATE TABLE IF NOT EXISTS`` then leaves them: lovia writes into them as
they are), so no column affinity turns ``42`` into ``'42'``; then lovia wrote
its usual rows (:func:`support.lovia_factory.build_web_file`), and the rows
below are raw inserts. A damaged page or a foreign writer leaves the same
values in lovia's own tables.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from support.lovia_factory import build_web_file

KEYS: dict[str, Any] = {
    "integer": 42,
    "real": 4.5,
    "blob": b"\x00\xffk",
    "null": None,
}
"""A key of each storage class but TEXT, keyed by its name."""
TEXT_TWIN = "42"
"""The text id ``'42'``, which the integer key must never be taken for."""
ODD_STATUSES: dict[str, Any] = {
    "status-bogus": "bogus",
    "status-future": "paused",
    "status-object": {"a": 1},
    "status-number": 7,
}
"""Run id -> a head status lovia does not write: each counted as "other"."""
ODD_TIMES: dict[str, Any] = {"text": "yesterday", "blob": b"\x01", "null": None}
"""Times that are no number, in every time column."""
BAD_TIME_SESSION = "bad-times"
BAD_TIME_RUN = "soon"
ODD_CELLS_SESSION = "odd-cells"
"""A text session whose other cells hold any type (entries, meta)."""
GOOD_ENTRIES = json.dumps(
    [
        {"type": "input", "role": "user", "content": "what is stored here"},
        {"type": "assistant_text", "content": "an answer", "id": None},
    ]
)

_TYPELESS_TABLES = """
CREATE TABLE session_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id, run_id,
  entries_json, meta_json, created_at, UNIQUE(session_id, run_id));
CREATE INDEX idx_session_runs_sid ON session_runs(session_id, id);
CREATE TABLE snapshot_heads (run_id PRIMARY KEY, head_json, updated_at);
CREATE TABLE snapshot_turns (run_id, seq, entries_json, PRIMARY KEY (run_id, seq));
CREATE TABLE chat_sessions (id PRIMARY KEY, title, agent, created_at, updated_at,
  active_run_id);
CREATE TABLE chat_runs (id PRIMARY KEY, session_id, agent, source, status, error,
  started_at, finished_at, usage_json);
"""
"""lovia's tables and columns, no types (lovia web adds its later columns itself)."""


def head(status: Any, **fields: Any) -> str:
    """A head as lovia writes one, with ``status`` as given."""
    return json.dumps({"status": status, "agent_name": "worker", "turns": 1, **fields})


async def build_any_type_db(directory: Path, *, typeless: bool = True) -> Path:
    """web.db as described above; its stale heads were saved an hour ago.

    Not ``typeless``: lovia creates its own tables, whose TEXT columns turn a
    number into text and whose NOT NULL refuse a NULL; a row that cannot go
    in is left out (what remains: BLOB ids, NULL where lovia allows it, and
    every odd time, status and cell)."""
    path = directory / "web.db"
    if typeless:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.executescript(_TYPELESS_TABLES)
    await build_web_file(directory)
    now = time.time()
    hour_ago = now - 3600
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for key in [*KEYS.values(), TEXT_TWIN]:
            conn.execute(
                "INSERT OR IGNORE INTO session_runs (session_id, run_id, entries_json, "
                "meta_json, created_at) VALUES (?, ?, ?, NULL, ?)",
                (key, key, GOOD_ENTRIES, now),
            )
            conn.execute(
                "INSERT OR IGNORE INTO snapshot_heads VALUES (?, ?, ?)",
                (key, head("running"), hour_ago),
            )
            conn.execute(
                "INSERT OR IGNORE INTO snapshot_turns VALUES (?, 1, ?)",
                (key, GOOD_ENTRIES),
            )
            conn.execute(
                "INSERT OR IGNORE INTO chat_sessions (id, title, created_at, updated_at, "
                "active_run_id) VALUES (?, 'a chat', ?, ?, ?)",
                (key, now, now, key),
            )
            conn.execute(
                "INSERT OR IGNORE INTO chat_runs (id, session_id, source, status, started_at) "
                "VALUES (?, ?, 'chat', 'running', ?)",
                (key, key, hour_ago),
            )
        for name, when in ODD_TIMES.items():
            conn.execute(
                "INSERT OR IGNORE INTO session_runs (session_id, run_id, entries_json, "
                "meta_json, created_at) VALUES (?, ?, ?, NULL, ?)",
                (BAD_TIME_SESSION, f"time-{name}", GOOD_ENTRIES, when),
            )
            conn.execute(
                "INSERT OR IGNORE INTO snapshot_heads VALUES (?, ?, ?)",
                (f"{BAD_TIME_RUN}-{name}", head("running"), when),
            )
            conn.execute(
                "INSERT OR IGNORE INTO chat_sessions (id, title, created_at, updated_at) "
                "VALUES (?, 'odd time', ?, ?)",
                (f"chat-time-{name}", when, when),
            )
            conn.execute(
                "INSERT OR IGNORE INTO chat_runs (id, session_id, source, status, started_at) "
                "VALUES (?, ?, 'chat', 'running', ?)",
                (f"{BAD_TIME_RUN}-{name}", BAD_TIME_SESSION, when),
            )
        for run_id, status in ODD_STATUSES.items():
            conn.execute(
                "INSERT OR IGNORE INTO snapshot_heads VALUES (?, ?, ?)",
                (run_id, head(status), hour_ago),
            )
        # Every storage class in the other cells of a text session.
        for n, cell in enumerate([7, 2.5, b"[]", None]):
            conn.execute(
                "INSERT OR IGNORE INTO session_runs (session_id, run_id, entries_json, "
                "meta_json, created_at) VALUES (?, ?, ?, ?, ?)",
                (ODD_CELLS_SESSION, f"cells-{n}", cell, cell, now),
            )
            conn.execute(
                "INSERT OR IGNORE INTO snapshot_heads VALUES (?, ?, ?)",
                (f"cells-{n}", cell, cell),
            )
            conn.execute(
                "INSERT OR IGNORE INTO snapshot_turns VALUES (?, ?, ?)",
                ("inflight", ["x", 2.5, b"\x02", 9][n], cell),
            )
            conn.execute(
                "INSERT OR IGNORE INTO chat_runs (id, session_id, source, status, started_at) "
                "VALUES (?, ?, 'chat', ?, ?)",
                (f"cells-{n}", ODD_CELLS_SESSION, cell, cell),
            )
    return path
