"""The database shapes of issue 16, generated with lovia's schema (and its ChatStore).

``python benchmarks/shapes.py fleet|giant|output [--count N]`` builds one and
prints its path. Built once under ``$LOVIA_TUI_BENCH_DIR`` (default
``benchmarks/cache/``) and reused; ``--force`` rebuilds.

- ``fleet``: a worker fleet's checkpoint file: one head per run, ``--count``
  of them (default 100k; the issue's 1M with ``--count 1000000``), saved in
  time order as lovia's ``INSERT OR REPLACE`` does, mostly completed, 2 % of
  them unfinished (running stale, interrupted, failed), half of those on a
  dangling tool call. Heads are ``RunHead.to_json()``, entries ``entry_to_dict``.
- ``giant``: a session store holding one segment of ``--count`` entries
  (default 100k) beside a few ordinary ones.
- ``output``: a session store holding one tool result of ``--count`` MB
  (default 50) in an ordinary segment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import cache_dir, write_checkpoint_rows  # noqa: E402

SEED = 16
UNFINISHED_EVERY = 50
"""One run in 50 is unfinished (2 %): a few thousand at 100k heads."""
DEFAULTS = {"fleet": 100_000, "giant": 100_000, "output": 50}


def shape_path(shape: str, count: int) -> Path:
    return cache_dir() / f"shape-{shape}-{count}.db"


def _create(path: Path, *, session: bool, checkpoint: bool) -> None:
    """Let lovia create its own tables (one operation of each store)."""
    from lovia import SQLiteCheckpointer, SQLiteSession

    async def touch() -> None:
        if session:
            await SQLiteSession(path).clear("x")
        if checkpoint:
            await SQLiteCheckpointer(path).delete("x")

    asyncio.run(touch())


def _dumps(entries: list) -> str:
    from lovia.transcript import entry_to_dict

    return json.dumps([entry_to_dict(e) for e in entries], ensure_ascii=False)


def _fast(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    return conn


def fleet(path: Path, count: int) -> dict:
    """One head per run, in save order; 2 % unfinished."""
    from lovia import RunHead
    from lovia.transcript import (
        AssistantTextEntry,
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
        Usage,
    )

    _create(path, session=False, checkpoint=True)
    rng = random.Random(SEED)
    now = time.time()
    conn = _fast(path)
    start = now - 30 * 86_400
    step = (30 * 86_400 - 600) / max(1, count)
    unfinished = 0
    heads, turns = [], []
    for number in range(count):
        updated = start + number * step
        kind = "completed"
        if number % UNFINISHED_EVERY == 7:
            kind = ("running", "interrupted", "failed")[number // UNFINISHED_EVERY % 3]
            unfinished += 1
        run_id = f"report-migration-{rng.getrandbits(64):016x}"
        entries = [InputEntry("user", f"migrate report {number}")]
        if kind == "completed":
            entries.append(AssistantTextEntry("Done."))
        else:
            entries.append(ToolCallEntry(f"c{number}", "migrate", '{"step": 1}'))
            if number % 2:
                entries.append(ToolResultEntry(f"c{number}", "ok"))
        for seq in range(0, len(entries), 2):
            turns.append((run_id, seq // 2, _dumps(entries[seq : seq + 2])))
        error = (
            {"type": "RuntimeError", "message": "worker lost its lease"}
            if kind == "failed"
            else {"type": "RunCancelled", "message": "cancelled"}
            if kind == "interrupted"
            else None
        )
        head = RunHead(
            agent_name="migrator",
            usage=Usage(rng.randint(1_000, 9_000), rng.randint(100, 900)),
            turns=1,
            status=kind,
            output="Done." if kind == "completed" else None,
            error=error,
            last_input_tokens=1_000,
            updated_at=updated,
            started_at=updated - 30,
        )
        heads.append((run_id, head.to_json(), updated))
        if len(heads) >= 20_000:
            _flush(conn, heads, turns)
    _flush(conn, heads, turns)
    conn.close()
    return {"checkpoints": count, "unfinished": unfinished}


def _flush(conn: sqlite3.Connection, heads: list, turns: list) -> None:
    write_checkpoint_rows(conn, heads, turns)
    heads.clear()
    turns.clear()


def _segments(path: Path, segments: list[tuple[str, str, list]]) -> None:
    _create(path, session=True, checkpoint=False)
    conn = _fast(path)
    now = time.time()
    conn.execute("BEGIN")
    for number, (session_id, run_id, entries) in enumerate(segments):
        conn.execute(
            "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, created_at) "
            "VALUES (?, ?, ?, NULL, ?)",
            (session_id, run_id, _dumps(entries), now - 100 + number),
        )
    conn.execute("COMMIT")
    conn.close()


def giant(path: Path, count: int) -> dict:
    """One segment of ``count`` entries (tool calls and results, some text)."""
    from lovia.transcript import (
        AssistantTextEntry,
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
    )

    big = [InputEntry("user", "go through every ticket")]
    while len(big) < count:
        n = len(big)
        big.append(ToolCallEntry(f"c{n}", "ticket", json.dumps({"id": n})))
        big.append(ToolResultEntry(f"c{n}", f"ticket {n}: résolu ✓ " + "x" * 40))
    big = big[: count - 1] + [AssistantTextEntry("All done.")]
    small = [InputEntry("user", "hi"), AssistantTextEntry("hello")]
    _segments(
        path,
        [("giant-segment", "r-before", small), ("giant-segment", "r-giant", big)]
        + [(f"other-{n}", f"r-{n}", small) for n in range(5)],
    )
    return {"session_id": "giant-segment", "entries": count + 2}


def output(path: Path, megabytes: int) -> dict:
    """One tool result of ``megabytes`` MB of text."""
    from lovia.transcript import (
        AssistantTextEntry,
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
    )

    line = "2026-12-01T00:00:00Z worker-7 INFO processed batch — ok ✓\n"
    text = line * (megabytes * 1_000_000 // len(line.encode()))
    entries = [
        InputEntry("user", "dump the log"),
        ToolCallEntry("c1", "read_log", "{}"),
        ToolResultEntry("c1", text),
        AssistantTextEntry("That is the whole log."),
    ]
    small = [InputEntry("user", "hi"), AssistantTextEntry("hello")]
    _segments(
        path,
        [("huge-output", "r-old", small), ("huge-output", "r-log", entries)]
        + [("huge-output", "r-after", small)],
    )
    return {"session_id": "huge-output", "output_bytes": len(text.encode())}


BUILDERS = {"fleet": fleet, "giant": giant, "output": output}


def build(shape: str, count: int | None = None, *, force: bool = False) -> dict:
    """The cached file of ``shape`` (and what it holds), built first if needed."""
    count = count or DEFAULTS[shape]
    path = shape_path(shape, count)
    sidecar = path.with_suffix(".json")
    if path.exists() and sidecar.exists() and not force:
        return json.loads(sidecar.read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in (path, sidecar, Path(f"{path}-wal"), Path(f"{path}-shm")):
        old.unlink(missing_ok=True)
    started = time.perf_counter()
    info = {"path": str(path), "shape": shape, "count": count}
    info |= BUILDERS[shape](path, count)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    info["bytes"] = path.stat().st_size
    info["generated_in_s"] = round(time.perf_counter() - started, 1)
    sidecar.write_text(json.dumps(info, indent=2))
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=BUILDERS)
    parser.add_argument("--count", type=int)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    print(json.dumps(build(args.shape, args.count, force=args.force)))


if __name__ == "__main__":
    main()
