"""A run's segment found through the compact map (core/store/run_segments.py)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from lovia_tui.core.store import run_segments
from lovia_tui.core.store.database import open_database
from lovia_tui.core.store.run_segments import RunSegments

SCHEMA = """
CREATE TABLE session_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, run_id TEXT NOT NULL,
  entries_json TEXT NOT NULL, meta_json TEXT, created_at REAL NOT NULL,
  UNIQUE(session_id, run_id));
CREATE INDEX idx_session_runs_sid ON session_runs(session_id, id);
"""


def _file(path, segments):
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA)
        conn.executemany(
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
            "VALUES (?, ?, '[]', 0)",
            segments,
        )
    conn.close()


def _run(path, sql, *params):
    with sqlite3.connect(path) as conn:
        conn.execute(sql, params)
    conn.close()


async def test_runs_are_found_in_every_session_and_only_while_stored(
    tmp_path, monkeypatch
):
    """Forked runs are in each session (the lowest session id first); a
    segment deleted since the walk is no link; one appended since is, before
    and after it is folded into the map; a hash every run shares changes
    nothing (each candidate is confirmed by its row)."""
    monkeypatch.setattr(run_segments, "WALK_CHUNK", 3)
    monkeypatch.setattr(run_segments, "FOLD_AFTER", 2)
    monkeypatch.setattr(run_segments, "_top", lambda run_id: 7)
    path = tmp_path / "s.db"
    _file(path, [("b", "r1"), ("a", "r1"), ("a", "r2"), ("c", "r3"), ("c", "r4")])
    db = await open_database(path, readonly=True)
    try:
        mapped = RunSegments(db)
        assert await mapped.sessions(["r1", "r3", "nope"]) == [
            ("r1", "a"), ("r1", "b"), ("r3", "c"),
        ]  # fmt: skip
        _run(path, "DELETE FROM session_runs WHERE run_id = 'r3'")
        _run(
            path,
            "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) VALUES ('d', 'r5', '[]', 0)",
        )
        assert await mapped.sessions(["r3", "r5", "r4"]) == [("r4", "c"), ("r5", "d")]
        for n in range(3):  # more than FOLD_AFTER appended: folded into the map
            _run(
                path,
                "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) VALUES ('e', ?, '[]', 0)",
                f"x{n}",
            )
        assert await mapped.sessions(["x0", "x2", "r5"]) == [
            ("r5", "d"), ("x0", "e"), ("x2", "e"),
        ]  # fmt: skip
        assert len(mapped._keys) == 5 + 1 + 3  # every segment mapped once
    finally:
        await db.close()


async def test_a_segment_id_too_wide_for_a_key_is_still_found(tmp_path):
    path = tmp_path / "wide.db"
    _file(path, [("s", "small")])
    _run(
        path,
        "INSERT INTO session_runs (id, session_id, run_id, entries_json, created_at) VALUES (?, 's', 'wide', '[]', 0)",
        1 << 40,
    )
    _run(
        path,
        "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) VALUES ('t', 'after', '[]', 0)",
    )
    db = await open_database(path, readonly=True)
    try:
        found = await RunSegments(db).sessions(["small", "wide", "after"])
        assert found == [("small", "s"), ("wide", "s"), ("after", "t")]
    finally:
        await db.close()


async def test_a_walk_cut_short_maps_nothing_and_the_next_one_walks(
    tmp_path, monkeypatch
):
    """A worker cancelled mid-walk (a pane reloading) must not leave the map
    half built and taken for whole: every run would then look unlinked."""
    monkeypatch.setattr(run_segments, "WALK_CHUNK", 2)
    path = tmp_path / "s.db"
    _file(path, [("a", f"r{n}") for n in range(5)])
    db = await open_database(path, readonly=True)
    try:
        mapped = RunSegments(db)
        reads = db.fetchall
        walked = []

        async def cut(sql, params=(), **kwargs):
            if "ORDER BY session_id, run_id" in sql:
                walked.append(sql)
                if len(walked) == 2:
                    raise asyncio.CancelledError
            return await reads(sql, params, **kwargs)

        monkeypatch.setattr(db, "fetchall", cut)
        with pytest.raises(asyncio.CancelledError):
            await mapped.sessions(["r4"])
        assert await mapped.sessions(["r0", "r4"]) == [("r0", "a"), ("r4", "a")]
        assert len(mapped._keys) == 5
    finally:
        await db.close()
