"""Every benchmark of issue 7 against a floor measured in the same run.

``make bench`` (10k segments) or ``.venv/bin/python benchmarks/run_all.py
--size 100k|1m``. The database is generated (or reused from
``$LOVIA_TUI_BENCH_DIR``) first. Each measure prints its value, its floor,
their ratio and the budget; the results go to ``benchmarks/results/<size>.json``
with a description of the machine.

1. process start → first useful frame (sessions with their titles), against a
   trivial Textual app's first frame plus the raw SQL for the first page;
2. keypress → next frame in the sessions list and in the 5,000-run session;
3. opening the 5,000-run session, then loading older batches to its start;
4. content search against a raw sqlite3 scan, with progress and cancel;
5. peak RSS of the browsing app;
6. a lovia writer's append latency while the app browses and searches;
7. the longest statement on the read connection, by query.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import generate  # noqa: E402
import machine  # noqa: E402
import statements  # noqa: E402
import user_db  # noqa: E402
from probe import percentile  # noqa: E402

PYTHON = sys.executable
FIRST_FRAME_RUNS = 9
WRITER_APPENDS = 200
WRITER_INTERVAL = 0.02
KEYS = 100
FIRST_PAGE = 200
VISIBLE_ROWS = 44
"""Rows of the sessions list on the benchmark's 160×48 terminal."""


@dataclass
class Measure:
    """One line of the results table."""

    number: str
    name: str
    unit: str
    value: float
    floor: float | None
    budget: str
    ok: bool
    details: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return round(self.value / self.floor, 2) if self.floor else None

    def line(self) -> str:
        floor = (
            f"{self.floor:>9.1f} {self.unit:<3}"
            if self.floor is not None
            else f"{'-':>13}"
        )
        ratio = f"{self.ratio:>6.2f}x" if self.ratio is not None else f"{'-':>7}"
        verdict = "ok" if self.ok else "MISSED"
        return (
            f"{self.number:>3} {self.name:<44} {self.value:>9.1f} {self.unit:<3} floor {floor} "
            f"{ratio}  budget {self.budget:<22} {verdict}"
        )


def probe(mode: str, info: dict | None = None, timeout: float = 3600) -> dict:
    args = [PYTHON, str(HERE / "probe.py"), mode]
    if info is not None:
        args.append(json.dumps(info))
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"probe {mode} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def timed_probe(mode: str, info: dict | None = None) -> tuple[float, dict]:
    """Start a probe process; its reported wall times, relative to the spawn."""
    started = time.time()
    return started, probe(mode, info)


# ----- 1. first frame -----


def raw_first_page(path: str) -> tuple[float, float]:
    """The raw SQL behind the first screen, on a fresh connection: the newest-first
    walk to 200 sessions, then the visible rows' counts and titles."""
    started = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    seen: dict[str, None] = {}
    upper = None
    while len(seen) < FIRST_PAGE:
        rows = conn.execute(
            "SELECT id, session_id, created_at FROM session_runs "
            + ("WHERE id < ? " if upper else "")
            + "ORDER BY id DESC LIMIT 2000",
            (upper,) if upper else (),
        ).fetchall()
        if not rows:
            break
        for _, session_id, _ in rows:
            seen.setdefault(session_id)
        upper = rows[-1][0]
    walked = time.perf_counter()
    for session_id in list(seen)[:VISIBLE_ROWS]:
        conn.execute(
            "SELECT COUNT(*), MAX(id) FROM session_runs WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        conn.execute(
            "SELECT substr(entries_json, 1, 4000) FROM session_runs WHERE session_id = ? "
            "ORDER BY id LIMIT 1",
            (session_id,),
        ).fetchone()
    finished = time.perf_counter()
    conn.close()
    return walked - started, finished - started


