"""The issue-16 shapes against floors measured in the same run.

``.venv/bin/python benchmarks/run_shapes.py [--heads N] [--entries N] [--output-mb N]``
(defaults 100k heads, 100k entries, 50 MB: the machine is shared; the issue's
1M / 1M / 200 MB with ``--heads 1000000 --entries 1000000 --output-mb 200``).
Each line prints value, floor, ratio and budget; the results go to
``benchmarks/results/shapes.json``.

1. CLI ``runs/sessions/show --json`` on the demo vs ``python -c "import sqlite3, json"``;
2. the web UI's single file vs the demo's two-file layout: start → sessions with titles;
3. a fleet's checkpoint file: start → runs pane first rows (floor: a trivial
   Textual app's first frame + the raw SQL of the first rows), key → frame
   in the runs list, peak RSS; ``runs --json`` wall and peak RSS; ``doctor``
   wall and peak RSS against a raw scan that reads and parses every row
   (``--doctor-segments PATH``: the same beside a session file, e.g. the 1M
   generated one);
4. a segment of many entries and one huge tool output: ``show``, ``show --json``,
   ``export`` (json/md), ``doctor`` and trim's preview peak RSS against the
   rows' bytes read by Python's sqlite3 (the floor), the app's peak RSS once
   the session is open.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import machine  # noqa: E402
import shapes  # noqa: E402
from run_all import Measure, probe  # noqa: E402

PYTHON = sys.executable
CLI = [PYTHON, "-m", "lovia_tui"]
RUNS = 5


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child process, output discarded."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{argv} failed: {child.stderr.read().decode()[-2000:]}")
    child.stderr.close()
    return wall, usage.ru_maxrss / 1024


def median_wall(argv: list[str]) -> float:
    return statistics.median(timed(argv)[0] for _ in range(RUNS))


def cli_measures(demo: Path) -> list[Measure]:
    floor = median_wall([PYTHON, "-c", "import sqlite3, json"])
    session = "cli-report"
    found = []
    for name, argv in (
        ("runs", ["runs", str(demo), "--json"]),
        ("sessions", ["sessions", str(demo), "--json"]),
        ("show", ["show", str(demo), session, "--json"]),
    ):
        wall = median_wall([*CLI, *argv, "--readonly"]) * 1000
        found.append(
            Measure("1", f"CLI {name} --json on the demo", "ms", round(wall, 1),
                    round(floor * 1000, 1), "≤300 ms", wall <= 300)
        )  # fmt: skip
    return found


def first_titles(paths: list[str]) -> float:
    values = []
    for _ in range(RUNS):
        started = time.time()
        values.append(probe("first-frame", {"paths": paths})["summaries"] - started)
    return statistics.median(values) * 1000


def web_measure(demo: Path) -> Measure:
    two = first_titles([str(demo / "sessions.db"), str(demo / "runs.db")])
    web = first_titles([str(demo / "assistant.db")])
    return Measure("2", "web UI file start → sessions with titles", "ms",
                   round(web, 1), round(two, 1), "≤1.1× two-file", web <= 1.1 * two)  # fmt: skip


def raw_first_runs(path: str) -> float:
    """The raw SQL behind the runs pane's first rows on a fresh connection:
    the newest 5,000 heads' statuses, then the first screenful read whole."""
    started = time.perf_counter()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT rowid, json_extract(head_json, '$.status') FROM snapshot_heads "
        "ORDER BY rowid DESC LIMIT 5000"
    ).fetchall()
    ids = [row[0] for row in rows[:44]]
    conn.execute(
        f"SELECT head_json FROM snapshot_heads WHERE rowid IN ({','.join('?' * len(ids))})",
        ids,
    ).fetchall()
    conn.close()
    return time.perf_counter() - started


