"""The app on the issue-16 shapes, in a child process (``python probe_runs.py MODE INFO``).

- ``runs-first``: process start → the first frame whose runs list shows rows;
  then until every worker has settled (the whole walk, counts and links), and
  key → frame in the runs list (100 presses of ↓ and PgDn); peak RSS at the end.
- ``giant-open``: the app settled, a jump to the session ``info["session_id"]``
  → the first frame with its rows; peak RSS once settled.

Prints one JSON object (wall times are ``time.time()``, to compare with the spawn).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from time import perf_counter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe import SIZE, Frames, press_many, rss_mb, settle, summary_ms  # noqa: E402

KEYS = 100


def _wall(moment: float) -> float:
    return moment + time.time() - perf_counter()


def runs_first(info: dict) -> None:
    from lovia_tui.app import make_app
    from lovia_tui.widgets.row_list import RowList

    app = make_app(info["paths"])
    frames = Frames(app)
    marks: dict[str, float] = {}
    original = RowList.render_line

    def render_line(self, y):
        if self.id == "runs" and self.count:
            marks.setdefault("rows", perf_counter())
        return original(self, y)

    RowList.render_line = render_line

    async def drive() -> None:
        async with app.run_test(size=SIZE):
            while "rows" not in marks:
                await asyncio.sleep(0.005)
            first = await frames.wait_after(marks["rows"], timeout=600)
            await settle(app)
            settled = perf_counter()
            rows = app.screen.runs.row_list
            rows.focus()
            await settle(app)
            down = await press_many(app, frames, rows, "cursor", "down", KEYS)
            pages = await press_many(app, frames, rows, "page", "pagedown", KEYS // 5)
            await settle(app)
            result = {
                "rows": _wall(first),
                "settled": _wall(settled),
                "keys_down": summary_ms(down),
                "keys_pagedown": summary_ms(pages),
                "title": str(app.screen.query_one("#runs-title").content),
                **rss_mb(),
            }
        print(json.dumps(result), flush=True)
        os._exit(0)

    asyncio.run(drive())


def giant_open(info: dict) -> None:
    """Open the session ``info["session_id"]``: jump → its rows on screen, peak RSS."""
    from lovia_tui.app import make_app

    app = make_app([info["path"]])
    frames = Frames(app)

    async def drive() -> None:
        async with app.run_test(size=SIZE):
            await settle(app)
            settled = perf_counter()
            screen = app.screen
            key = next(k for k in screen.sessions.keys if k[1] == info["session_id"])
            pressed = perf_counter()
            screen.go_to_session(key)
            while not any(
                row.segment is not None and row.segment.session_id == key[1]
                for row in screen.transcript.rows
            ):  # its rows, not the rows of the session shown before
                await asyncio.sleep(0.002)
            shown = await frames.wait_after(perf_counter(), timeout=600)
            await settle(app)
            rows = len(screen.transcript.rows)
            result = {
                "settled": _wall(settled),
                "open_s": round(shown - pressed, 3),
                "rows": rows,
                **rss_mb(),
            }
        print(json.dumps(result), flush=True)
        os._exit(0)

    asyncio.run(drive())


def main() -> None:
    mode, info = sys.argv[1], json.loads(sys.argv[2])
    if mode == "runs-first":
        runs_first(info)
    elif mode == "giant-open":
        giant_open(info)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
