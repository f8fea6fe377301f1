"""A lovia database with hostile rows beside real ones, for app and CLI tests.

The base and every well-formed row are written by lovia (Runner, SQLiteSession,
ChatStore); the hostile rows are raw writes into that file, grouped in a few
sessions (and runs) so a test can name what it navigates onto.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path

from lovia import SQLiteSession
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
)

from support.lovia_factory import build_web_file

HUGE_CHARS = 10 * 1024 * 1024
MANY_ENTRIES = 100_000

ODD_FIELDS = "odd-fields"
"""A bad segment that parses: known entry types, fields of any JSON shape."""
UNKNOWN_TYPE = "unknown-type"
"""A segment of an entry type this lovia does not know: shown as stored, not hidden."""
PARSES = frozenset({ODD_FIELDS, UNKNOWN_TYPE})
"""The bad segments whose entries show (the rest are marked unreadable)."""
BLOB = "blob"
"""A segment whose entries_json is a BLOB, not text."""
# run id -> entries_json stored raw, in session BAD_SEGMENTS_SESSION between
# two segments lovia wrote
BAD_SEGMENTS: dict[str, str] = {
    "bad-json": '[{"type": "input", ',
    "shape-object": "{}",
    "shape-ints": "[1, 2, 3]",
    "shape-string": '"just a string"',
    "shape-null": "null",
    UNKNOWN_TYPE: '[{"type": "mystery", "content": "?"}]',
    ODD_FIELDS: json.dumps(
        [
            {"type": "input", "role": 5, "content": {"weird": True}},
            {
                "type": "reasoning",
                "content": [1, {"type": "image"}, {"type": "text", "text": 7}],
            },
            {"type": "tool_call", "call_id": [1, 2], "name": 7, "arguments": {"q": 1}},
            {
                "type": "tool_result",
                "call_id": [1, 2],
                "output": {"a": 1},
                "is_error": "maybe",
            },
            {"type": "tool_call", "call_id": {"x": 1}, "name": None},
            {"type": "assistant_text", "content": None},
            {"type": "tool_result"},
            {"type": "input", "content": "an input with no role"},
            {"type": "input", "role": ["user"], "content": [{"type": ["image"]}]},
        ]
    ),
    "type-list": '[{"type": ["input"], "role": "user"}]',
    BLOB: "X'00ff10'",  # an SQL literal
}
# run id -> meta_json stored raw beside well-formed entries, in session BAD_META_SESSION
BAD_META: dict[str, str] = {
    "meta-bad-json": "{oops",
    "meta-list": "[]",
    "meta-odd-timing": json.dumps(
        {"timing": {"started_at": "noon", "finished_at": 1e300}}
    ),
    "meta-timing-list": json.dumps({"timing": [1, 2]}),
    "meta-odd-context": json.dumps(
        {
            "context_state": {"context": {"offloaded": [1], "cleared": 5}},
            "context_notice": 3,
        }
    ),
}
# run id -> head_json stored raw
BAD_HEADS: dict[str, str] = {
    "run-bad-json": '{"status": "running", ',
    "run-list": "[]",
    "run-no-status": json.dumps({"agent_name": "a"}),
    "run-odd-fields": json.dumps(
        {
            "status": "running",
            "agent_name": "worker",
            "turns": 2,
            "usage": {"input_tokens": "lots", "output_tokens": None},
            "last_input_tokens": "many",
            "started_at": "noon",
            "context_state": {"context": {"offloaded": 5, "cleared": 3, "summary": 1}},
            "pending_handoff": 7,
            "error": "boom",
            "output": {"not": "a string"},
        }
    ),
    "run-odd-completed": json.dumps(
        {
            "status": "completed",
            "agent_name": "worker",
            "output": [1, {"a": None}],
            "context_state": [1],
        }
    ),
}
# batches of the in-flight run "inflight" (web UI layout) stored raw
BAD_BATCHES = [
    '[{"type": "input", ',
    "{}",
    json.dumps([{"type": "tool_call", "call_id": [9], "name": "x"}]),
]
GOOD = json.dumps(
    [
        {"type": "input", "role": "user", "content": "a fine question"},
        {"type": "assistant_text", "content": "a fine answer", "id": None},
    ]
)
BAD_SEGMENTS_SESSION = "bad-segments"
BAD_META_SESSION = "bad-meta"
UTF8_SESSION = "bad-utf8"
HUGE_SESSION = "huge-entry"
MANY_SESSION = "many-entries"


def _write(path: Path, sql: str, *params: object) -> None:
    """The only raw writes: the hostile rows."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(sql, params)
        conn.commit()


_INSERT = (
    "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, created_at) "
    "VALUES (?, ?, {entries}, ?, ?)"
)


async def build_hostile_db(directory: Path) -> Path:
    """web.db from :func:`lovia_factory.build_web_file`, plus the rows above."""
    path = await build_web_file(directory)
    session = SQLiteSession(path, wal=True)
    log = "\n".join(
        f"{n:07d} GET /api/items?page={n} 200 12ms" for n in range(HUGE_CHARS // 40)
    )
    await session.append(
        HUGE_SESSION,
        [
            InputEntry(role="user", content="dump the access log"),
            ToolCallEntry("big", "dump", "{}"),
            ToolResultEntry("big", log[:HUGE_CHARS]),
            ToolCallEntry("wide", "dump", "{}"),
            ToolResultEntry("wide", "x" * HUGE_CHARS),
            AssistantTextEntry(content="done"),
        ],
        run_id="huge-1",
    )
    many = [InputEntry(role="user", content="count")] + [
        AssistantTextEntry(content=f"{n}") for n in range(MANY_ENTRIES - 1)
    ]
    await session.append(MANY_SESSION, many, run_id="many-1")
    await session.append(
        BAD_SEGMENTS_SESSION,
        [InputEntry(role="user", content="first")],
        run_id="good-1",
    )
    now = time.time()
    for run_id, entries in BAD_SEGMENTS.items():
        sql = _INSERT.format(entries=entries if run_id == BLOB else "?")
        params = () if run_id == BLOB else (entries,)
        _write(path, sql, BAD_SEGMENTS_SESSION, run_id, *params, None, now)
    await session.append(
        BAD_SEGMENTS_SESSION,
        [InputEntry(role="user", content="last"), AssistantTextEntry(content="ok")],
        run_id="good-2",
    )
    for run_id, meta in BAD_META.items():
        _write(
            path, _INSERT.format(entries="?"), BAD_META_SESSION, run_id, GOOD, meta, now
        )
    utf8 = '[{"type":"input","role":"user","content":"\xff latte"}]'.encode(
        "latin-1"
    ).hex()
    _write(
        path,
        _INSERT.format(entries=f"CAST(X'{utf8}' AS TEXT)"),
        UTF8_SESSION,
        "utf8-1",
        None,
        now,
    )
    for run_id, head in BAD_HEADS.items():
        _write(
            path,
            "INSERT INTO snapshot_heads (run_id, head_json, updated_at) VALUES (?, ?, ?)",
            run_id,
            head,
            now,
        )
    for seq, batch in enumerate(BAD_BATCHES, start=50):
        _write(
            path,
            "INSERT INTO snapshot_turns (run_id, seq, entries_json) VALUES (?, ?, ?)",
            "inflight",
            seq,
            batch,
        )
    return path


HOSTILE_SESSIONS = (
    BAD_SEGMENTS_SESSION,
    BAD_META_SESSION,
    UTF8_SESSION,
    HUGE_SESSION,
    MANY_SESSION,
)
