"""The app side of the benchmarks, run in a child process by the measures.

``python benchmarks/probe.py MODE [DB_INFO_JSON]`` prints one JSON object:

- ``first-frame``: the app (``make_app``) headless; exits at the first frame
  whose sessions list has rows, reporting its wall time (and that of the
  first frame whose visible rows also have their summaries).
- ``trivial``: the floor app, a trivial Textual app: the wall time of its
  first frame, the key-to-frame latency of a widget that repaints on a key,
  and its peak RSS.
- ``shape``: a reference, not a floor: a Textual app laid out as the
  inspector (status line, three bordered panes with titles and Line API
  lists, a key bar) drawing fixed text, no data and none of our code: the
  wall time of its first frame, i.e. what that layout costs Textual.
- ``browse``: the app driven key by key: sessions list, the largest
  session's transcript, its older batches, a content search and its cancel;
  peak RSS at the end.
- ``stress``: browses and searches in a loop until stdin closes (the
  writer measure runs beside it).

A "frame" is a compositor update handed to the output: headless mode skips
writing it, so the probe renders the update to terminal codes itself to keep
that cost in. Keys are posted to the app as the driver posts them.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import os
import sqlite3
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZE = (160, 48)
FIRST_OLDER_BATCHES = 20
KEY_INTERVAL = 0.035
"""Seconds between presses: a fast key repeat (about 28 per second)."""


class Frames:
    """Wall times of the frames an app displays (recorded by wrapping its output)."""

    def __init__(self, app) -> None:
        from textual._compositor import CompositorUpdate

        self.times: list[float] = []
        self.app = app
        original = app._display  # no public hook for "a frame went out"

        def display(screen, renderable) -> None:
            original(screen, renderable)
            if renderable is None:
                return
            if isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)
            self.times.append(perf_counter())

        app._display = display

    def after(self, moment: float) -> float | None:
        index = bisect.bisect_left(self.times, moment)
        return self.times[index] if index < len(self.times) else None

    async def wait_after(self, moment: float, timeout: float = 10.0) -> float:
        deadline = perf_counter() + timeout
        while True:
            found = self.after(moment)
            if found is not None:
                return found
            if perf_counter() > deadline:
                raise TimeoutError("no frame")
            await asyncio.sleep(0.0005)


_STARTED = perf_counter()


def log(text: str) -> None:
    """Progress on stderr, so a slow step shows where it is."""
    print(
        f"[probe {perf_counter() - _STARTED:7.2f}s] {text}", file=sys.stderr, flush=True
    )


def rss_mb(app=None) -> dict[str, float]:
    """This process's peak and current RSS; with ``app``, the peak of its
    search indexer process too (a child of its own, not in ours). The peak is
    the kernel's VmHWM: ``ru_maxrss`` keeps the peak of the process that
    spawned this one across the exec (a 347 MB parent read as a 347 MB app)."""
    peak = _high_water(Path("/proc/self/status"))
    with open("/proc/self/statm") as handle:
        current = int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    found = {"peak_mb": round(peak, 1), "current_mb": round(current, 1)}
    indexer = _indexer(app) if app is not None else None
    if indexer is not None:
        found["indexer_peak_mb"] = round(
            _high_water(Path(f"/proc/{indexer.pid}/status")), 1
        )
    return found


def _high_water(status: Path) -> float:
    """A process's peak resident memory in MB (``VmHWM``)."""
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _indexer(app):
    search = app.screen.sessions._content_search
    indexer = search.indexer if search is not None else None
    return indexer if indexer is not None and not indexer.ended else None


def post_key(app, key: str) -> None:
    """Post a key as the terminal driver does."""
    from textual import events

    char = key if len(key) == 1 else None
    app.post_message(events.Key(key, char))


@contextmanager
def stamped(obj, name: str):
    """Wrap ``obj.name`` for the block: yields the list of times each call returned."""
    stamps: list[float] = []
    original = getattr(obj, name)

    def wrapped(*args):
        result = original(*args)
        stamps.append(perf_counter())
        return result

    setattr(obj, name, wrapped)
    try:
        yield stamps
    finally:
        delattr(obj, name)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def summary_ms(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50) * 1000, 2),
        "p95_ms": round(percentile(values, 95) * 1000, 2),
        "max_ms": round(max(values) * 1000, 2) if values else float("nan"),
    }


