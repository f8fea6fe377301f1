"""Live tail: how soon a commit reaches the UI, and what watching costs when idle.

A real lovia agent (``tests/support/agents/slow_writer.py``) checkpoints into a WAL
database from a child process and prints the wall time right after each
commit. This process follows the run as the UI's worker does
(``live_changes(CommitWatch, Tail)``) and notes when each stored batch (seq)
arrives. Beside it, the FLOOR: a second child polling ``PRAGMA
data_version`` every 5 ms on its own connection, watching the same commits.
Then both sit idle for a few seconds and their CPU time is compared. The
whole thing runs twice: file notifications ("watching"), then the polling
fallback.

Run: ``.venv/bin/python benchmarks/live_tail.py`` (about 30 s). Results are
printed and written to ``benchmarks/results/live_tail.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import watchfiles

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.agents.slow_writer import SlowWriter  # noqa: E402

from lovia_tui.core.live import watch  # noqa: E402
from lovia_tui.core.live.tail import Tail, live_changes  # noqa: E402
from lovia_tui.core.store.database import open_database  # noqa: E402

STEPS = 60  # 2 commits with entries per step: 121 measured commits per mode
STEP_DELAY = 0.1
IDLE_SECONDS = 5.0
FLOOR_POLL = 0.005
TARGET_P99_MS = 250.0
RESULTS = ROOT / "benchmarks" / "results" / "live_tail.json"


def floor_main(db: str) -> None:
    """The floor child: detect commits by polling data_version every 5 ms.

    Prints READY, then answers each ``mark`` line on stdin with its CPU time;
    on ``quit`` prints ``{run_id: {seq: detected wall time}}`` as JSON.
    """
    conn = sqlite3.connect(db, isolation_level=None)
    detected: dict[str, dict[int, float]] = {}
    done = threading.Event()

    def commands() -> None:
        for line in sys.stdin:
            if line.strip() == "mark":
                print(f"CPU {time.process_time():.6f}", flush=True)
            else:
                break
        done.set()

    version = conn.execute("PRAGMA data_version").fetchone()[0]
    print("READY", flush=True)
    threading.Thread(target=commands, daemon=True).start()
    while not done.is_set():
        time.sleep(FLOOR_POLL)
        current = conn.execute("PRAGMA data_version").fetchone()[0]
        if current == version:
            continue
        version, now = current, time.time()
        rows = conn.execute(
            "SELECT run_id, MAX(seq) FROM snapshot_turns GROUP BY run_id"
        )
        for run_id, last in rows:
            seen = detected.setdefault(run_id, {})
            for seq in range(max(seen, default=-1) + 1, last + 1):
                seen[seq] = now
    print(json.dumps(detected), flush=True)


class Floor:
    """The floor child, seen from here."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, db: Path) -> Floor:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--floor", str(db),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        floor = cls(proc)
        assert (await floor._line()) == "READY"
        return floor

    async def _line(self) -> str:
        return (
            (await asyncio.wait_for(self.proc.stdout.readline(), 30)).decode().strip()
        )

    async def cpu(self) -> float:
        self.proc.stdin.write(b"mark\n")
        return float((await self._line()).split()[1])

    async def finish(self) -> dict[str, dict[int, float]]:
        self.proc.stdin.write(b"quit\n")
        detected = json.loads(await self._line())
        await self.proc.wait()
        return {
            run: {int(seq): t for seq, t in seqs.items()}
            for run, seqs in detected.items()
        }


def commit_times(lines: list[str]) -> dict[int, float]:
    """seq -> wall time of the commit that stored it, from the writer's SAVED lines."""
    times: dict[int, float] = {}
    for line in lines:
        if line.startswith("SAVED "):
            _, seq, _, wall = line.split()
            times.setdefault(int(seq), float(wall))
    return times


def latencies_ms(commits: dict[int, float], detected: dict[int, float]) -> list[float]:
    return sorted(
        (detected[seq] - at) * 1000 for seq, at in commits.items() if seq in detected
    )


def percentile(values: list[float], p: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[p - 1]
        if len(values) > 1
        else values[0]
    )


