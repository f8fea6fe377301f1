"""What the reliability tests share: watching an app for failures, touring
every view with the pilot, and proving files were left alone.

Used by test_hostile, test_keymash, test_terminal and the soak. Nothing here
sleeps: every wait is bounded and marked ``# bounded``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from textual.message import Message
from textual.worker import Worker, WorkerState

from lovia_tui.app import LoviaTui
from lovia_tui.pilot import settle


@dataclass
class AppWatch:
    """Every worker that ended in ERROR and every notification an app showed.

    Pass :meth:`hook` as ``run_test(message_hook=...)`` and call :meth:`attach`
    once the app exists: worker failures no longer crash the app (they become
    notifications), so a test has to look for them here.
    """

    worker_errors: list[tuple[str, BaseException | None]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)

    def hook(self, message: Message) -> None:
        if (
            isinstance(message, Worker.StateChanged)
            and message.state == WorkerState.ERROR
        ):
            self.worker_errors.append((str(message.worker.group), message.worker.error))

    def attach(self, app: LoviaTui) -> None:
        notify = app.notify

        def recording(message: str, *args, severity: str = "information", **kwargs):
            self.notes.append((severity, str(message)))
            return notify(message, *args, severity=severity, **kwargs)

        app.notify = recording  # type: ignore[method-assign]

    def errors(self) -> list[str]:
        return [text for severity, text in self.notes if severity == "error"]

    def assert_healthy(self, app: LoviaTui) -> None:
        """No exception reached the app and no worker failed."""
        # Textual sets return code 1 on any exception that reaches the app.
        assert app.return_code in (None, 0), app.return_code
        assert self.worker_errors == [], self.worker_errors


def digests(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` (recursively), by relative name."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def assert_untouched(
    directory: Path, before: dict[str, str], databases: list[str]
) -> None:
    """Every file byte-identical; new files only SQLite's empty -wal/-shm of ``databases``."""
    after = digests(directory)
    for name, digest in before.items():
        assert after.get(name) == digest, f"{name} changed"
    allowed = {f"{db}-wal" for db in databases} | {f"{db}-shm" for db in databases}
    appeared = set(after) - set(before)
    assert appeared <= allowed, f"new files: {sorted(appeared - allowed)}"
    for name in appeared:
        if name.endswith("-wal"):
            assert (directory / name).stat().st_size == 0, f"{name} is not empty"


async def until(
    pilot, predicate: Callable[[], bool], timeout: float = 15.0, what: str = ""
) -> None:
    """Pump the app until ``predicate()`` holds; TimeoutError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():  # bounded
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)


def detail_text(app: LoviaTui) -> str:
    """The run detail pane's text, as a terminal 120 cells wide shows it."""
    from rich.console import Console

    from lovia_tui.widgets.run_detail import RunDetail

    console = Console(width=120, record=True, color_system=None)
    console.print(app.screen.query_one(RunDetail).query_one("#run-detail-body").content)
    return console.export_text()


async def visit_transcript(
    pilot, wanted: Callable[[object], bool] | None = None, most: int = 60
) -> int:
    """Put the cursor on transcript rows and, on each, do what Enter and r do:
    unfold, unfold in full, raw JSON, fold; drawn after every step. Every row
    when ``wanted`` is None (at most ``most``), else the rows it picks.
    Returns how many rows were visited."""
    transcript = pilot.app.screen.transcript
    transcript.focus()
    positions = [
        number
        for number, row_index in enumerate(transcript.shown_rows)
        if wanted is None or wanted(transcript.rows[row_index])
    ][:most]
    for position in positions:
        transcript.move_cursor(position)
        # A segment or seam folds its entries away: twice unfolds it again.
        steps = [transcript.action_fold] * 2
        if transcript.current_row.kind == "entry":
            steps = [
                transcript.action_fold,
                transcript.action_fold,
                transcript.action_raw,
                transcript.action_fold,
            ]
        for step in steps:
            step()
            await pilot.pause()
    await settle(pilot)
    return len(positions)


async def visit_runs(pilot, *, jump: bool = True) -> int:
    """Select every run: its detail (head and dangling calls), its raw head,
    and (``jump``) Enter: to its session, or to the run alone. Returns how
    many runs were visited."""
    screen = pilot.app.screen
    count = len(screen.runs.shown)
    for index in range(count):
        if pilot.app.focused is not screen.runs.row_list:
            await pilot.press("3")
        screen.runs.row_list.cursor = index
        await settle(pilot)
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("r")
        if jump:
            await pilot.press("enter")
            await settle(pilot)
    return count