def measure_first_frame(info: dict) -> list[Measure]:
    app_rows, app_titles, trivial, shape, sql_page, sql_titles = [], [], [], [], [], []
    for _ in range(FIRST_FRAME_RUNS):
        started, found = timed_probe("first-frame", info)
        app_rows.append(found["rows"] - started)
        app_titles.append(found["summaries"] - started)
        started, found = timed_probe("trivial")
        trivial.append(found["first_frame"] - started)
        started, found = timed_probe("shape")
        shape.append(found["first_frame"] - started)
        walk, page = raw_first_page(info["path"])
        sql_page.append(walk)
        sql_titles.append(page)
    med = statistics.median
    floor_rows = (med(trivial) + med(sql_page)) * 1000
    floor_titles = (med(trivial) + med(sql_titles)) * 1000
    details = {
        "runs": FIRST_FRAME_RUNS,
        "app_rows_ms": [round(v * 1000, 1) for v in app_rows],
        "app_titles_ms": [round(v * 1000, 1) for v in app_titles],
        "trivial_app_ms": [round(v * 1000, 1) for v in trivial],
        "shape_app_ms": [round(v * 1000, 1) for v in shape],
        "raw_sql_walk_ms": [round(v * 1000, 2) for v in sql_page],
        "raw_sql_walk_and_titles_ms": [round(v * 1000, 2) for v in sql_titles],
    }
    titles = med(app_titles) * 1000
    rows = med(app_rows) * 1000
    print(
        f"    reference: a Textual app of the inspector's shape, fixed text: "
        f"{med(shape) * 1000:.1f} ms, {med(shape) / med(trivial):.2f}x the trivial "
        f"app's {med(trivial) * 1000:.1f} ms",
        flush=True,
    )
    return [
        Measure(
            "1",
            "start → first frame, sessions with titles",
            "ms",
            round(titles, 1),
            round(floor_titles, 1),
            "≤1.25× floor",
            titles <= 1.25 * floor_titles,
            details,
        ),
        Measure(
            "1b",
            "start → first frame, session ids only",
            "ms",
            round(rows, 1),
            round(floor_rows, 1),
            "≤1.25× floor",
            rows <= 1.25 * floor_rows,
        ),
    ]


# ----- 2-5: one browsing app -----


def raw_newest_batch(path: str, session_id: str) -> float:
    """Floor for opening a session: its newest 30 segments read and parsed."""
    import orjson

    started = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for (text,) in conn.execute(
        "SELECT entries_json FROM session_runs WHERE session_id = ? ORDER BY id DESC LIMIT 30",
        (session_id,),
    ):
        orjson.loads(text)
    conn.close()
    return time.perf_counter() - started


def raw_scan(path: str, needle: str) -> tuple[float, int]:
    stored = json.dumps(needle, ensure_ascii=False)[1:-1]
    started = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    count = conn.execute(
        "SELECT COUNT(*) FROM session_runs WHERE instr(entries_json, ?)", (stored,)
    ).fetchone()[0]
    conn.close()
    return time.perf_counter() - started, count


def measure_browsing(info: dict, trivial: dict) -> list[Measure]:
    raw_scan(
        info["path"], info["needle"]
    )  # warm the page cache like the app's run will be
    scan_s, scan_count = raw_scan(info["path"], info["needle"])
    floor_open = statistics.median(
        raw_newest_batch(info["path"], info["giant_session"]) for _ in range(5)
    )
    found = probe("browse", {**info, "keys": KEYS})
    keys_floor = trivial["keys"]["p95_ms"]
    measures = []
    for label, key in (
        ("sessions list", "keys_sessions"),
        ("5,000-run transcript", "keys_transcript"),
        ("transcript, older batches loaded", "keys_transcript_loaded"),
    ):
        p95 = found[key]["p95_ms"]
        measures.append(
            Measure(
                "2",
                f"key → frame p95, {label}",
                "ms",
                p95,
                keys_floor,
                "p95 ≤16 ms",
                p95 <= 16,
                found[key],
            )
        )
    opened = found["open_giant"]["ms"]
    measures.append(
        Measure(
            "3",
            "open the 5,000-run session",
            "ms",
            opened,
            round(floor_open * 1000, 1),
            "≤100 ms",
            opened <= 100,
            found["open_giant"],
        )
    )
    older = found["older_to_start"]
    measures.append(
        Measure(
            "3b",
            f"older batch (up at the top) p95, {older['batches']} to the start",
            "ms",
            older["p95_ms"],
            round(floor_open * 1000, 1),
            "keeps working",
            older["segments_left"] == 0,
            older,
        )
    )
    search = found["search"]
    measures.append(
        Measure(
            "4",
            "content search over all segments",
            "s",
            search["s"],
            round(scan_s, 3),
            "≤1.5× floor",
            search["s"] <= 1.5 * scan_s,
            {**search, "raw_matching_segments": scan_count, **found["cancel"]},
        )
    )
    measures.append(
        Measure(
            "4c",
            "content search, first hit on screen",
            "s",
            search["first_hit_s"],
            round(scan_s, 3),
            "≤1 s",
            search["first_hit_s"] <= 1,
            search,
        )
    )
    measures.append(
        Measure(
            "4b",
            "search cancel → connection free",
            "ms",
            found["cancel"]["connection_free_ms"],
            None,
            "≤50 ms (one statement)",
            found["cancel"]["connection_free_ms"] <= 50,
            found["cancel"],
        )
    )
    rss = found["rss"]["peak_mb"]
    measures.append(
        Measure(
            "5",
            "peak RSS, browsed (+search, 20 older batches)",
            "MB",
            rss,
            trivial["rss"]["peak_mb"],
            "≤150 MB",
            rss <= 150,
            found["rss"],
        )
    )
    full = found["rss_full"]["peak_mb"]
    measures.append(
        Measure(
            "5b",
            "peak RSS after scrolling to the giant's start",
            "MB",
            full,
            trivial["rss"]["peak_mb"],
            "≤150 MB",
            full <= 150,
            found["rss_full"],
        )
    )
    measures.append(
        Measure(
            "-",
            "(app statements during browse)",
            "",
            0,
            None,
            "",
            True,
            found["statements"],
        )
    )
    return measures