# ----- first frame -----


def first_frame(info: dict) -> None:
    from lovia_tui.app import make_app
    from lovia_tui.widgets.row_list import RowList

    app = make_app(info.get("paths") or [info["path"]])
    frames = Frames(app)
    marks: dict[str, float] = {}
    original = RowList.render_line

    def render_line(self, y):
        strip = original(self, y)
        if self.id == "sessions" and self.count:
            marks.setdefault("rows", perf_counter())
            pane = self.screen.sessions
            if (
                "summaries" not in marks
                and pane.visible_keys()
                and all(key in pane.list.summaries for key in pane.visible_keys())
            ):
                marks["summaries"] = perf_counter()
        return strip

    RowList.render_line = render_line
    wall_offset = time.time() - perf_counter()

    def check() -> None:
        if "rows" in marks and "summaries" in marks:
            rows, summaries = (
                frames.after(marks["rows"]),
                frames.after(marks["summaries"]),
            )
            if rows and summaries:
                print(
                    json.dumps(
                        {
                            "rows": rows + wall_offset,
                            "summaries": summaries + wall_offset,
                        }
                    )
                )
                sys.stdout.flush()
                os._exit(0)

    original_display = app._display

    def display(screen, renderable) -> None:
        original_display(screen, renderable)
        check()

    app._display = display
    app.run(headless=True, size=SIZE)


# ----- the inspector's shape, without the app -----


def shape() -> None:
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.containers import Horizontal, Vertical
    from textual.scroll_view import ScrollView
    from textual.strip import Strip
    from textual.widgets import Static

    class Rows(ScrollView):
        def render_line(self, y: int) -> Strip:
            text = Text(f"session-{y:06d}  the title of session {y}  3 runs  2h ago")
            text.truncate(self.size.width, pad=True)
            return Strip(text.render(self.app.console))

    class Shape(App):
        CSS = """
        #panes { height: 1fr; }
        .pane { border: round $primary; height: 1fr; width: 1fr; }
        #transcript { width: 2fr; }
        .title { height: 1; background: $boost; }
        Rows { height: 1fr; overflow: hidden; }
        #detail { height: 2fr; }
        #status, #keys { height: 1; }
        """

        def compose(self) -> ComposeResult:
            yield Static("lovia.db", id="status")
            with Horizontal(id="panes"):
                for pane in ("sessions", "transcript", "runs"):
                    with Vertical(classes="pane", id=pane):
                        yield Static(pane, classes="title")
                        yield Rows()
                        if pane == "runs":
                            yield Static("run detail\n" * 16, id="detail")
            yield Static("enter open  / search  w rewind  u undo  ? help", id="keys")

    app = Shape()
    frames = Frames(app)
    wall_offset = time.time() - perf_counter()

    async def drive() -> None:
        async with app.run_test(size=SIZE):
            await frames.wait_after(0)
            print(json.dumps({"first_frame": frames.times[0] + wall_offset}))

    asyncio.run(drive())


# ----- the trivial floor app -----


def trivial() -> None:
    from textual.app import App, ComposeResult
    from textual.binding import Binding
    from textual.widgets import Static

    class Counter(Static, can_focus=True):
        BINDINGS = [Binding("down", "step", "Step")]
        count = 0

        def action_step(self) -> None:
            self.count += 1
            self.update(f"pressed {self.count}")

    class Trivial(App):
        def compose(self) -> ComposeResult:
            yield Counter("hello")

        def on_mount(self) -> None:
            self.query_one(Counter).focus()

    app = Trivial()
    frames = Frames(app)
    wall_offset = time.time() - perf_counter()
    result: dict = {}

    async def drive() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await frames.wait_after(0)
            result["first_frame"] = frames.times[0] + wall_offset
            await pilot.pause(0.2)
            counter = app.query_one(Counter)
            latencies = await press_many(app, frames, counter, "step", "down", 100)
            result["keys"] = summary_ms(latencies)
            result["rss"] = rss_mb()

    asyncio.run(drive())
    print(json.dumps(result))


