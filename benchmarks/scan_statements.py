"""The longest statement of the search's scan of unindexed rows (issue-20:
its LIMIT counted matching rows, so a rare word made one statement read on
for seconds; rule: 50 ms).

Scans a generated file as a never-built index does (``RestScan`` over every
segment) for the rare word, timing each statement through a wrapped
connection, so the same script measures any version of ``lovia_tui``.

Run: ``.venv/bin/python benchmarks/scan_statements.py --size 100k [--profile uniform]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import NEEDLE, generate  # noqa: E402

from lovia_tui.core.search.build import open_reader  # noqa: E402
from lovia_tui.core.search.index import IndexState  # noqa: E402
from lovia_tui.core.search.query import parse_query  # noqa: E402
from lovia_tui.core.search.scan import RestScan  # noqa: E402


class Timed:
    """A connection whose statements are timed, fetch included."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.took: list[float] = []

    def execute(self, sql: str, params=()):
        started = time.perf_counter()
        rows = self.conn.execute(sql, params).fetchall()
        self.took.append(time.perf_counter() - started)
        return Rows(rows)


class Rows(list):
    def fetchall(self) -> list:
        return list(self)

    def fetchone(self):
        return self[0] if self else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="100k")
    parser.add_argument("--profile", default="skewed")
    args = parser.parse_args()
    path = Path(generate(args.size, profile=args.profile).path)
    conn = Timed(open_reader(path))
    scan = RestScan(conn, parse_query(NEEDLE))
    started = time.perf_counter()
    hits = sum(1 for _ in scan.hits(IndexState(), {"session_runs"}))
    total = time.perf_counter() - started
    longest = sorted(conn.took, reverse=True)
    print(
        f"{path.name}: {hits} hits, {len(conn.took)} statements, "
        f"longest {', '.join(f'{t * 1000:.1f}' for t in longest[:3])} ms, "
        f"over 50 ms: {sum(t > 0.05 for t in conn.took)}, scan {total:.2f} s"
    )


if __name__ == "__main__":
    main()