def fleet_measures(info: dict) -> list[Measure]:
    path = info["path"]
    trivial, sql, app = [], [], []
    last: dict = {}
    for _ in range(RUNS):
        started = time.time()
        last = json.loads(
            subprocess.run(
                [PYTHON, str(HERE / "probe_runs.py"), "runs-first", json.dumps({"paths": [path]})],
                capture_output=True, text=True, check=True, timeout=1800,
            ).stdout.splitlines()[-1]
        )  # fmt: skip
        app.append(last["rows"] - started)
        started = time.time()
        trivial.append(probe("trivial")["first_frame"] - started)
        sql.append(raw_first_runs(path))
    med = statistics.median
    floor = (med(trivial) + med(sql)) * 1000
    first = med(app) * 1000
    heads = f"{info['checkpoints']:,} heads"
    wall, rss = timed([*CLI, "runs", path, "--json", "--readonly"])
    scan, scan_rss = timed([PYTHON, "-c", RAW_RUNS, path])
    return [
        Measure("3", f"start → runs pane first rows, {heads}", "ms", round(first, 1),
                round(floor, 1), "≤1.25× floor", first <= 1.25 * floor,
                {"app_ms": [round(v * 1000) for v in app],
                 "trivial_ms": [round(v * 1000) for v in trivial],
                 "sql_ms": [round(v * 1000, 1) for v in sql], "title": last["title"]}),
        Measure("3b", "key → frame p95, runs list (↓)", "ms", last["keys_down"]["p95_ms"],
                None, "≤16 ms", last["keys_down"]["p95_ms"] <= 16),
        Measure("3c", "key → frame p95, runs list (PgDn)", "ms", last["keys_pagedown"]["p95_ms"],
                None, "≤16 ms", last["keys_pagedown"]["p95_ms"] <= 16),
        Measure("3d", f"peak RSS, app on {heads}", "MB", last["peak_mb"], None,
                "≤150 MB", last["peak_mb"] <= 150),
        Measure("3e", f"runs --json wall, {heads}", "s", round(wall, 2), round(scan, 2),
                "(floor: raw scan + dumps)", True),
        Measure("3f", f"runs --json peak RSS, {heads}", "MB", round(rss, 1),
                round(scan_rss, 1), "independent of heads", True),
    ]  # fmt: skip


RAW_RUNS = """
import json, sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
out = open("/dev/null", "w")
for run_id, head in conn.execute("SELECT run_id, head_json FROM snapshot_heads"):
    out.write(json.dumps({"run_id": run_id, "head": json.loads(head)}))
"""


RAW_SCAN = """
import sqlite3, sys, orjson
for path in sys.argv[1:]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "session_runs" in tables:
        for entries, meta in conn.execute("SELECT entries_json, meta_json FROM session_runs"):
            orjson.loads(entries)
            if meta:
                orjson.loads(meta)
    if "snapshot_heads" in tables:
        for (head,) in conn.execute("SELECT head_json FROM snapshot_heads"):
            orjson.loads(head)
        for (entries,) in conn.execute("SELECT entries_json FROM snapshot_turns"):
            orjson.loads(entries)
"""
"""The doctor's floor: every row of the stores read and its JSON parsed (orjson)."""


def doctor_measures(paths: list[str], label: str) -> list[Measure]:
    scan, scan_rss = timed([PYTHON, "-c", RAW_SCAN, *paths])
    wall, rss = timed([*CLI, "doctor", *paths, "--json"])
    return [
        Measure("5", f"doctor --json, {label}", "s", round(wall, 1), round(scan, 1),
                "≤2× floor (every row read and parsed)", wall <= 2 * scan),
        Measure("5b", f"doctor peak RSS, {label}", "MB", round(rss, 1), round(scan_rss, 1),
                "≤150 MB", rss <= 150),
    ]  # fmt: skip


RAW_SEGMENTS = """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
out = open("/dev/null", "wb")
for (raw,) in conn.execute(
    "SELECT CAST(entries_json AS BLOB) FROM session_runs WHERE session_id = ? ORDER BY id",
    (sys.argv[2],),
):
    out.write(raw)
"""
"""The floor of a giant session's reads: its rows' bytes read by Python's sqlite3."""