SPLITS: list[tuple[float, float]] = []
"""(press → handled, handled → frame) of every press, for diagnosis."""


async def press_many(
    app, frames: Frames, widget, action: str, key: str, count: int
) -> list[float]:
    """Press ``key`` ``count`` times; each latency is press → first frame after it is handled."""
    latencies = []
    with stamped(widget, f"action_{action}") as handled:
        for _ in range(count):
            before = len(handled)
            pressed = perf_counter()
            post_key(app, key)
            while len(handled) == before:
                if perf_counter() - pressed > 10:
                    raise TimeoutError(f"{key} not handled")
                await asyncio.sleep(0.0005)
            shown = await frames.wait_after(handled[-1])
            latencies.append(shown - pressed)
            SPLITS.append((handled[-1] - pressed, shown - handled[-1]))
            await asyncio.sleep(max(0.0, KEY_INTERVAL - (perf_counter() - pressed)))
    return latencies


# ----- browsing -----


@contextmanager
def profiled(step: str):
    """cProfile the UI thread during ``step`` when $BENCH_PROFILE names it."""
    if os.environ.get("BENCH_PROFILE") != step:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(f"/tmp/bench-{step}.prof")


class Statements:
    """Wall time of every read-layer statement (queueing on the connection included)."""

    def __init__(self) -> None:
        from lovia_tui.core.store.database import Database

        self.records: list[tuple[str, float]] = []
        self.slowest: tuple[float, str, tuple] = (0.0, "", ())
        """The slowest statement seen: seconds, its SQL and its parameters."""
        self.originals = {
            name: getattr(Database, name) for name in ("fetchall", "fetchone")
        }
        for name, original in self.originals.items():

            async def timed(db, sql, params=(), _original=original, **kwargs):
                started = perf_counter()
                try:
                    return await _original(db, sql, params, **kwargs)
                finally:
                    seconds = perf_counter() - started
                    self.records.append((" ".join(sql.split())[:70], seconds))
                    if seconds > self.slowest[0]:
                        self.slowest = (seconds, " ".join(sql.split()), tuple(params))

            setattr(Database, name, timed)

    def restore(self) -> None:
        from lovia_tui.core.store.database import Database

        for name, original in self.originals.items():
            setattr(Database, name, original)

    def report(self) -> dict:
        by_sql: dict[str, list[float]] = {}
        for sql, seconds in self.records:
            by_sql.setdefault(sql, []).append(seconds)
        return {
            sql: {"n": len(times), "max_ms": round(max(times) * 1000, 1)}
            for sql, times in sorted(by_sql.items(), key=lambda item: -max(item[1]))[
                :12
            ]
        }

    def plan(self, path: str) -> list[str]:
        """SQLite's plan for the slowest statement, one line a step."""
        _, sql, params = self.slowest
        if not sql:
            return []
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        except sqlite3.Error as exc:
            return [f"(no plan: {exc})"]
        finally:
            conn.close()
        return [detail for *_, detail in rows]


async def settle(app, quiet: float = 0.15, timeout: float = 600) -> None:
    """Until no short-lived worker has run for ``quiet`` seconds (the tests' settle,
    with a quiet period: a debounce timer may start a worker a moment later)."""
    from textual.pilot import Pilot

    from lovia_tui.pilot import settle as settle_app

    await settle_app(Pilot(app), timeout, quiet=quiet)


