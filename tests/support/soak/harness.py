"""The soak: lovia writers in other processes, the app browsing and acting.

N writer processes (``writer.py``: real lovia, ``SQLiteSession`` and
``SQLiteCheckpointer`` with ``wal=True``, ScriptedProvider agents) append runs
to one file, each logging every row it committed. Meanwhile the app, driven by
the pilot, moves through sessions and runs, searches, follows runs, and trims,
rewinds, clears and deletes checkpoints of other sessions (victims seeded by
lovia before the writers start) through its own dialogs — and rewinds, trims
and clears the very sessions the writers are appending to (``live_actions``,
undone at the end). Afterwards every row a writer reported is read back:
present and byte-identical, none duplicated; no writer saw "database is
locked"; no exception reached the app and no worker failed.

``run_soak`` is what the short CI test (test_soak.py) and the long run
(``benchmarks/soak.py --seconds N``) call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.widgets import Input

from lovia_tui.app import make_app
from lovia_tui.core.actions.journal import Journal
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen, ForceScreen
from lovia_tui.view.kinds import Pane
from support.app import ready_to_confirm, watched_app
from support.lovia_factory import SCRIPTS, write_session
from support.reliability import until
from support.soak.live_actions import act_live, is_live, undo_live

WRITER = Path(__file__).with_name("writer.py")
DEBUG = bool(__import__("os").environ.get("SOAK_DEBUG"))
WAIT = 20.0
"""Longest wait for any one thing the app should do (seconds)."""
KEY_PACE = 0.05
"""Seconds between two keys the soak types."""
RESHOWN = 6
"""Confirms of a dialog the app shows again (rows moved on) before giving up."""
PRESSES = 3
"""Presses of an action's key whose target moved away before the key landed."""


@dataclass
class SoakReport:
    """What the soak wrote, found, and saw go wrong."""

    seconds: float
    writers: list[dict[str, Any]]
    rows_written: int = 0
    rows_verified: int = 0
    lost: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    app_steps: Counter = field(default_factory=Counter)
    actions_done: Counter = field(default_factory=Counter)
    victims_wrong: list[str] = field(default_factory=list)
    app_errors: list[str] = field(default_factory=list)
    live_done: Counter = field(default_factory=Counter)
    live_refused: int = 0
    live_undone: int = 0

    @property
    def lock_errors(self) -> int:
        return sum(w.get("lock_errors", 1) for w in self.writers)

    @property
    def writer_failures(self) -> int:
        return sum(w.get("failures", 1) for w in self.writers)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.changed
            or self.duplicated
            or self.lock_errors
            or self.writer_failures
            or self.victims_wrong
            or self.app_errors
        )

    def lines(self) -> list[str]:
        runs = sum(w.get("runs", 0) for w in self.writers)
        return [
            f"soak: {self.seconds:.0f} s, {len(self.writers)} writers, {runs} runs",
            f"rows written {self.rows_written}, verified {self.rows_verified}, "
            f"lost {len(self.lost)}, changed {len(self.changed)}, duplicated {len(self.duplicated)}",
            f"lock errors {self.lock_errors}, writer failures {self.writer_failures}",
            f"app steps {dict(sorted(self.app_steps.items()))}",
            f"app actions done {dict(sorted(self.actions_done.items()))}, victims wrong {self.victims_wrong}",
            f"on the writers' sessions: done {dict(sorted(self.live_done.items()))}, "
            f"refused (rows moved on) {self.live_refused}, undone {self.live_undone}",
            f"app errors {len(self.app_errors)}"
            + (f": {self.app_errors[:5]}" if self.app_errors else ""),
        ]


async def seed_victims(db: Path, count: int) -> list[str]:
    """Sessions for the app to act on, written by lovia with kept checkpoints."""
    victims = [f"victim-{n}" for n in range(count)]
    for session_id in victims:
        await write_session(db, session_id, SCRIPTS, checkpoint_path=db)
    return victims


