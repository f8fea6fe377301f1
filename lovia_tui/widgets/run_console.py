"""The live event console of a resume or replay, kept open while browsing.

Owns the run's worker: lovia's events stream in as lines, text deltas grow
the line in progress, and cancelling asks lovia to stop at its next safe point
while the stream is drained to its end (the run ends ``interrupted``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label, RichLog, Static

from lovia_tui.core.formatting import printable
from lovia_tui.core.runs.console import one_line
from lovia_tui.view.kinds import Group

if TYPE_CHECKING:
    from lovia_tui.core.runs.console import ConsoleEvent
    from lovia_tui.core.runs.preflight import Preflight
    from lovia_tui.core.runs.resume import RunControl

STYLES = {
    "info": "",
    "muted": "dim",
    "text": "",
    "reasoning": "dim italic",
    "tool": "cyan",
    "success": "bold green",
    "warning": "yellow",
    "error": "bold red",
}
DELTAS = ("text_delta", "reasoning_delta")

Starter = Callable[["Preflight", "RunControl"], AsyncIterator["ConsoleEvent"]]


class RunConsole(Vertical):
    """Event log of the current (or last) resume/replay."""

    class Finished(Message):
        """The run ended; ``status`` is its checkpoint's status afterwards."""

        def __init__(self, run_id: str, status: str) -> None:
            super().__init__()
            self.run_id = run_id
            self.status = status

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.control: RunControl | None = None
        self._partial = Text()

    def compose(self) -> ComposeResult:
        yield Label("Console", id="console-title", classes="pane-title", markup=False)
        yield RichLog(id="console-log", wrap=True, markup=False, max_lines=5_000)
        yield Static(id="console-partial")

    @property
    def running(self) -> bool:
        return self.control is not None

    def start(self, pf: Preflight, starter: Starter) -> None:
        from lovia_tui.core.runs.resume import (
            RunControl,  # imports lovia: on first run only
        )

        self.remove_class("hidden")
        self.query_one(RichLog).clear()
        self.query_one("#console-title", Label).update(
            printable(f"Console · {pf.mode} {pf.run.run_id} · running (K cancels)")
        )
        self.control = RunControl()
        self._run(pf, starter, self.control)

    def cancel(self) -> None:
        if self.control is not None:
            self.control.cancel("cancelled from lovia-tui")
            self._line(Text("cancelling at lovia's next safe point…", style="yellow"))

    @work(exclusive=True, group=Group.CONSOLE)
    async def _run(self, pf: Preflight, starter: Starter, control: RunControl) -> None:
        status = "unknown"
        try:
            async for event in starter(pf, control):
                self._show(event)
                if event.kind in ("run_completed", "run_failed"):
                    status = str(event.data.get("status", status))
        except Exception as exc:  # a lovia/SQLite failure: one line, never a traceback
            self._line(Text(printable(f"✗ {one_line(exc)}"), style="bold red"))
        finally:
            self.control = None
            self._flush()
            self.query_one("#console-title", Label).update(
                printable(f"Console · {pf.mode} {pf.run.run_id} · {status}")
            )
            self.post_message(self.Finished(pf.run.run_id, status))

    def _show(self, event: ConsoleEvent) -> None:
        style = STYLES.get(event.style, "")
        if event.kind in DELTAS:
            self._partial.append(printable(event.text, multiline=True), style=style)
            self.query_one("#console-partial", Static).update(self._partial)
            return
        self._flush()
        self._line(Text(printable(event.text, multiline=True), style=style))

    def _flush(self) -> None:
        if self._partial:
            self._line(self._partial)
            self._partial = Text()
            self.query_one("#console-partial", Static).update("")

    def _line(self, text: Text) -> None:
        self.query_one(RichLog).write(text)
