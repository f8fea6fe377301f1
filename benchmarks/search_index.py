"""The search index (issue 17) on a generated database, against floors taken
in the same run.

Measures, on a copy of ``generate.py``'s file (the writer appends to it):

- build time of the whole index beside a raw scan of ``entries_json`` (one
  ``instr`` pass over every segment and batch, warm cache): budget 15x;
- index size beside the database file: budget 25%;
- search time (``FileSearch.search``: the lookup, grouping and 50 snippets cut
  from the lovia file) p95 over 50 queries: rare words, common words,
  phrases, prefixes and fields: budget 100 ms;
- a lovia writer's append p99 (``SQLiteSession(wal=True).append`` of ~8 KB
  segments every 50 ms, in its own process) during the build beside the same
  writer alone: budget alone + 50 ms;
- index lag at 20 runs/s: commit to indexed, p99, following commits through
  ``PRAGMA data_version`` as the app does: budget 1 s.

Run: ``.venv/bin/python benchmarks/search_index.py --size 10k|100k|1m``
(results in ``results/search-<size>.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import NEEDLE, WORDS, generate  # noqa: E402
from machine import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INTERVAL = 0.05
WRITER_SESSION = "bench-writer"


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def writer(path: str, stop_file: str) -> None:
    """Append ~8 KB segments every INTERVAL until ``stop_file`` exists; print
    each append's (commit time, latency) as JSON."""
    import asyncio

    from lovia import SQLiteSession
    from writer import _rewrite, _segment_entries

    async def loop() -> list[tuple[float, float]]:
        rng = random.Random(11)
        pool = [_rewrite(_segment_entries(rng, False), n) for n in range(20)]
        session = SQLiteSession(path, wal=True)
        done: list[tuple[float, float]] = []
        while not Path(stop_file).exists():
            started = time.perf_counter()
            await session.append(WRITER_SESSION, pool[len(done) % len(pool)])
            done.append((time.time(), time.perf_counter() - started))
            await asyncio.sleep(INTERVAL)
        return done

    print("READY", flush=True)
    print(json.dumps(asyncio.run(loop())), flush=True)


class Writer:
    """The writer above in a child process."""

    def __init__(self, path: Path) -> None:
        self.stop = Path(tempfile.mktemp(prefix="writer-stop-"))
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--writer", str(path), str(self.stop)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout.readline().strip() == "READY"

    def finish(self) -> list[tuple[float, float]]:
        self.stop.touch()
        out, _ = self.process.communicate(timeout=60)
        self.stop.unlink()
        return [tuple(pair) for pair in json.loads(out)]


