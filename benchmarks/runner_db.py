"""A lovia file written another way than ``generate.py``: lovia's Runner, then bulk copies.

``python benchmarks/runner_db.py [--segments N] [--force]`` writes
``benchmarks/cache/runner-<N>.db`` (rollback journal, as lovia's stores make
a file by default) for ``run_all.py --db``, which finds its giant session
and a rare word itself.

``generate.py`` writes rows shaped as lovia writes them. Here lovia writes
them: ``SEED_SESSIONS`` sessions of 1-12 runs each through ``Runner.run`` on
scripted models (user turns in words from a random vocabulary, tool calls
whose outputs run from a line to 40 KB, answers), every run checkpointed by
``SQLiteCheckpointer`` and its completed checkpoint kept; one run in 25 stops
at its turn limit (a failed head, its last calls unanswered). Then the file
grows by ``INSERT ... SELECT`` copies of those rows under new session and run
ids, in whole rounds of the seed, until it holds ``--segments`` segments; one
checkpoint in 20 is copied with its run; and one session gets 5,000 copies of
a seeded session's runs (the giant).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sqlite3
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED_SESSIONS = 300
GIANT_RUNS = 5_000
SEED = 35


def _words(rng: random.Random, count: int) -> str:
    syllables = ("ka", "lo", "vi", "ra", "ne", "tu", "mo", "si", "de", "pa", "qu", "zo")
    return " ".join(
        "".join(rng.choice(syllables) for _ in range(rng.randint(3, 6)))
        for _ in range(count)
    )


async def seed(path: Path, rng: random.Random) -> None:
    """Sessions written by lovia's Runner, each run checkpointed."""
    from lovia import (
        Agent,
        CheckpointOptions,
        MaxTurnsExceeded,
        Runner,
        SQLiteCheckpointer,
        SQLiteSession,
        tool,
    )
    from lovia.testing import ScriptedProvider, call, text

    @tool
    def fetch(topic: str, size: int) -> str:
        """A document of about ``size`` bytes on ``topic``."""
        line = f"{topic}: " + _words(random.Random(topic), 12) + "\n"
        return (line * (size // len(line) + 1))[:size]

    session = SQLiteSession(path)
    checkpointer = SQLiteCheckpointer(path)
    for number in range(SEED_SESSIONS):
        session_id = f"seed-{number:04d}-{_words(rng, 1)}"
        for run in range(rng.randint(1, 12)):
            script = []
            for _ in range(rng.randint(0, 3)):
                size = rng.choice((80, 400, 2_000, 8_000, 40_000))
                topic = _words(rng, 1)
                script.append(call("fetch", {"topic": topic, "size": size}))
            script.append(text(_words(rng, rng.randint(5, 60))))
            failing = rng.random() < 0.04 and len(script) > 1
            agent = Agent(
                name="researcher",
                instructions="Answer from the documents.",
                model=ScriptedProvider(script),
                tools=[fetch],
            )
            with contextlib.suppress(MaxTurnsExceeded):  # the failed run, on purpose
                await Runner.run(
                    agent,
                    _words(rng, rng.randint(3, 30)) + "?",
                    session=session,
                    session_id=session_id,
                    checkpoint=CheckpointOptions(checkpointer, f"{session_id}-r{run}"),
                    max_turns=1 if failing else 10,
                )


def grow(path: Path, segments: int) -> None:
    """Copies of the seeded rows under new ids, then the giant session."""
    conn = sqlite3.connect(path)
    seeded = conn.execute("SELECT MAX(id) FROM session_runs").fetchone()[0]
    sessions = [
        row[0]
        for row in conn.execute(
            "SELECT session_id FROM session_runs GROUP BY session_id ORDER BY COUNT(*) DESC"
        )
    ]
    copy = 0
    while conn.execute("SELECT MAX(id) FROM session_runs").fetchone()[0] < segments:
        copy += 1
        with conn:
            conn.execute(
                "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, "
                "created_at) SELECT session_id || '~' || ?1, run_id || '~' || ?1, "
                "entries_json, meta_json, created_at + ?1 * 60 FROM session_runs "
                "WHERE id <= ?2 ORDER BY id",
                (copy, seeded),
            )
            if copy % 20 == 0:
                for table, columns in (
                    ("snapshot_heads", "head_json, updated_at + ?1 * 60"),
                    ("snapshot_turns", "seq, entries_json"),
                ):
                    conn.execute(
                        f"INSERT INTO {table} SELECT run_id || '~' || ?1, {columns} "
                        f"FROM {table} WHERE run_id NOT LIKE '%~%'",
                        (copy,),
                    )
    donor = sessions[0]
    rows = conn.execute(
        "SELECT run_id, entries_json, meta_json FROM session_runs "
        "WHERE session_id = ? ORDER BY id",
        (donor,),
    ).fetchall()
    with conn:
        conn.executemany(
            "INSERT INTO session_runs (session_id, run_id, entries_json, meta_json, "
            "created_at) VALUES ('giant', ?, ?, ?, ?)",
            (
                (
                    f"{rows[n % len(rows)][0]}~g{n}",
                    *rows[n % len(rows)][1:],
                    time.time(),
                )
                for n in range(GIANT_RUNS)
            ),
        )
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    path = HERE / "cache" / f"runner-{args.segments}.db"
    if path.exists() and not args.force:
        print(f"{path}: exists (--force writes it again)")
        return
    path.unlink(missing_ok=True)
    started = time.perf_counter()
    asyncio.run(seed(path, random.Random(SEED)))
    seeded = time.perf_counter() - started
    grow(path, args.segments)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        counts = [
            conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("session_runs", "snapshot_heads")
        ]
    print(
        f"{path}: {counts[0]:,} segments, {counts[1]:,} checkpoints, "
        f"{path.stat().st_size / 1e9:.2f} GB; lovia's Runner {seeded:.0f} s, "
        f"all {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
