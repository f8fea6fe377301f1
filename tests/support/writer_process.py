"""A lovia writer appending to one session in a child process, and what it committed.

The writer is the soak's (``soak/writer.py``: ``Runner.run`` on ScriptedProvider
agents, ``SQLiteSession`` and ``SQLiteCheckpointer`` with ``wal=True``); it
logs every segment, checkpoint batch and head right after lovia committed it.
Also here: the rows a database and a journal hold, as the same digests, so a
test can say where each committed row went.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import select
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

WRITER = Path(__file__).parent / "soak" / "writer.py"
READY_WITHIN = 60.0


def sha(raw: bytes | str | None) -> str | None:
    if raw is None:
        return None
    return hashlib.sha256(raw.encode() if isinstance(raw, str) else raw).hexdigest()


@dataclass
class Committed:
    """What the writer reported committed: segments, checkpoint batches, last heads."""

    segments: list[tuple[str, str, str | None]] = field(default_factory=list)
    turns: list[tuple[str, str]] = field(default_factory=list)
    heads: dict[str, str] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    log: Path | None = None

    def commits_so_far(self) -> int:
        """How many rows the running writer has logged (it appends a line per commit)."""
        assert self.log is not None
        return self.log.read_bytes().count(b"\n") if self.log.exists() else 0

    @classmethod
    def read(cls, log: Path, summary: dict) -> Committed:
        found = cls(summary=summary)
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if record["kind"] == "segment":
                found.segments.append(
                    (record["run_id"], record["entries"], record["meta"])
                )
            elif record["kind"] == "turn":
                found.turns.append((record["run_id"], record["sha"]))
            else:
                found.heads[record["run_id"]] = record["sha"]
        return found


@contextlib.contextmanager
def writer(
    db: Path, session_id: str, directory: Path, pace: float = 0.02
) -> Iterator[Committed]:
    """Run the writer on ``session_id`` for the block; its rows are filled in at exit."""
    log, stop = directory / "writer.log", directory / "writer.stop"
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(db), "w", str(log), str(stop), str(pace), session_id],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    committed = Committed(log=log)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], READY_WITHIN)
        line = proc.stdout.readline() if ready else ""
        assert line.strip() == "READY", (line, proc.stderr.read() if not ready else "")
        yield committed
    finally:
        stop.touch()
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    lines = out.strip().splitlines()
    assert lines and proc.returncode == 0, err[-2000:]
    found = Committed.read(log, json.loads(lines[-1]))
    committed.segments, committed.turns = found.segments, found.turns
    committed.heads, committed.summary = found.heads, found.summary


def db_rows(
    db: Path,
) -> tuple[list[tuple[str, str, str | None]], set[tuple[str, str]], dict[str, str]]:
    """The session rows in order, checkpoint batches and heads, as the writer logs them."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        segments = [
            (run_id, sha(entries), sha(meta))
            for run_id, entries, meta in conn.execute(
                "SELECT run_id, CAST(entries_json AS BLOB), CAST(meta_json AS BLOB) "
                "FROM session_runs ORDER BY id"
            )
        ]
        turns = {
            (run_id, sha(raw))
            for run_id, raw in conn.execute(
                "SELECT run_id, CAST(entries_json AS BLOB) FROM snapshot_turns"
            )
        }
        heads = {
            run_id: sha(raw)
            for run_id, raw in conn.execute(
                "SELECT run_id, CAST(head_json AS BLOB) FROM snapshot_heads"
            )
        }
    finally:
        conn.close()
    return segments, turns, heads


def journaled(journal: Path) -> dict[int, dict[str, set[tuple]]]:
    """Per journal entry, the rows it holds: ``session_runs`` as (run id, entries
    sha, meta sha), ``snapshot_turns`` and ``snapshot_heads`` as (run id, sha)."""
    wanted = {
        "session_runs": ("run_id", "entries_json", "meta_json"),
        "snapshot_turns": ("run_id", "entries_json"),
        "snapshot_heads": ("run_id", "head_json"),
    }
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    held: dict[int, dict[str, set[tuple]]] = {}
    try:
        groups = conn.execute(
            "SELECT entry_id, position, tbl, columns_json FROM groups"
        ).fetchall()
        for entry_id, position, table, columns_json in groups:
            if table not in wanted:
                continue
            columns = json.loads(columns_json)
            at = [columns.index(name) for name in wanted[table]]
            rows: dict[int, dict[int, bytes | None]] = {}
            for row_no, col_no, value in conn.execute(
                "SELECT row_no, col_no, value FROM cells WHERE entry_id = ? AND position = ?",
                (entry_id, position),
            ):
                rows.setdefault(row_no, {})[col_no] = value
            into = held.setdefault(entry_id, {}).setdefault(table, set())
            for cells in rows.values():
                key = cells[at[0]]
                run_id = key.decode() if isinstance(key, bytes) else str(key)
                into.add((run_id, *(sha(cells[i]) for i in at[1:])))
    finally:
        conn.close()
    return held


def wait_for(check, within: float = 30.0) -> None:
    """Poll ``check`` until it is true (bounded)."""
    deadline = time.monotonic() + within
    while not check():  # bounded by the deadline
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)  # bounded
