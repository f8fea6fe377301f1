"""The live event console of a resume or replay, kept open while browsing.

Owns the run's worker: lovia's events stream in as lines, text deltas grow
the line in progress, and cancelling asks lovia to stop at its next safe point
while the stream is drained to its end (the run ends ``interrupted``). A call
that needs approval waits in a bar of its own (tool, arguments, why) until the
user approves or denies it, with the reason typed there if any. Once the
run is over, the console keeps an eye on the run's journal entry: when it is
undone (here, from the doctor, the command line or another lovia-tui), or
that undo is undone in turn, it says so in its log and its title.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, RichLog, Static

from lovia_tui.core.actions.journal_file import JournalError
from lovia_tui.core.entries import shorten
from lovia_tui.core.errors import ActionError
from lovia_tui.core.formatting import printable
from lovia_tui.core.runs.console import one_line
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.pane_title import PaneTitle

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
        self.waiting: Mapping[str, Any] | None = None
        """The call waiting for the user's approval (its console event's data)."""
        self._partial = Text()
        self.journal_id: int | None = None
        """The journal entry of the run shown, once the run has recorded it."""
        self.undone_by: int | None = None
        """The undo that took the shown run's changes out, while it stands."""
        self._heading = ""
        self._status = ""
        self._trouble = ""

    def compose(self) -> ComposeResult:
        yield PaneTitle("Console", id="console-title")
        yield RichLog(id="console-log", wrap=True, markup=False, max_lines=5_000)
        yield Static(id="console-partial")
        with Horizontal(id="approval", classes="hidden"):
            yield Static(id="approval-call")
            yield Input(
                id="approval-reason",
                placeholder="reason (optional): Enter keeps it, then A or V",
            )

    @property
    def running(self) -> bool:
        return self.control is not None

    def start(self, pf: Preflight, starter: Starter) -> None:
        from lovia_tui.core.actions.journal import Journal
        from lovia_tui.core.runs.resume import (
            RunControl,  # imports lovia: on first run only
        )

        self.remove_class("hidden")
        self.query_one(RichLog).clear()
        self.journal_id = self.undone_by = None
        self._heading = f"{pf.mode} {pf.run.run_id}"
        self._retitle("running (K cancels)")
        self.control = RunControl(answering="ask", journal=Journal())
        self._run(pf, starter, self.control)

    def cancel(self) -> None:
        if self.control is not None:
            self.control.cancel("cancelled from lovia-tui")
            self._line(Text("cancelling at lovia's next safe point…", style="yellow"))

    def answer(self, approved: bool) -> None:
        """Approve or deny the waiting call, with the reason typed in the bar."""
        call, control = self.waiting, self.control
        if call is None or control is None:
            return
        reason = self.query_one("#approval-reason", Input).value.strip()
        (control.approve if approved else control.reject)(call["call_id"], reason)
        self._answered()

    def _ask(self, call: Mapping[str, Any]) -> None:
        self.waiting = call
        self.remove_class("hidden")
        what = f"{call['name']}({shorten(call['arguments'], 300)})"
        self.query_one("#approval-call", Static).update(
            Text.assemble(
                ("needs approval  ", "bold yellow"),
                (printable(what), "bold"),
                "\n",
                (
                    printable(f"{call['why']} · A approves · V denies · E: a reason"),
                    "yellow",
                ),
            )
        )
        self.query_one("#approval").remove_class("hidden")
        self.screen.refresh_bindings()
        self.notify(
            printable(
                f"{call['name']} needs your approval in the console: A approves, V denies"
            ),
            severity="warning",
            markup=False,
        )

    def _answered(self) -> None:
        if self.waiting is None:
            return
        self.waiting = None
        self.query_one("#approval").add_class("hidden")
        self.query_one("#approval-reason", Input).value = ""
        self.screen.refresh_bindings()

    @on(Input.Submitted, "#approval-reason")
    def _reason_typed(self) -> None:
        """Enter keeps the reason and hands the keys back: A or V answers."""
        self.screen.set_focus(None)

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
        # Not when cancelled: the app is closing (`q` while a call waited for
        # an answer) and the console's widgets are gone or going.
        self._answered()
        self._flush()
        self._retitle(status)
        self.post_message(self.Finished(pf.run.run_id, status))

    def _retitle(self, status: str) -> None:
        self._status = status
        undone = (
            "" if self.undone_by is None else f" · undone (journal #{self.undone_by})"
        )
        self.query_one("#console-title", PaneTitle).show(
            f"Console · {self._heading} · {status}{undone}"
        )

    def check_undone(self) -> None:
        """Look in the journal whether the run shown was undone (or redone)
        since: after an undo here, a commit by another process, or when
        the console is shown again."""
        if self.journal_id is not None and not self.running:
            self._check_undone(self.journal_id)

    @work(exclusive=True, group=Group.CONSOLE_UNDO)
    async def _check_undone(self, entry_id: int) -> None:
        from lovia_tui.core.actions.journal import Journal
        from lovia_tui.core.runs.run_journal import undo_standing

        try:
            undone_by = await asyncio.to_thread(undo_standing, Journal(), entry_id)
        except JournalError as exc:  # busy or unreadable: said once, tried again later
            if self._trouble != str(exc):
                self._trouble = str(exc)
                self._line(Text(printable(f"journal: {one_line(exc)}"), style="yellow"))
            return
        except ActionError:  # pruned from the journal: nothing more to say
            return
        if entry_id != self.journal_id or undone_by == self.undone_by:
            return  # another run is shown now, or nothing changed
        self.undone_by = undone_by
        if undone_by is None:
            self._line(
                Text(
                    f"↷ its undo was undone: what this run did is back "
                    f"(journal #{entry_id})",
                    style="bold green",
                )
            )
        else:
            self._line(
                Text(
                    f"↶ this run was undone (journal #{entry_id}, by #{undone_by}): "
                    "what it stored is taken out and its checkpoint is back as "
                    "before it; what its tool calls did elsewhere stays done",
                    style="bold yellow",
                )
            )
        self._retitle(self._status)

    def _show(self, event: ConsoleEvent) -> None:
        style = STYLES.get(event.style, "")
        if event.kind in DELTAS:
            self._partial.append(printable(event.text, multiline=True), style=style)
            self.query_one("#console-partial", Static).update(self._partial)
            return
        self._flush()
        self._line(Text(printable(event.text, multiline=True), style=style))
        if isinstance(event.data.get("journal_id"), int):
            self.journal_id = event.data["journal_id"]
        if event.kind == "approval_required" and event.data.get("asking"):
            self._ask(event.data)
        elif event.kind == "approval_decided":
            self._answered()

    def _flush(self) -> None:
        if self._partial:
            self._line(self._partial)
            self._partial = Text()
            self.query_one("#console-partial", Static).update("")

    def _line(self, text: Text) -> None:
        self.query_one(RichLog).write(text)