async def measure(
    path: Path, run_id: str, writer: SlowWriter, floor: Floor, force_polling: bool
) -> dict[str, object]:
    """One mode: follow the writer's run to its end, then sit idle."""
    db = await open_database(path)
    tail = await Tail.start(db)
    tail.follow_run(run_id)
    commits = watch.CommitWatch(db, force_polling=force_polling)
    detected: dict[int, float] = {}
    batches = 0

    async def follow() -> None:
        nonlocal batches
        async for changes in live_changes(commits, tail):
            now = time.time()
            batches += 1
            if changes.run_entries:
                for seq in range(
                    changes.run_entries.after_seq + 1, changes.run_entries.last_seq + 1
                ):
                    detected.setdefault(seq, now)

    follower = asyncio.create_task(follow())
    writer.go()
    await writer.expect("DONE", timeout=60)
    committed = commit_times(writer.lines)
    await writer.close()
    async with asyncio.timeout(5):
        while len(detected) < len(committed):
            await asyncio.sleep(0.05)  # bounded

    floor_cpu, cpu, wall = await floor.cpu(), time.process_time(), time.perf_counter()
    await asyncio.sleep(IDLE_SECONDS)  # the idle window being measured
    elapsed = time.perf_counter() - wall
    idle_cpu = (time.process_time() - cpu) / elapsed * 100
    floor_idle_cpu = (await floor.cpu() - floor_cpu) / elapsed * 100
    follower.cancel()
    await asyncio.wait([follower])
    await db.close()
    return {
        "mode": commits.mode,
        "run_id": run_id,
        "commits": committed,
        "detected": detected,
        "batches": batches,
        "idle_cpu_percent": idle_cpu,
        "floor_idle_cpu_percent": floor_idle_cpu,
    }


async def main() -> None:
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "live.db"
        # Both writers start now and wait for their turn: no lovia import later.
        writers = {
            mode: await SlowWriter.start(path, f"bench-{mode}", STEPS, STEP_DELAY)
            for mode in ("watching", "polling")
        }
        floor = await Floor.start(path)  # the tables exist once a writer is READY
        for mode, writer in writers.items():
            runs.append(
                await measure(path, f"bench-{mode}", writer, floor, mode == "polling")
            )
        floor_detected = await floor.finish()

    report: dict[str, object] = {
        "environment": {
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "watchfiles": watchfiles.__version__,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
        "settings": {
            "watch_step_ms": watch.WATCH_STEP_MS,
            "watch_debounce_ms": watch.WATCH_DEBOUNCE_MS,
            "min_interval_s": watch.MIN_INTERVAL,
            "poll_interval_s": watch.POLL_INTERVAL,
            "floor_poll_s": FLOOR_POLL,
            "steps": STEPS,
            "step_delay_s": STEP_DELAY,
            "idle_s": IDLE_SECONDS,
        },
        "modes": {},
    }
    rows = []
    for run in runs:
        ours = latencies_ms(run["commits"], run["detected"])
        floor_ms = latencies_ms(run["commits"], floor_detected.get(run["run_id"], {}))
        mode = run["mode"]
        metrics = {
            "latency_p50_ms": (percentile(ours, 50), percentile(floor_ms, 50)),
            "latency_p99_ms": (percentile(ours, 99), percentile(floor_ms, 99)),
            "latency_max_ms": (ours[-1], floor_ms[-1]),
            "idle_cpu_percent": (
                run["idle_cpu_percent"],
                run["floor_idle_cpu_percent"],
            ),
        }
        report["modes"][mode] = {
            "commits_measured": len(ours),
            "commits_missed": len(run["commits"]) - len(ours),
            "ui_batches": run["batches"],
            "p99_target_ms": TARGET_P99_MS,
            "p99_within_target": metrics["latency_p99_ms"][0] <= TARGET_P99_MS,
            **{
                name: {
                    "value": value,
                    "floor": floor_value,
                    "ratio": value / floor_value,
                }
                for name, (value, floor_value) in metrics.items()
            },
        }
        rows += [
            (mode, name, value, floor_value)
            for name, (value, floor_value) in metrics.items()
        ]

    print(f"{'mode':9} {'metric':17} {'value':>9} {'floor':>9} {'ratio':>7}")
    for mode, name, value, floor_value in rows:
        print(
            f"{mode:9} {name:17} {value:9.2f} {floor_value:9.2f} {value / floor_value:7.2f}"
        )
    for mode, result in report["modes"].items():
        verdict = "within" if result["p99_within_target"] else "OVER"
        print(
            f"{mode}: {result['commits_measured']} commits in {result['ui_batches']} UI batches, "
            f"p99 {verdict} the {TARGET_P99_MS:.0f} ms target"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--floor"]:
        floor_main(sys.argv[2])
    else:
        asyncio.run(main())