def browse(info: dict, keys: int) -> None:
    from lovia_tui.app import make_app
    from lovia_tui.messages import SearchProgress

    statements = Statements()
    app = make_app([info["path"]])
    frames = Frames(app)
    progress: list[tuple[float, SearchProgress]] = []
    result: dict = {}

    def hook(message) -> None:
        # The hook sees a message at each node it bubbles through: count it once.
        if isinstance(message, SearchProgress) and not any(
            m is message for _, m in progress[-3:]
        ):
            progress.append((perf_counter(), message))

    async def drive() -> None:
        async with app.run_test(size=SIZE, message_hook=hook):
            await settle(app)
            screen = app.screen
            result["sessions_listed"] = len(screen.sessions.keys)
            log(f"sessions_listed: {result['sessions_listed']}")
            # 2a. moving through the sessions list
            screen.sessions.row_list.focus()
            await settle(app)
            with profiled("sessions"):
                lat = await press_many(
                    app, frames, screen.sessions.row_list, "cursor", "down", keys
                )
            result["keys_sessions"] = summary_ms(lat)
            log(f"keys_sessions: {result['keys_sessions']}")
            await settle(app)
            # 3. opening the largest session
            result["open_giant"] = await open_session(app, frames, screen, info)
            log(f"open_giant: {result['open_giant']}")
            # 2b. moving through its transcript (up, towards older runs)
            screen.transcript.focus()
            await settle(app)
            lat = await press_many(app, frames, screen.transcript, "cursor", "up", keys)
            result["keys_transcript"] = summary_ms(lat)
            log(f"keys_transcript: {result['keys_transcript']}")
            await settle(app)
            # 3b. older batches: Home, wait for the batch, again
            times = await load_older(app, frames, screen, batches=FIRST_OLDER_BATCHES)
            result["older"] = older_summary(screen, times)
            log(f"older: {result['older']}")
            lat = await press_many(
                app, frames, screen.transcript, "cursor", "down", keys
            )
            result["keys_transcript_loaded"] = summary_ms(lat)
            log(f"keys_transcript_loaded: {result['keys_transcript_loaded']}")
            # 4. content search, then a cancelled one
            result["search"] = await search(
                app, frames, screen, info["needle"], progress
            )
            log(f"search: {result['search']}")
            result["cancel"] = await cancel_search(
                app, screen, info["needle"] + "x", progress
            )
            log(f"cancel: {result['cancel']}")
            # 5. what browsing cost in memory
            result["transcript_rows"] = len(screen.transcript.rows)
            result["rss"] = rss_mb(app)
            log(f"rss: {result['rss']}")
            # 3c. on to the start of the giant session: back to it first (the
            # search put its first match under the list's cursor, and the
            # transcript follows the list), from its newest batch again.
            await open_session(app, frames, screen, info)
            started = perf_counter()
            times = await load_older(app, frames, screen, batches=None)
            result["older_to_start"] = {
                **older_summary(screen, times),
                "rest_s": round(perf_counter() - started, 2),
            }
            log(f"older_to_start: {result['older_to_start']}")
            result["rss_full"] = {
                **rss_mb(app),
                "transcript_rows": len(screen.transcript.rows),
            }
            log(f"rss_full: {result['rss_full']}")
            result["statements"] = statements.report()

    asyncio.run(drive())
    print(json.dumps(result))


async def open_session(app, frames: Frames, screen, info: dict) -> dict:
    """Select the largest session as a jump does; time until its newest rows are on screen."""
    transcript = screen.transcript
    key = (str(Path(info["path"])), info["giant_session"])
    with stamped(transcript, "show") as shown:
        started = perf_counter()
        screen.go_to_session(key)
        while not shown:
            await asyncio.sleep(0.0005)
        frame = await frames.wait_after(shown[-1])
    await settle(app)
    entries = sum(1 for row in transcript.rows if row.kind == "entry")
    return {"ms": round((frame - started) * 1000, 1), "entries_shown": entries}


async def load_older(app, frames: Frames, screen, batches: int | None) -> list[float]:
    """Up at the top, wait for the older batch to be prepended, repeat (all, or
    ``batches``): scrolling back a run at a time (Home jumps to the start)."""
    transcript = screen.transcript
    times: list[float] = []
    with stamped(transcript, "prepend") as prepended:
        transcript.focus()
        await settle(app)
        while transcript.rows and transcript.rows[0].kind == "older":
            if batches is not None and len(times) >= batches:
                break
            before = len(prepended)
            transcript.move_cursor(1)  # the row below "older runs": up reaches it
            await settle(app)
            pressed = perf_counter()
            post_key(app, "up")
            while len(prepended) == before:
                if perf_counter() - pressed > 30:
                    raise TimeoutError("older batch never came")
                await asyncio.sleep(0.0005)
            frame = await frames.wait_after(prepended[-1])
            times.append(frame - pressed)
            await asyncio.sleep(KEY_INTERVAL)
    return times