async def run_soak(
    directory: Path,
    seconds: float,
    *,
    writers: int = 4,
    pace: float = 0.1,
    seed: int = 7,
) -> SoakReport:
    """Soak for ``seconds`` in ``directory`` (created); returns the report."""
    directory.mkdir(parents=True, exist_ok=True)
    db, stop = directory / "soak.db", directory / "stop"
    victims = await seed_victims(db, 4 + int(seconds // 15))
    procs = []
    for n in range(writers):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(WRITER), str(db), f"w{n}", str(directory / f"w{n}.log"), str(stop), str(pace),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        procs.append(proc)
    report = SoakReport(seconds, [])
    started = time.monotonic()
    try:
        for proc in procs:
            async with asyncio.timeout(60):
                line = await proc.stdout.readline()
            assert line.strip() == b"READY", (line, await proc.stderr.read())
        await drive_app(
            db, stop, victims, seconds, random.Random(seed), writers, report
        )
    finally:
        stop.touch()
        for proc in procs:
            try:
                async with asyncio.timeout(60):
                    out, err = await proc.communicate()
            except TimeoutError:
                proc.kill()
                out, err = await proc.communicate()
            summary = out.decode().strip().splitlines()[-1:] if out else []
            try:
                report.writers.append(
                    json.loads(summary[0])
                    if summary
                    else {"stderr": err.decode()[-2000:]}
                )
            except json.JSONDecodeError:
                report.writers.append({"stderr": err.decode()[-2000:]})
            if err.strip():
                report.writers[-1]["stderr"] = err.decode()[-2000:]
    if DEBUG:
        print(f"writers done at {time.monotonic() - started:.1f} s", flush=True)
    await undo_live(db, report)
    verify_writers(db, directory, writers, report)
    await verify_victims(db, victims, report)
    if DEBUG:
        print(f"verified at {time.monotonic() - started:.1f} s", flush=True)
    return report


# ------------------------------------------------------------------ the app


async def within(pilot, predicate, timeout: float = WAIT) -> bool:
    """Whether ``predicate()`` came to hold within ``timeout`` (the app pumped meanwhile)."""
    try:
        await until(pilot, predicate, timeout)
    except TimeoutError:
        return False
    return True


def _last_notice(app) -> str:
    """The app's newest toast: why a key did nothing, as the user read it."""
    notices = list(app._notifications)
    return f"last notice: {notices[-1].message!r}" if notices else "no notice"


def _idle(app, group: str) -> bool:
    return not any(w.group == group and not w.is_finished for w in app.workers)


async def drive_app(
    db: Path,
    stop: Path,
    victims: list[str],
    seconds: float,
    rng: random.Random,
    writers: int,
    report: SoakReport,
) -> None:
    app = make_app([db], stale_after=30)
    async with watched_app(app, (160, 45)) as (pilot, watch):
        screen = app.screen
        pending = list(victims)
        plan = ["trim", "rewind", "clear", "delete"]
        browse = [browse_sessions, browse_runs, follow_run, search]
        deadline = time.monotonic() + seconds
        step = live = 0
        # Until the deadline, and at least until each kind of action was done once.
        while time.monotonic() < deadline or step < 2 * len(plan):  # bounded
            if step % 6 == 4:  # every third browse: act on a writer's own session
                await act_live(act, pilot, screen, db, live, writers, watch, report)
                live += 1
            elif pending and step % 2 == 1:
                action = plan[(len(victims) - len(pending)) % len(plan)]
                victim = pending.pop(0)
                report.app_steps[action] += 1
                problem = await act(pilot, screen, db, action, victim)
                if problem:
                    report.app_errors.append(f"{action} on {victim}: {problem}")
                else:
                    report.actions_done[action] += 1
            else:
                chosen = browse[step // 2 % len(browse)]
                report.app_steps[chosen.__name__] += 1
                await chosen(pilot, screen, rng, writers)
            step += 1
            if DEBUG:
                print(
                    f"{time.monotonic() - deadline + seconds:6.2f} cpu {time.process_time():6.2f} step {step} runs={len(screen.runs.runs)} sessions={len(screen.sessions.keys)}",
                    flush=True,
                )
            if not app.is_running:
                break
        stop.touch()  # the writers finish their run and exit while the app winds down
        await tap(pilot, "escape", "escape")
        await settle(pilot)
        report.app_errors += [
            f"worker {group}: {error!r}" for group, error in watch.worker_errors
        ]
        report.app_errors += [f"notified: {text}" for text in watch.errors()]
        running = app.is_running
        if DEBUG:
            print(
                f"app settled after {time.monotonic() - deadline + seconds:.1f} s",
                flush=True,
            )
    if DEBUG:
        print(
            f"app closed after {time.monotonic() - deadline + seconds:.1f} s",
            flush=True,
        )
    # An exception that reached the app is re-raised by run_test; one that
    # closed it shows as its return code.
    if not running or app.return_code not in (None, 0):
        report.app_errors.append(f"app ended (return code {app.return_code})")


async def tap(pilot, *keys: str) -> None:
    """Keys at a typist's pace. The pilot's own press() waits for the app to
    go idle, which it seldom does while the writers write (up to 2 s a key)."""
    for key in keys:
        pilot.app.simulate_key(key)
        await pilot.pause(KEY_PACE)  # bounded: one keystroke


async def browse_sessions(pilot, screen, rng: random.Random, writers: int) -> None:
    await tap(
        pilot,
        "1",
        *(rng.choice(["down", "down", "up", "pagedown", "home"]) for _ in range(3)),
        "enter",
    )
    await tap(pilot, rng.choice(["end", "home", "up"]), "enter", "r", "pageup")


async def browse_runs(pilot, screen, rng: random.Random, writers: int) -> None:
    await tap(
        pilot,
        "3",
        *(rng.choice(["down", "up", "pagedown", "home"]) for _ in range(3)),
        "r",
        "r",
    )


async def follow_run(pilot, screen, rng: random.Random, writers: int) -> None:
    """Follow a running writer run if there is one (else the newest run)."""
    await tap(pilot, "3")
    # Rows not read yet (off screen) are None.
    shown = [run for run in screen.runs.shown if run is not None]
    running = [run for run in shown if run.status == "running"]
    target = running[0] if running else shown[0] if shown else None
    if target is not None and screen.runs.select_run(target.run_id):
        await tap(pilot, "f")


async def search(pilot, screen, rng: random.Random, writers: int) -> None:
    await tap(pilot, "s")
    if not await within(pilot, lambda: bool(screen.query("#session-filter"))):
        return  # the key was not taken (a dialog or the narrow layout had it)
    # Typed text needs a character with each key; set it as typing would.
    screen.query_one(
        "#session-filter", Input
    ).value = f"hello w{rng.randrange(writers)} {rng.randrange(10)}"
    await tap(pilot, "enter")
    await within(pilot, lambda: _idle(pilot.app, "search"))
    await tap(pilot, "escape")


async def act(pilot, screen, db: Path, action: str, victim: str) -> str | None:
    """One action through the app's own dialog: preview, Confirm, done.
    None when done (or refused each time it was shown), else what did not happen."""
    app = pilot.app
    if action == "delete":
        await tap(pilot, "3")
        run_id = f"{victim}-0"

        def located() -> bool:
            # A run not read yet is located in the background: ask again only
            # once that search is over (asking anew would cancel it), e.g. when
            # a finished walk replaced the list it searched.
            if (run := screen.runs.selected) is not None and run.run_id == run_id:
                return True
            if _idle(app, "runs-locate"):
                screen.runs.select_run(run_id)
            return False

        key = "d"
        dialogs = ActionScreen | ForceScreen
        for _ in range(PRESSES):  # bounded: a walk may replace the list under the key
            if not await within(pilot, located):
                return f"run {run_id} never highlighted"
            await tap(pilot, key)
            if await within(pilot, lambda: isinstance(app.screen, dialogs)):
                break
            if located():  # the key landed on the run and still opened nothing
                return f"{key} opened no dialog ({_last_notice(app)})"
    else:
        if not await within(
            pilot, lambda: any(k[1] == victim for k in screen.sessions.keys)
        ):
            return "session never listed"
        session_key = next(k for k in screen.sessions.keys if k[1] == victim)
        screen.go_to_session(session_key)

        def loaded() -> bool:
            rows = screen.transcript.rows
            return (
                screen.session_key == session_key
                and any(
                    r.segment is not None and r.segment.session_id == victim
                    for r in rows
                )
                # Flat indices are counted after the rows show: wait for them.
                and not any(r.segment is not None and r.segment.counting for r in rows)
                # The focus moves with the rows, a moment after them: a key
                # pressed before it lands in the pane that had it.
                and screen.selection.pane is Pane.TRANSCRIPT
            )

        key = {"trim": "t", "rewind": "w", "clear": "C"}[action]
        dialogs = ActionScreen | ForceScreen
        # bounded: a writer's append may reload the session (its entries
        # counted again) between the look and the key: the app said "try again".
        for _ in range(PRESSES):
            if not await within(pilot, loaded):
                return "transcript never loaded"
            if (
                action == "rewind"
            ):  # keep the first run's 4 entries (no call left dangling)
                transcript = screen.transcript
                position = next(
                    (n for n, i in enumerate(transcript.shown_rows)
                     if transcript.rows[i].entry is not None and transcript.rows[i].entry.index == 4),
                    None,
                )  # fmt: skip
                if position is None:
                    return "no entry 4 in the transcript"
                transcript.move_cursor(position)
            await tap(pilot, key)
            if await within(pilot, lambda: isinstance(app.screen, dialogs)):
                break
    if not await within(pilot, lambda: isinstance(app.screen, dialogs)):
        return f"{key} opened no dialog ({_last_notice(app)})"
    for _ in range(RESHOWN):  # bounded: refused while the rows kept moving on
        dialog = app.screen
        if isinstance(dialog, ForceScreen):
            break  # a writer's run is live: keep the refusal (the app asks to force)

        def ended(dialog=dialog) -> bool:
            if isinstance(app.screen, dialogs):
                # Previewed again as the rows moved on, or refused for a live run.
                return app.screen is not dialog
            return _idle(app, "action")

        # Deliberately, as a user: the count typed where asked, Enter on Confirm.
        await ready_to_confirm(pilot)
        await tap(pilot, "enter")
        if not await within(pilot, ended):
            return f"Enter on {app.focused!r} did not end the dialog"
        if not isinstance(app.screen, dialogs):
            return None
    await tap(pilot, "escape")
    if not await within(pilot, lambda: _idle(app, "action")):
        return "the action never ended after Escape"
    return None


# ------------------------------------------------------------ verification


def _sha(value: Any) -> str | None:
    if value is None:
        return None
    raw = value if isinstance(value, bytes) else str(value).encode()
    return hashlib.sha256(raw).hexdigest()


def verify_writers(db: Path, directory: Path, writers: int, report: SoakReport) -> None:
    """Every row a writer reported committed is there, byte for byte, once."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = bytes  # compare the stored bytes, not a decoding of them
    try:
        for n in range(writers):
            segments, turns, heads = {}, {}, {}
            log = directory / f"w{n}.log"
            for line in (
                log.read_text(encoding="utf-8").splitlines() if log.exists() else []
            ):
                item = json.loads(line)
                if item["kind"] == "segment":
                    segments[item["run_id"]] = item
                elif item["kind"] == "turn":
                    turns[(item["run_id"], item["seq"])] = item["sha"]
                else:
                    heads[item["run_id"]] = item["sha"]  # the last save is what stays
            report.rows_written += len(segments) + len(turns) + len(heads)
            for run_id, item in segments.items():
                rows = conn.execute(
                    "SELECT session_id, entries_json, meta_json FROM session_runs WHERE run_id = ?",
                    (run_id,),
                ).fetchall()
                _check(
                    report,
                    f"segment {run_id}",
                    rows,
                    (item["session_id"].encode(), item["entries"], item["meta"]),
                )
            for (run_id, seq), digest in turns.items():
                rows = conn.execute(
                    "SELECT entries_json FROM snapshot_turns WHERE run_id = ? AND seq = ?",
                    (run_id, seq),
                ).fetchall()
                _check(report, f"turn {run_id}/{seq}", rows, (digest,))
            for run_id, digest in heads.items():
                rows = conn.execute(
                    "SELECT head_json FROM snapshot_heads WHERE run_id = ?", (run_id,)
                ).fetchall()
                _check(report, f"head {run_id}", rows, (digest,))
            # No batch was stored twice (a retried append would add a second seq).
            counts = Counter(run_id for run_id, _ in turns)
            for run_id, stored in conn.execute(
                "SELECT run_id, COUNT(*) FROM snapshot_turns WHERE run_id LIKE ? GROUP BY run_id",
                (f"w{n}-r%",),
            ):
                if stored != counts.get(run_id.decode(), 0):
                    report.duplicated.append(
                        f"{run_id.decode()}: {stored} batches stored, {counts.get(run_id.decode(), 0)} written"
                    )
    finally:
        conn.close()


def _check(report: SoakReport, what: str, rows: list[tuple], expected: tuple) -> None:
    if not rows:
        report.lost.append(what)
        return
    (row,) = rows
    found = (
        (row[0], *(_sha(value) for value in row[1:]))
        if len(expected) == 3
        else tuple(_sha(v) for v in row)
    )
    if found != expected:
        report.changed.append(what)
    else:
        report.rows_verified += 1


async def verify_victims(db: Path, victims: list[str], report: SoakReport) -> None:
    """The journal holds every action the app reported done, each as it should be."""
    entries = await Journal().entries([db], 1_000)
    done = Counter(entry.action for entry in entries if entry.status == "done")
    expected = {
        "trim": "trim",
        "rewind": "rewind",
        "clear": "clear",
        "delete": "delete-run",
    }
    for action, count in report.actions_done.items():
        if done.get(expected[action], 0) < count:
            report.victims_wrong.append(
                f"{action}: {count} confirmed, {done.get(expected[action], 0)} journaled"
            )
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for entry in entries:
            sid = entry.params.get("session_id")
            if is_live(sid):
                continue
            if (
                entry.action == "clear"
                and conn.execute(
                    "SELECT COUNT(*) FROM session_runs WHERE session_id = ?", (sid,)
                ).fetchone()[0]
            ):
                report.victims_wrong.append(f"clear left segments in {sid}")
            if (
                entry.action == "rewind"
                and conn.execute(
                    "SELECT SUM(json_array_length(entries_json)) FROM session_runs WHERE session_id = ?",
                    (sid,),
                ).fetchone()[0]
                != 4
            ):
                report.victims_wrong.append(f"rewind of {sid} did not keep 4 entries")
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="how long the app and the writers run (60)",
    )
    parser.add_argument(
        "--writers", type=int, default=4, help="lovia writer processes (4)"
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.1,
        help="seconds each writer waits between runs (0.1)",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        help="where to write (default: a new temp dir, removed after)",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lovia-tui-soak-") as scratch:
        directory = args.dir or Path(scratch)
        os.environ.setdefault("LOVIA_TUI_JOURNAL", str(directory / "journal.db"))
        started = time.monotonic()
        report = asyncio.run(
            run_soak(
                directory,
                args.seconds,
                writers=args.writers,
                pace=args.pace,
                seed=args.seed,
            )
        )
        for line in report.lines():
            print(line)
        print(
            f"took {time.monotonic() - started:.0f} s: {'OK' if report.ok else 'FAILED'}"
        )
        for problem in (report.lost + report.changed + report.duplicated)[:20]:
            print(f"  {problem}")
        for writer in report.writers:
            if writer.get("stderr"):
                print(f"writer {writer.get('writer', '?')} stderr:\n{writer['stderr']}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
