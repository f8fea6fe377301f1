"""A lovia writer in its own process: ``SQLiteSession(path, wal=True).append`` in a loop.

``python benchmarks/writer.py DB SESSION_ID COUNT INTERVAL`` appends COUNT
segments (built with lovia's entry classes, ~8 KB like the generated ones),
one every INTERVAL seconds, and prints each append's latency as JSON.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import ROW_MARK, _segment_entries  # noqa: E402


def _rewrite(entries: list, number: int) -> list:
    """The same entries with the row mark replaced, as lovia objects."""
    from lovia.transcript import entry_from_dict, entry_to_dict

    text = json.dumps([entry_to_dict(e) for e in entries], ensure_ascii=False)
    return [
        entry_from_dict(d) for d in json.loads(text.replace(ROW_MARK, f"#w{number}"))
    ]


async def write(path: str, session_id: str, count: int, interval: float) -> list[float]:
    from lovia import SQLiteSession

    rng = random.Random(11)
    pool = [_rewrite(_segment_entries(rng, False), n) for n in range(20)]
    session = SQLiteSession(path, wal=True)
    latencies = []
    for number in range(count):
        started = time.perf_counter()
        await session.append(
            session_id,
            pool[number % len(pool)],
            meta={"timing": {"finished_at": time.time()}},
        )
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(interval)
    return latencies


def main() -> None:
    path, session_id, count, interval = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        float(sys.argv[4]),
    )
    print("READY", flush=True)
    latencies = asyncio.run(write(path, session_id, count, interval))
    print(json.dumps(latencies), flush=True)


if __name__ == "__main__":
    main()