def raw_scan(path: Path) -> tuple[float, float]:
    """One instr() pass over every stored entry list (warm: run twice):
    (wall, CPU) seconds."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    took = (0.0, 0.0)
    for _ in range(2):
        started, cpu = time.perf_counter(), time.process_time()
        for table in ("session_runs", "snapshot_turns"):
            conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE instr(entries_json, ?) > 0",
                ("no-such-word-anywhere",),
            ).fetchone()
        took = (time.perf_counter() - started, time.process_time() - cpu)
    conn.close()
    return took


def queries(rng: random.Random) -> list[str]:
    """50 queries: rare, common, phrases, prefixes, fields."""
    common = rng.sample(WORDS, 12)
    phrases = [
        f'"{a} {b}"'
        for a, b in zip(rng.sample(WORDS, 10), rng.sample(WORDS, 10), strict=True)
    ]
    prefixes = [w[:3] + "*" for w in rng.sample(WORDS, 10)]
    rare = [NEEDLE, "#w3", "größe", "東京", "zebra*", "quartz", "naïve", "données"]
    fields = ["error:", "error:timeout", "tool:search_docs", "tool:lookup_order",
              "tool:search* nightly", "error: agent", "café latency", "order region"]  # fmt: skip
    return (common + phrases + prefixes + rare + fields)[:50]


def measure_queries(search, rng: random.Random) -> dict:
    from lovia_tui.core.search.query import parse_query

    times, found = [], {}
    for text in queries(rng):
        started = time.perf_counter()
        result = search.search(parse_query(text), 50)
        times.append(time.perf_counter() - started)
        found[text] = {"ms": round(times[-1] * 1e3, 1), "sessions": len(result.groups)}
    return {"p50_ms": _percentile(times, 0.5) * 1e3, "p95_ms": _percentile(times, 0.95) * 1e3,
            "max_ms": max(times) * 1e3, "groups": found}  # fmt: skip


def measure_lag(search, path: Path, seconds: float) -> dict:
    """Follow a 20 runs/s writer for ``seconds``: commit -> indexed, per row."""
    search.build()  # rows the last writer added after the build ended
    start_high = search.index.state().seg_high
    marks: list[tuple[float, int]] = []
    version = None
    bench = Writer(path)
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        current = search.reader.execute("PRAGMA data_version").fetchone()[0]
        if current != version:
            version = current
            search.build()
            marks.append((time.time(), search.index.state().seg_high))
        time.sleep(0.01)  # the follower's poll
    appended = bench.finish()
    search.build()
    marks.append((time.time(), search.index.state().seg_high))
    lags = []
    for number, (committed, _) in enumerate(appended, start=1):
        row = start_high + number  # AUTOINCREMENT: the writer's rows, in order
        indexed = next(when for when, high in marks if high >= row)
        lags.append(max(0.0, indexed - committed))
    return {
        "rows": len(lags),
        "p50_s": _percentile(lags, 0.5),
        "p99_s": _percentile(lags, 0.99),
    }


def run(size: str) -> dict:
    info = generate(size)
    work = Path(tempfile.mkdtemp(prefix="search-bench-", dir=Path(info.path).parent))
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    from lovia_tui.core.search.file_search import FileSearch

    try:
        path = work / "lovia.db"
        shutil.copy(info.path, path)
        scan = raw_scan(path)
        alone = [lat for _, lat in _writer_during(path, lambda: time.sleep(10))]
        search = FileSearch(path)
        built: dict = {}

        def build() -> None:
            started, cpu = time.perf_counter(), time.process_time()
            built["progress"] = search.build()
            built["seconds"] = time.perf_counter() - started
            built["cpu"] = time.process_time() - cpu

        during = [lat for _, lat in _writer_during(path, build)]
        search.close()  # checkpoints the index's WAL: its size on disk
        search = FileSearch(path)
        index_bytes = search.index.size()
        result = {
            "size": size,
            "machine": describe(path),
            "database_bytes": path.stat().st_size,
            "segments": info.segments,
            "build_s": built["seconds"],
            "raw_scan_s": scan[0],
            "build_over_scan": built["seconds"] / scan[0],
            "build_cpu_s": built["cpu"],
            "raw_scan_cpu_s": scan[1],
            "build_over_scan_cpu": built["cpu"] / scan[1],
            "load_average": os.getloadavg(),
            "peak_rss_mb_after_build": resource.getrusage(
                resource.RUSAGE_SELF
            ).ru_maxrss
            / 1024,
            "index_bytes": index_bytes,
            "index_share": index_bytes / path.stat().st_size,
            "writer_p99_alone_ms": _percentile(alone, 0.99) * 1e3,
            "writer_p99_during_build_ms": _percentile(during, 0.99) * 1e3,
            "queries": measure_queries(search, random.Random(17)),
            "lag_20_runs_per_s": measure_lag(search, path, 15),
        }
        search.close()
        return result
    finally:
        shutil.rmtree(work)


def _writer_during(path: Path, body) -> list[tuple[float, float]]:
    bench = Writer(path)
    try:
        body()
    finally:
        appended = bench.finish()
    return appended


def measures(result: dict) -> list:
    """The printed lines: value, floor, ratio and budget of each measure."""
    from run_all import Measure

    build, scan = result["build_s"], result["raw_scan_s"]
    alone = result["writer_p99_alone_ms"]
    during = result["writer_p99_during_build_ms"]
    p95 = result["queries"]["p95_ms"]
    lag = result["lag_20_runs_per_s"]["p99_s"] * 1000
    mb = result["index_bytes"] / 1e6
    return [
        Measure("S1", "index build (floor: raw scan)", "s", round(build, 1),
                round(scan, 2), "≤15× floor", build <= 15 * scan),
        Measure("S2", "index size (floor: the file)", "MB", round(mb),
                round(result["database_bytes"] / 1e6), "≤25% of floor",
                result["index_share"] <= 0.25),
        Measure("S3", "indexed search p95", "ms", round(p95, 1), None, "≤100 ms",
                p95 <= 100),
        Measure("S4", "writer append p99 during the build", "ms", round(during, 1),
                round(alone, 1), "≤ floor + 50 ms", during <= alone + 50),
        Measure("S5", "index lag p99 at 20 runs/s", "ms", round(lag), None,
                "≤1000 ms", lag <= 1000),
    ]  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["--writer"]:
        writer(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["10k", "100k", "1m"], default="10k")
    args = parser.parse_args()
    result = run(args.size)
    out = ROOT / "benchmarks" / "results" / f"search-{args.size}.json"
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"load: {os.getloadavg()}")
    for measure in measures(result):
        print(measure.line())
    q, lag = result["queries"], result["lag_20_runs_per_s"]
    print(
        f"{args.size}: build {result['build_s']:.1f} s / raw scan {result['raw_scan_s']:.2f} s "
        f"= {result['build_over_scan']:.1f}x (budget 15x; CPU {result['build_cpu_s']:.1f} / "
        f"{result['raw_scan_cpu_s']:.2f} s = {result['build_over_scan_cpu']:.1f}x); index {result['index_bytes'] / 1e6:.0f} MB "
        f"= {result['index_share']:.1%} of {result['database_bytes'] / 1e6:.0f} MB (budget 25%); "
        f"search p95 {q['p95_ms']:.1f} ms (budget 100); writer p99 {result['writer_p99_during_build_ms']:.1f} "
        f"ms during the build / {result['writer_p99_alone_ms']:.1f} ms alone (budget +50); "
        f"lag p99 {lag['p99_s'] * 1e3:.0f} ms at 20 runs/s (budget 1000); "
        f"peak RSS {result['peak_rss_mb_after_build']:.0f} MB; "
        f"load average {result['load_average'][0]:.1f}"
    )


if __name__ == "__main__":
    main()
