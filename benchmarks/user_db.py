"""What ``run_all.py --db`` needs to know about a lovia file it did not build.

The generated files come with a sidecar naming their giant session and their
rare word; a user's file does not, so both are found here, read-only
(``mode=ro``: nothing is written, not even a journal). The giant session is
the one with the most segments, counted from lovia's ``(session_id, id)``
index alone (one pass over the index, never the rows' text); the needle is
the least common word of a sample of segments read by id (the sample grows
while even that word is common), so the search measure looks for something
rare without scanning the file to choose it.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections import Counter
from pathlib import Path

SAMPLE = 1_000
"""Segments read to choose a needle: ~8 MB whatever the file's size."""
RARE = 0.005
"""A needle is rare when at most this share of the sampled segments holds it."""
RUN = 16
"""Segments read together from each random id: a seek per 16, not per segment."""
MOST_SAMPLED = 64_000
"""Where a file's words are all common, the sample grows to this at most (~0.5 GB)."""
WORD = re.compile(r"\b[^\W\d_]+(?:-\w+)+\b|\b[^\W\d_]{5,24}\b")
"""A whole word of letters, or words joined by hyphens (``zebra-quartz-7``):
what a user types and the app's index holds; ids and hashes are not words."""
SEED = 20


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise SystemExit(f"{path}: no such file")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    }


def largest_session(conn: sqlite3.Connection) -> tuple[str, int, int, int]:
    """(session id, its segments, sessions, segments) from one pass over the index."""
    best, best_runs, sessions, segments = "", 0, 0, 0
    for session_id, runs in conn.execute(
        "SELECT session_id, COUNT(*) FROM session_runs GROUP BY session_id"
    ):
        sessions += 1
        segments += runs
        if runs > best_runs:
            best, best_runs = session_id, runs
    return best, best_runs, sessions, segments


def rare_word(conn: sqlite3.Connection, sample: int = SAMPLE) -> str:
    """The least common word of the stored text in segments sampled by id,
    inside no other word seen; the sample grows (up to ``MOST_SAMPLED``)
    while even that one is in more than ``RARE`` of them, as in a file of
    few words."""
    low, high = conn.execute(
        "SELECT (SELECT MIN(id) FROM session_runs), (SELECT MAX(id) FROM session_runs)"
    ).fetchone()
    if low is None:
        raise SystemExit("no segments to search")
    rng = random.Random(SEED)
    seen: Counter[str] = Counter()
    read = 0
    while True:
        for _ in range((sample - read) // RUN):
            for (entries,) in conn.execute(
                "SELECT entries_json FROM session_runs WHERE id >= ? ORDER BY id LIMIT ?",
                (rng.randint(low, high), RUN),
            ):
                seen.update(set(_words(json.loads(entries))))
        read = sample
        if not seen:
            raise SystemExit("no word to search for in the sampled segments")
        # The search matches substrings: a word cut short ("custome") is not rare.
        whole = sorted(
            (w for w in seen if not any(w in other != w for other in seen)),
            key=lambda w: (seen[w], -len(w), w),
        ) or sorted(seen, key=lambda w: (seen[w], -len(w), w))
        if seen[whole[0]] <= RARE * sample or sample >= MOST_SAMPLED:
            return whole[0]
        sample *= 4


def _words(value: object) -> list[str]:
    """The words of every string in a decoded ``entries_json`` (not its keys)."""
    if isinstance(value, str):
        return WORD.findall(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [word for item in value for word in _words(item)]
    return []


def describe(path: Path, giant: str | None = None, needle: str | None = None) -> dict:
    """The fields of ``generate.BenchDb`` that the probes read, for ``path``."""
    conn = _connect(path)
    try:
        tables = _tables(conn)
        if "session_runs" not in tables:
            raise SystemExit(
                f"{path}: no session_runs table (a checkpoint-only file): "
                "these measures browse sessions"
            )
        found, found_runs, sessions, segments = largest_session(conn)
        if giant is None:
            giant, giant_runs = found, found_runs
        else:
            (giant_runs,) = conn.execute(
                "SELECT COUNT(*) FROM session_runs WHERE session_id = ?", (giant,)
            ).fetchone()
            if not giant_runs:
                raise SystemExit(f"{path}: no session {giant!r}")
        checkpoints = 0
        if "snapshot_heads" in tables:
            (checkpoints,) = conn.execute(
                "SELECT COUNT(*) FROM snapshot_heads"
            ).fetchone()
        (journal,) = conn.execute("PRAGMA journal_mode").fetchone()
        return {
            "path": str(path.resolve()),
            "size": path.name,
            "segments": segments,
            "sessions": sessions,
            "giant_session": giant,
            "giant_runs": giant_runs,
            "checkpoints": checkpoints,
            "live_runs": [],
            "needle": needle or rare_word(conn),
            "bytes": path.stat().st_size,
            "journal_mode": journal,
        }
    finally:
        conn.close()


def records(measures: list, info: dict) -> list[dict]:
    """``--out``: one object per measure, the fields a user compares."""
    return [
        {
            "db": info["path"],
            "number": m.number,
            "measure": m.name,
            "unit": m.unit,
            "value": m.value,
            "floor": m.floor,
            "ratio": m.ratio,
            "budget": m.budget,
            "ok": m.ok,
            **{
                k: m.details[k] for k in ("slowest", "params", "plan") if k in m.details
            },
        }
        for m in measures
        if m.number != "-"
    ]