# ----- 6. a writer beside the app -----


def run_writer(
    path: str, session_id: str, appends: int = WRITER_APPENDS
) -> list[float]:
    done = subprocess.run(
        [
            PYTHON,
            str(HERE / "writer.py"),
            path,
            session_id,
            str(appends),
            str(WRITER_INTERVAL),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"writer failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def clear_session(path: str, session_id: str) -> None:
    """Remove the writer's segments through lovia, so the cached file stays as built."""
    import asyncio

    from lovia import SQLiteSession

    asyncio.run(SQLiteSession(path, wal=True).clear(session_id))


def append_latencies(alone: list[float], beside: list[float]) -> dict:
    """A writer's append latencies alone and beside something, in ms."""
    return {
        "appends": len(beside),
        "alone_p50_ms": round(percentile(alone, 50) * 1000, 2),
        "alone_p99_ms": round(percentile(alone, 99) * 1000, 2),
        "beside_p50_ms": round(percentile(beside, 50) * 1000, 2),
        "beside_p99_ms": round(percentile(beside, 99) * 1000, 2),
        "beside_max_ms": round(max(beside) * 1000, 2),
    }


def measure_writer(info: dict) -> list[Measure]:
    path = info["path"]
    alone_id, beside_id = "bench-writer-alone", "bench-writer-beside-app"
    try:
        alone = run_writer(path, alone_id)
        app = subprocess.Popen(
            [PYTHON, str(HERE / "probe.py"), "stress", json.dumps(info)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert app.stdout is not None and app.stdin is not None
            if app.stdout.readline().strip() != "READY":
                raise RuntimeError(
                    f"stress probe failed:\n{app.stderr.read()[-3000:] if app.stderr else ''}"
                )
            time.sleep(1.0)  # let it get into its browse/search loop
            beside = run_writer(path, beside_id)
            app.stdin.close()
            out = app.stdout.read().strip().splitlines()
            if app.wait(timeout=60) != 0 or not out:
                raise RuntimeError(
                    f"stress probe failed:\n{app.stderr.read()[-3000:] if app.stderr else ''}"
                )
            rounds = json.loads(out[-1])
        finally:
            if app.poll() is None:
                app.kill()
            app.wait()
    finally:
        clear_session(path, alone_id)
        clear_session(path, beside_id)
    details = {**append_latencies(alone, beside), "app_activity": rounds}
    p99_alone, p99_beside = details["alone_p99_ms"], details["beside_p99_ms"]
    return [
        Measure(
            "6",
            "writer append p99 beside the app",
            "ms",
            round(p99_beside, 1),
            round(p99_alone, 1),
            "≤ floor + 50 ms",
            p99_beside <= p99_alone + 50,
            details,
        )
    ]


# ----- 7. statements -----


def measure_statements(info: dict) -> list[Measure]:
    report = statements.measure(info)
    worst = max(report["by_query"].values(), key=lambda item: item["max_ms"])
    print(f"    slowest: {report['slowest']}", flush=True)
    for step in report["plan"]:
        print(f"      plan: {step}", flush=True)
    return [
        Measure(
            "7",
            "longest read statement (alone, cold cache)",
            "ms",
            worst["max_ms"],
            None,
            "≤50 ms",
            worst["max_ms"] <= 50,
            report,
        )
    ]


def _group(record: dict) -> str:
    """The measure group of a stored measure (older files lack the field)."""
    by_number = {"1": "frame", "1b": "frame", "6": "writer", "7": "statements"}
    return record["details"].get("group") or by_number.get(record["number"], "browse")


STEPS = ("frame", "browse", "writer", "statements")


def run_groups(info: dict, groups: set[str]) -> tuple[dict, list[Measure]]:
    """The trivial app's floors, then every measure of ``groups`` on ``info``'s file."""
    trivial = probe("trivial")
    steps = {
        "frame": lambda: measure_first_frame(info),
        "browse": lambda: measure_browsing(info, trivial),
        "writer": lambda: measure_writer(info),
        "statements": lambda: measure_statements(info),
    }
    measures: list[Measure] = []
    for name in STEPS:
        if name not in groups:
            continue
        for measure in steps[name]():
            measure.details = {"group": name, **measure.details}
            measures.append(measure)
            if measure.number != "-":
                print(measure.line(), flush=True)
    return trivial, measures


def run_user_files(args: argparse.Namespace, groups: set[str]) -> None:
    """``--db``: the measures that only read, on files this suite did not build."""
    if "writer" in groups:
        raise SystemExit("--db: the writer measure appends to the file; not run")
    # The app keeps a search index per file under $XDG_CACHE_HOME: a scratch
    # one, so the run leaves nothing in the user's cache and starts cold.
    scratch = tempfile.TemporaryDirectory(prefix="lovia-tui-bench-")
    os.environ["XDG_CACHE_HOME"] = scratch.name
    out: list[dict] = []
    for path in args.db:
        started = time.perf_counter()
        info = user_db.describe(Path(path), args.giant, args.needle)
        print(
            f"database: {info['path']} ({info['segments']:,} segments, "
            f"{info['sessions']:,} sessions, {info['checkpoints']:,} checkpoints, "
            f"{info['bytes'] / 1e9:.2f} GB, journal {info['journal_mode']}); giant "
            f"{info['giant_session']!r} ({info['giant_runs']:,} segments), "
            f"needle {info['needle']!r}; found in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        print(f"load: {os.getloadavg()}", flush=True)
        _, measures = run_groups(info, groups)
        print(f"load: {os.getloadavg()}", flush=True)
        search = next((m for m in measures if m.number == "4"), None)
        if search and not search.details.get("sessions_found"):
            print(
                f"note: the app's search found no session for {info['needle']!r} "
                f"({search.details.get('raw_matching_segments')} segments hold it "
                "raw): measure 4 timed a search for nothing; try --needle",
                flush=True,
            )
        out.extend(user_db.records(measures, info))
    scratch.cleanup()
    missed = sum(not r["ok"] for r in out)
    print(f"\n{len(out)} measures, {missed} missed")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2, ensure_ascii=False))
        print(f"results in {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description="lovia-tui benchmarks against measured floors"
    )
    parser.add_argument("--size", choices=generate.SIZES, default="10k")
    parser.add_argument("--profile", choices=generate.PROFILES, default="skewed")
    parser.add_argument(
        "--only", help="comma-separated measure groups: frame,browse,writer,statements"
    )
    parser.add_argument(
        "--db",
        action="append",
        metavar="PATH",
        help="measure this lovia file instead of a generated one (repeatable; "
        "read-only: frame, browse, statements)",
    )
    parser.add_argument(
        "--giant", help="--db: the long session to open (default: the most segments)"
    )
    parser.add_argument(
        "--needle", help="--db: the text to search for (default: a rare sampled word)"
    )
    parser.add_argument("--out", help="--db: write the measures here as JSON")
    args = parser.parse_args()
    machine.compile_app()
    if args.db:
        run_user_files(args, set((args.only or "frame,browse,statements").split(",")))
        return
    if args.giant or args.needle or args.out:
        parser.error("--giant, --needle and --out go with --db")
    groups = set((args.only or ",".join(STEPS)).split(","))

    started = time.perf_counter()
    cached = generate.db_path(args.size, args.profile).exists()
    bench_db = generate.generate(args.size, profile=args.profile)
    how = "cached" if cached else f"generated in {bench_db.generated_in_s:.1f} s"
    print(
        f"database: {bench_db.path} ({bench_db.segments:,} segments, {bench_db.sessions:,} sessions, "
        f"{bench_db.bytes / 1e9:.2f} GB, {how})",
        flush=True,
    )
    generate.refresh_live_runs(bench_db)
    info = asdict(bench_db)
    about = machine.describe(Path(bench_db.path))
    print("machine: " + ", ".join(f"{k} {v}" for k, v in about.items()), flush=True)

    trivial, measures = run_groups(info, groups)

    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    name = args.size if args.profile == "skewed" else f"{args.profile}-{args.size}"
    target = results_dir / f"{name}.json"
    records = [{**asdict(m), "ratio": m.ratio} for m in measures]
    if args.only and target.exists():
        # A partial run replaces its groups' measures and keeps the others.
        kept = [
            m
            for m in json.loads(target.read_text())["measures"]
            if _group(m) not in groups
        ]
        records = sorted(kept + records, key=lambda m: STEPS.index(_group(m)))
    target.write_text(
        json.dumps(
            {
                "size": args.size,
                "profile": args.profile,
                "command": " ".join(
                    [Path(PYTHON).name, "benchmarks/run_all.py", *sys.argv[1:]]
                ),
                "when": time.strftime("%Y-%m-%d %H:%M:%S"),
                "machine": about,
                "database": info,
                "trivial_app": trivial,
                "groups_run": sorted(groups),
                "measures": records,
                "total_s": round(time.perf_counter() - started, 1),
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    missed = [m for m in measures if not m.ok]
    print(
        f"\n{len(measures) - 1 if 'browse' in groups else len(measures)} measures, "
        f"{len(missed)} missed; results in {target.relative_to(HERE.parent)} "
        f"({time.perf_counter() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()
