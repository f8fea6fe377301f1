"""Build lovia databases of 10k / 100k / 1M segments for the benchmarks.

The schema is created by lovia itself (one operation of ``SQLiteSession`` and
``SQLiteCheckpointer`` on the file); the rows are then bulk-inserted, each
``entries_json`` serialised exactly as lovia does (``entry_to_dict`` +
``json.dumps(ensure_ascii=False)``) from a pool of entry lists built with
lovia's own entry classes. Runs per session are skewed (median about 5, a
few sessions with thousands, one with exactly 5,000), tool outputs vary from
a line to ~100 KB (about 8 KB per segment on average), ``created_at`` grows
with ``id``, and checkpoints exist in every status, half of the unfinished
ones ending on a dangling tool call.

A built file is cached under ``$LOVIA_TUI_BENCH_DIR`` (default
``benchmarks/cache/``) with a ``.json`` sidecar describing it, and reused.

Two profiles (``--profile``): ``skewed`` (the default, above) and
``uniform``, a second shape so the suite exercises more than one: every
segment ~11 entries and ~7 KB of ``entries_json`` (four tool calls of
0.95–1.3 KB outputs, one reasoning block), runs per session log-normal with
median 5 and few over 20 (so many more sessions), one of 5,000 runs,
checkpoints for 5 % of the segments in the same file, and the file left in
rollback-journal mode (``DELETE``), as a store opened without ``wal=True``.

Run: ``.venv/bin/python benchmarks/generate.py [--size 10k|100k|1m]
[--profile skewed|uniform] [--force]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
PROFILES = ("skewed", "uniform")
UNIFORM_CALLS = 4
"""Tool calls in a uniform segment: input, reasoning, 4 calls, 4 results, answer = 11."""
UNIFORM_CHECKPOINTS = 0.05
"""Checkpoints per segment in the uniform profile (50,000 at 1M)."""
GIANT_RUNS = 5_000
NEEDLE = "zebra-quartz-7"
"""A word stored in about 1 segment in 400: what the search measure looks for."""
ROW_MARK = "@@ROW@@"
POOL_SIZE = 400
SPAN_SECONDS = 180 * 86_400.0
INSERT_BATCH = 5_000
SEED = 7

WORDS = [
    "agent",
    "export",
    "nightly",
    "report",
    "invoice",
    "customer",
    "order",
    "shipment",
    "latency",
    "cache",
    "retry",
    "budget",
    "tokens",
    "model",
    "context",
    "window",
    "summary",
    "tool",
    "result",
    "database",
    "index",
    "query",
    "session",
    "checkpoint",
    "resume",
    "rewind",
    "trim",
    "deploy",
    "region",
    "server",
    "queue",
    "worker",
    "timeout",
    "error",
    "warning",
    "metric",
    "dashboard",
    "schedule",
    "backup",
    "restore",
    "migrate",
    "schema",
    "café",
    "naïve",
    "東京",
    "京都",
    "données",
    "größe",
    "☕",
    "🚀",
]


@dataclass(frozen=True)
class BenchDb:
    """What the benchmarks need to know about a generated file."""

    path: str
    size: str
    segments: int
    sessions: int
    giant_session: str
    giant_runs: int
    checkpoints: int
    live_runs: list[str]
    needle: str
    needle_segments: int
    bytes: int
    generated_in_s: float
    profile: str = "skewed"


def cache_dir() -> Path:
    return Path(os.environ.get("LOVIA_TUI_BENCH_DIR", ROOT / "benchmarks" / "cache"))


def db_path(size: str, profile: str = "skewed") -> Path:
    name = size if profile == "skewed" else f"{profile}-{size}"
    return cache_dir() / f"lovia-{name}.db"


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _paragraphs(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    total = 0
    while total < chars:
        line = _sentence(rng, rng.randint(6, 18))
        if rng.random() < 0.15:
            line = f"{rng.randint(1, 9999):>5} | {line}"
        out.append(line)
        total += len(line) + 1
    return "\n".join(out)[:chars]


def _output_size(rng: random.Random) -> int:
    """Tool output length: mostly small, a long tail up to ~100 KB."""
    return min(100_000, max(20, int(rng.lognormvariate(math.log(1400), 1.35))))


def _segment_entries(
    rng: random.Random, with_needle: bool, uniform: bool = False
) -> list:
    """One finished run's entries, as lovia's loop would store them (``uniform``:
    always four calls of 0.95–1.3 KB outputs after one reasoning block)."""
    from lovia.transcript import (
        AssistantTextEntry,
        ImagePart,
        InputEntry,
        ReasoningEntry,
        TextPart,
        ToolCallEntry,
        ToolResultEntry,
    )

    question = f"{ROW_MARK} {_sentence(rng, rng.randint(8, 30))}"
    if rng.random() < 0.1:
        content: object = [
            TextPart(question),
            ImagePart(
                url=f"https://example.com/{rng.randint(1, 10**6)}.png", detail="auto"
            ),
        ]
    else:
        content = question
    entries: list = [InputEntry("user", content)]
    calls = UNIFORM_CALLS if uniform else min(12, int(rng.expovariate(1 / 2.2)))
    for turn in range(calls):
        if turn == 0 if uniform else rng.random() < 0.4:
            entries.append(
                ReasoningEntry(
                    _paragraphs(rng, rng.randint(80, 600)),
                    provider="anthropic",
                    metadata={"signature": f"sig{rng.getrandbits(64):016x}"},
                )
            )
        call_id = f"call_{rng.getrandbits(48):012x}"
        name = rng.choice(["lookup", "search_docs", "run_sql", "read_file", "http_get"])
        arguments = json.dumps(
            {"q": _sentence(rng, rng.randint(2, 8)), "limit": rng.randint(1, 50)}
        )
        entries.append(ToolCallEntry(call_id, name, arguments))
        size = rng.randint(950, 1_300) if uniform else _output_size(rng)
        output = _paragraphs(rng, size)
        if with_needle and turn == 0:
            output = (
                f"{output[: len(output) // 2]} {NEEDLE} {output[len(output) // 2 :]}"
            )
        if rng.random() < 0.05:
            output = (
                output[:400]
                + f"\n[... {rng.randint(1000, 90000):,} chars trimmed from stored "
                f'history; recall_tool_result("{call_id}") returns the full output only if it '
                "was archived to a result store]"
            )
        entries.append(
            ToolResultEntry(
                call_id,
                output,
                raw={"rows": rng.randint(0, 99)},
                is_error=rng.random() < 0.06,
            )
        )
    entries.append(AssistantTextEntry(_paragraphs(rng, rng.randint(80, 1500))))
    return entries


def serialise(entries: list) -> str:
    """Exactly how lovia's SQLiteSession stores a run's entries."""
    from lovia.transcript import entry_to_dict

    return json.dumps([entry_to_dict(e) for e in entries], ensure_ascii=False)


def _pool(rng: random.Random, uniform: bool) -> tuple[list[tuple[str, str]], set[int]]:
    """Serialised segments split at the row mark, and which ones hold the needle."""
    needles = {POOL_SIZE // 2}
    pool = []
    for index in range(POOL_SIZE):
        text = serialise(_segment_entries(rng, index in needles, uniform))
        head, tail = text.split(ROW_MARK, 1)
        pool.append((head, tail))
    return pool, needles


def _session_sizes(rng: random.Random, total: int, uniform: bool) -> list[int]:
    """Runs per session: one giant, a few in the thousands (not ``uniform``), the
    rest lognormal (median 5; ``uniform``: narrower, at most 60)."""
    sizes = [GIANT_RUNS]
    if uniform:
        remaining = total - GIANT_RUNS
        while remaining > 0:
            runs = min(
                remaining, 60, max(1, round(rng.lognormvariate(math.log(5), 0.6)))
            )
            sizes.append(runs)
            remaining -= runs
        return sizes
    if total >= 100_000:
        sizes += [3_000, 2_000, 1_200]
    if total >= 1_000_000:
        sizes += [4_000, 2_500, 1_800, 1_500, 1_000, 1_000]
    remaining = total - sum(sizes)
    while remaining > 0:
        runs = min(remaining, 400, max(1, round(rng.lognormvariate(math.log(5), 0.9))))
        sizes.append(runs)
        remaining -= runs
    return sizes


def _timeline(rng: random.Random, sizes: list[int]) -> list[int]:
    """Session index of each segment in id order: sessions overlap in time."""
    stamps: list[tuple[float, int]] = []
    for session, runs in enumerate(sizes):
        if runs >= 1_000:
            start, span = rng.uniform(0.0, 0.05), rng.uniform(0.93, 0.95)
        else:
            start = rng.random()
            span = min(1.0 - start, rng.uniform(0.0005, 0.05) * math.sqrt(runs))
        stamps.extend((start + span * rng.random(), session) for _ in range(runs))
    stamps.sort()
    return [session for _, session in stamps]


def _session_id(rng: random.Random, index: int) -> str:
    if index == 0:
        return f"giant-{GIANT_RUNS}-runs"
    return f"thread-{rng.getrandbits(64):016x}"


def _create_schema(path: Path) -> None:
    """Let lovia create its own tables: one operation of each store."""
    from lovia import SQLiteCheckpointer, SQLiteSession

    async def touch() -> None:
        await SQLiteSession(path).clear("x")
        await SQLiteCheckpointer(path).delete("x")

    asyncio.run(touch())


def _meta(rng: random.Random, created: float) -> str:
    started = created - rng.uniform(0.5, 120.0)
    meta: dict = {
        "context_state": {"context": {"window": rng.randint(4, 60), "offloaded": {}}},
        "timing": {"started_at": started, "finished_at": created},
    }
    if rng.random() < 0.02:
        meta["context_notice"] = "Summary of earlier turns: " + _sentence(rng, 20)
    return json.dumps(meta, ensure_ascii=False)


def _insert_segments(
    conn: sqlite3.Connection, rng: random.Random, total: int, uniform: bool
) -> tuple[int, int, list[str], list[str]]:
    pool, needles = _pool(rng, uniform)
    sizes = _session_sizes(rng, total, uniform)
    order = _timeline(rng, sizes)
    ids = [_session_id(rng, index) for index in range(len(sizes))]
    start = time.time() - SPAN_SECONDS - 86_400
    step = SPAN_SECONDS / total
    needle_rows = 0
    run_ids: list[str] = []
    batch: list[tuple] = []
    for number, session in enumerate(order, start=1):
        choice = rng.randrange(POOL_SIZE)
        head, tail = pool[choice]
        needle_rows += choice in needles
        created = start + number * step
        run_id = f"{rng.getrandbits(128):032x}"
        run_ids.append(run_id)
        batch.append(
            (
                ids[session],
                run_id,
                f"{head}#{number}{tail}",
                _meta(rng, created),
                created,
            )
        )
        if len(batch) == INSERT_BATCH:
            _flush(conn, batch)
            print(
                f"\r  {number:,}/{total:,} segments",
                end="",
                file=sys.stderr,
                flush=True,
            )
    _flush(conn, batch)
    print(file=sys.stderr)
    return len(sizes), needle_rows, ids, run_ids


def _flush(conn: sqlite3.Connection, batch: list[tuple]) -> None:
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        batch,
    )
    conn.execute("COMMIT")
    batch.clear()


STATUS_MIX = [
    ("completed", 0.35),
    ("interrupted", 0.2),
    ("failed", 0.15),
    ("stale", 0.2),
    ("live", 0.1),
]


def _insert_checkpoints(
    conn: sqlite3.Connection, rng: random.Random, count: int, run_ids: list[str]
) -> list[str]:
    """Heads and turn batches in every status; half the unfinished end on a call."""
    from lovia import RunHead
    from lovia.transcript import Usage

    now = time.time()
    live: list[str] = []
    heads, turns = [], []
    for number in range(count):
        kind = STATUS_MIX[number % len(STATUS_MIX)][0]
        status = {"live": "running", "stale": "running"}.get(kind, kind)
        if kind == "completed":
            run_id = rng.choice(run_ids[-len(run_ids) // 10 :])
        else:
            run_id = f"{kind}-{rng.getrandbits(64):016x}"
        if kind == "live":
            live.append(run_id)
        updated = (
            now - rng.uniform(1, 30)
            if kind == "live"
            else now - rng.uniform(3_600, 30 * 86_400)
        )
        entries = _segment_entries(rng, False)
        dangling = status != "completed" and number % 2 == 0
        if dangling:
            cut = max(
                (i for i, e in enumerate(entries) if e.type == "tool_call"),
                default=None,
            )
            entries = entries[: cut + 1] if cut is not None else entries
        batches: list[list] = [entries[:1]]
        for entry in entries[1:]:
            if (
                entry.type in ("tool_call", "reasoning")
                and batches[-1][-1].type != "tool_call"
            ):
                batches[-1].append(entry)
            else:
                batches.append([entry])
        for seq, chunk in enumerate(batches):
            turns.append(
                (run_id, seq, serialise(chunk).replace(ROW_MARK, f"#cp{number}"))
            )
        error = None
        if status == "interrupted":
            error = {"type": "RunCancelled", "message": "run cancelled by the user"}
        elif status == "failed":
            error = {
                "type": "RuntimeError",
                "message": "tool crashed: connection reset",
            }
        head = RunHead(
            agent_name=rng.choice(["assistant", "triage", "researcher"]),
            usage=Usage(rng.randint(1_000, 90_000), rng.randint(100, 9_000)),
            turns=len(batches) // 2 + 1,
            status=status,
            output="Done." if status == "completed" else None,
            error=error,
            last_input_tokens=rng.randint(1_000, 90_000),
            updated_at=updated,
            started_at=updated - rng.uniform(5, 600),
        )
        heads.append((run_id, head.to_json(), updated))
    write_checkpoint_rows(conn, heads, turns)
    return live


def write_checkpoint_rows(conn: sqlite3.Connection, heads: list, turns: list) -> None:
    """Heads and turn batches in one transaction, with lovia's own statements."""
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT OR REPLACE INTO snapshot_heads (run_id, head_json, updated_at) VALUES (?, ?, ?)",
        heads,
    )
    conn.executemany(
        "INSERT OR REPLACE INTO snapshot_turns (run_id, seq, entries_json) VALUES (?, ?, ?)",
        turns,
    )
    conn.execute("COMMIT")