def segment_measures(
    info: dict, largest_mb: float, label: str, *, app: bool = True
) -> list[Measure]:
    path, sid = info["path"], info["session_id"]
    budget = 100 + largest_mb
    _, floor = timed([PYTHON, "-c", RAW_SEGMENTS, path, sid])
    found = []
    for name, argv, bounded in (
        ("show", ["show", path, sid, "--readonly"], True),
        ("show --json", ["show", path, sid, "--json", "--readonly"], True),
        (
            "export --format json",
            ["export", path, sid, "--format", "json", "--readonly"],
            True,
        ),
        (
            "export --format md",
            ["export", path, sid, "--format", "md", "--readonly"],
            True,
        ),
        ("doctor", ["doctor", path, "--json"], False),
        ("trim preview (trim --json)", ["trim", path, sid, "--json"], False),
    ):
        wall, rss = timed([*CLI, *argv])
        found.append(
            Measure("4", f"{name} peak RSS, {label}", "MB", round(rss, 1), round(floor, 1),
                    f"≤{budget:.0f} MB" if bounded else "(floor: rows read)",
                    rss <= budget if bounded else True, {"wall_s": round(wall, 2)})
        )  # fmt: skip
    if not app:
        return found
    opened = json.loads(
        subprocess.run(
            [PYTHON, str(HERE / "probe_runs.py"), "giant-open", json.dumps(info)],
            capture_output=True, text=True, check=True, timeout=1800,
        ).stdout.splitlines()[-1]
    )  # fmt: skip
    found += [
        Measure("4b", f"app peak RSS, {label} open", "MB", opened["peak_mb"], None,
                "≤400 MB", opened["peak_mb"] <= 400, opened),
        Measure("4c", f"app: jump → its first rows, {label}", "s", opened["open_s"],
                None, "≤1 s", opened["open_s"] <= 1.0, opened),
    ]  # fmt: skip
    return found


def built(shape: str, count: int) -> dict:
    """``shapes.build`` in a child: this process must stay small, or every child
    forked from it starts with its RSS (``ru_maxrss`` counts it)."""
    done = subprocess.run(
        [PYTHON, str(HERE / "shapes.py"), shape, "--count", str(count)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=shapes.DEFAULTS["fleet"])
    parser.add_argument("--entries", type=int, default=shapes.DEFAULTS["giant"])
    parser.add_argument("--output-mb", type=int, default=shapes.DEFAULTS["output"])
    parser.add_argument(
        "--doctor-segments", metavar="PATH",
        help="also run the doctor on this session file beside the fleet's heads "
             "(the issue's 1M segments + 1M checkpoints: benchmarks/cache/lovia-1m.db)",
    )  # fmt: skip
    parser.add_argument(
        "--segments", action="store_true",
        help="only the giant segment and the huge output, CLI only "
             "(results/shapes-segments-ENTRIES-MBmb.json)",
    )  # fmt: skip
    args = parser.parse_args()
    machine.compile_app()
    measures: list[Measure] = []
    if not args.segments:
        with tempfile.TemporaryDirectory() as scratch:
            demo = Path(scratch) / "demo"
            subprocess.run([*CLI, "demo", "--dir", str(demo), "--no-tui"], check=True,
                           capture_output=True)  # fmt: skip
            measures += cli_measures(demo)
            measures.append(web_measure(demo))
        for line in (m.line() for m in measures):
            print(line, flush=True)
    more = []
    if not args.segments:
        fleet = built("fleet", args.heads)
        more += fleet_measures(fleet)
        more += doctor_measures([fleet["path"]], f"{fleet['checkpoints']:,} heads")
        if args.doctor_segments:
            with sqlite3.connect(
                f"file:{args.doctor_segments}?mode=ro", uri=True
            ) as conn:
                (segments,) = conn.execute(
                    "SELECT COUNT(*) FROM session_runs"
                ).fetchone()
            conn.close()
            more += doctor_measures(
                [args.doctor_segments, fleet["path"]],
                f"{segments:,} segments + {fleet['checkpoints']:,} heads",
            )
    app = not args.segments
    more += segment_measures(
        built("giant", args.entries), 0.0, f"{args.entries:,} entries", app=app
    )
    output = built("output", args.output_mb)
    more += segment_measures(
        output, output["output_bytes"] / 2**20, f"a {args.output_mb} MB output", app=app
    )
    for line in (m.line() for m in more):
        print(line, flush=True)
    measures += more
    name = (
        f"shapes-segments-{args.entries}-{args.output_mb}mb"
        if args.segments
        else "shapes"
    )
    target = HERE / "results" / f"{name}.json"
    target.write_text(
        json.dumps(
            {"machine": machine.describe(HERE), "measures": [{**m.__dict__, "ratio": m.ratio} for m in measures]},
            indent=2, default=str,
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