def older_summary(screen, times: list[float]) -> dict:
    rows = screen.transcript.rows
    remaining = rows[0].older if rows and rows[0].kind == "older" else 0
    return {
        "batches": len(times),
        "segments_left": remaining,
        "total_s": round(sum(times), 2),
        **summary_ms(times),
    }


async def search(app, frames: Frames, screen, needle: str, progress: list) -> dict:
    """Submit a content search through the input; time until the done message is shown."""
    from textual.widgets import Input

    progress.clear()
    await screen.run_action("search_content")
    box = screen.query_one("#session-filter", Input)
    box.value = needle
    await settle(app)
    started = perf_counter()
    post_key(app, "enter")
    while not (progress and progress[-1][1].done):
        if perf_counter() - started > 900:
            raise TimeoutError("search never finished")
        await asyncio.sleep(0.001)
    frame = await frames.wait_after(progress[-1][0])
    found = next(when for when, message in progress if message.keys or message.done)
    first_hit = await frames.wait_after(found)
    sessions = len(progress[-1][1].keys)
    await settle(app)
    return {
        "s": round(frame - started, 3),
        "first_hit_s": round(first_hit - started, 3),
        "first_progress_s": round(progress[0][0] - started, 3),
        "progress_messages": len(progress),
        "sessions_found": sessions,
    }


async def cancel_search(app, screen, needle: str, progress: list) -> dict:
    """Start a search, press Esc after its first progress; time until it stops."""
    from textual.widgets import Input

    progress.clear()
    await screen.run_action("search_content")
    screen.query_one("#session-filter", Input).value = needle
    await asyncio.sleep(0.05)
    post_key(app, "enter")
    while not progress:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.05)
    db = screen.workspace.databases[0]
    cancelled = perf_counter()
    post_key(app, "escape")
    while any(w.group == "search" and not w.is_finished for w in app.workers):
        await asyncio.sleep(0.0005)
    worker_stopped = perf_counter()
    await db.fetchone("SELECT 1")
    free = perf_counter()
    return {
        "worker_stopped_ms": round((worker_stopped - cancelled) * 1000, 1),
        "connection_free_ms": round((free - cancelled) * 1000, 1),
        "progress_before_cancel": len(progress),
    }


# ----- stress (beside the writer) -----


def stress(info: dict) -> None:
    from lovia_tui.app import make_app

    app = make_app([info["path"]])
    frames = Frames(app)
    stop = threading.Event()
    rounds = {"searches": 0, "keys": 0}

    def wait_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_stdin, daemon=True).start()

    async def drive() -> None:
        async with app.run_test(size=SIZE):
            await settle(app)
            screen = app.screen
            print("READY", flush=True)
            while not stop.is_set():
                screen.sessions.row_list.focus()
                for key in ["down"] * 15 + ["pagedown"]:
                    post_key(app, key)
                    rounds["keys"] += 1
                    await asyncio.sleep(KEY_INTERVAL)
                screen.go_to_session((str(Path(info["path"])), info["giant_session"]))
                await asyncio.sleep(0.3)
                screen.transcript.focus()
                for _ in range(3):
                    post_key(app, "home")
                    await asyncio.sleep(0.2)
                await screen.run_action("search_content")
                from textual.widgets import Input

                screen.query_one("#session-filter", Input).value = info["needle"]
                await asyncio.sleep(0.05)  # the input takes focus first
                post_key(app, "enter")
                await asyncio.sleep(0.05)
                while any(
                    w.group == "search" and not w.is_finished for w in app.workers
                ):
                    if stop.is_set():
                        break
                    await asyncio.sleep(0.01)
                rounds["searches"] += 1
                post_key(app, "escape")
                await asyncio.sleep(0.05)
            await settle(app)  # no key left in flight while the app shuts down

    asyncio.run(drive())
    print(json.dumps({"rounds": rounds, "frames": len(frames.times)}), flush=True)


def main() -> None:
    mode = sys.argv[1]
    info = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    if mode == "first-frame":
        first_frame(info)
    elif mode == "trivial":
        trivial()
    elif mode == "shape":
        shape()
    elif mode == "browse":
        browse(info, int(info.get("keys", 100)))
    elif mode == "stress":
        stress(info)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