def refresh_live_runs(info: BenchDb) -> None:
    """Make the "running fresh" heads fresh again, as their agent saving would,
    and put a uniform file back in rollback-journal mode (the app switched it
    to WAL when it last opened it)."""
    now = time.time()
    with sqlite3.connect(info.path, isolation_level=None, timeout=10) as conn:
        conn.executemany(
            "UPDATE snapshot_heads SET updated_at = ?1, head_json = json_set(head_json, '$.updated_at', ?1) "
            "WHERE run_id = ?2",
            [(now, run_id) for run_id in info.live_runs],
        )
        if info.profile == "uniform":
            conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()


def generate(size: str, *, profile: str = "skewed", force: bool = False) -> BenchDb:
    """The cached database of ``size`` segments in ``profile``, built first if needed."""
    uniform = profile == "uniform"
    path = db_path(size, profile)
    sidecar = path.with_suffix(".json")
    if path.exists() and sidecar.exists() and not force:
        return BenchDb(**json.loads(sidecar.read_text()))
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, sidecar, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    total = SIZES[size]
    started = time.perf_counter()
    _create_schema(path)
    rng = random.Random(SEED)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-512000")
    sessions, needle_rows, ids, run_ids = _insert_segments(conn, rng, total, uniform)
    checkpoints = int(total * UNIFORM_CHECKPOINTS) if uniform else max(25, total // 500)
    live = _insert_checkpoints(conn, rng, checkpoints, run_ids)
    # Completed checkpoints may share a run id: lovia's INSERT OR REPLACE keeps one.
    (checkpoints,) = conn.execute("SELECT COUNT(*) FROM snapshot_heads").fetchone()
    conn.execute(f"PRAGMA journal_mode={'DELETE' if uniform else 'WAL'}")
    conn.close()
    info = BenchDb(
        path=str(path),
        size=size,
        segments=total,
        sessions=sessions,
        giant_session=ids[0],
        giant_runs=GIANT_RUNS,
        checkpoints=checkpoints,
        live_runs=live,
        needle=NEEDLE,
        needle_segments=needle_rows,
        bytes=path.stat().st_size,
        generated_in_s=round(time.perf_counter() - started, 1),
        profile=profile,
    )
    sidecar.write_text(json.dumps(asdict(info), indent=2))
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="10k")
    parser.add_argument("--profile", choices=PROFILES, default="skewed")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = parser.parse_args()
    cached = db_path(args.size, args.profile).exists() and not args.force
    info = generate(args.size, profile=args.profile, force=args.force)
    how = "cached" if cached else f"generated in {info.generated_in_s:.1f} s"
    print(
        f"{info.path}: {info.segments:,} segments, {info.sessions:,} sessions, "
        f"{info.bytes / 1e9:.2f} GB, {how}"
    )


if __name__ == "__main__":
    main()
