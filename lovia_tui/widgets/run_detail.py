"""The selected checkpoint: its whole head and its dangling tool calls.

The panel reads what it shows itself: :meth:`RunDetail.describe` draws the
head at once and reads the dangling calls from the run's snapshot in a
worker; a result for a run no longer described is dropped.
"""

from __future__ import annotations

import asyncio
import json
import time

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from textual import work
from textual.containers import VerticalScroll
from textual.widgets import Static

from lovia_tui import messages
from lovia_tui.core.context_meta import context_line
from lovia_tui.core.entries import dangling_calls
from lovia_tui.core.formatting import (
    age_since,
    ago,
    plural,
    printable,
    printable_json,
    timestamp,
    usage_line,
)
from lovia_tui.core.models import DanglingCall, RunInfo, SessionLink, Unreadable
from lovia_tui.core.run_status import stale_reason, status_label
from lovia_tui.core.store import checkpoint_reads
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import UNREADABLE_SHOWN
from lovia_tui.view.kinds import Group as Workers
from lovia_tui.widgets.transcript_rows import pretty_arguments
from lovia_tui.widgets.worker_errors import WorkerErrors

LIVE_CALLS = (
    "The run is live: its process is executing these now; their results are saved "
    "when they finish."
)
DESCRIBE_SETTLE = 0.05
"""Seconds the cursor rests on a run before the detail reads and draws it."""
RESUME_WARNING = (
    "A resume executes each of these again before anything else "
    "(at-least-once: their side effects happen again)."
)


STATUS_STYLES = {
    "running": "bold green",
    "stale": "bold red",
    "interrupted": "yellow",
    "failed": "red",
    "completed": "cyan",
    "unreadable": "bold magenta",
}


def data_text(text: object, style: str = "") -> Text:
    """Stored text for a table cell: never markup, never a control sequence."""
    return Text(printable(text, multiline=True), style=style)


def head_table(
    run: RunInfo, link: SessionLink | None, now: float, stale_after: float
) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    label = status_label(run, now, stale_after)
    reason = stale_reason(run, now, stale_after)
    status = f"running, but stale: {reason}" if reason else label
    table.add_row("run", data_text(run.run_id))
    table.add_row("status", data_text(status, STATUS_STYLES.get(label, "")))
    if run.web_status is not None:
        table.add_row("web record", data_text(run.web_status))
    table.add_row(
        "agent",
        data_text(
            run.agent_name
            + (
                f" → handoff pending to {run.pending_handoff}"
                if run.pending_handoff
                else ""
            )
        ),
    )
    table.add_row("turns", data_text(run.turns))
    table.add_row("usage", data_text(usage_line(run.usage, run.last_input_tokens)))
    table.add_row("entries", data_text(f"{run.entries} (last seq {run.last_seq})"))
    table.add_row("started", timestamp(run.started_at))
    table.add_row(
        "updated",
        f"{timestamp(run.updated_at)} ({ago(now, run.updated_at)})"
        if run.updated_at is not None
        else UNREADABLE_SHOWN,
    )
    if link:
        how = "appended to it" if link.kind == "segment" else "web UI record"
        table.add_row("session", data_text(f"{link.session_id} ({how})"))
    else:
        table.add_row(
            "session",
            Text(
                "unlinked: no record says which session this run belongs to",
                style="italic",
            ),
        )
    if run.error:
        # Imported for a run that failed: its patterns are compiled on import.
        from lovia_tui.core.runs.redact import error_line

        table.add_row(
            "error",
            data_text(error_line(run.error), "bold red"),
        )
    if run.status == "completed":
        output = (
            run.output
            if isinstance(run.output, str)
            else json.dumps(run.output, ensure_ascii=False)
        )
        table.add_row("output", data_text(output))
    context = context_line(run.context_state)
    if context is not None:
        table.add_row("context", data_text(context))
    table.add_row("file", data_text(run.file))
    return table


def dangling_panel(
    calls: list[DanglingCall], *, live: bool = False, unread: bool = False
) -> RenderableType:
    """The calls with no result: running now in a live run, dangling in a dead
    one; where some of the run's entries did not read (``unread``), maybe more."""
    if not calls and unread:
        return Text(
            "No dangling tool call in the entries that read; what did not read "
            "(below) may hold some.",
            style="yellow",
        )
    if not calls:
        return Text(
            "No dangling tool calls: a resume continues with the model.", style="dim"
        )
    items: list[RenderableType] = [
        Text(LIVE_CALLS if live else RESUME_WARNING, style="bold")
    ]
    for call in calls:
        items.append(data_text(f"\n{call.name}  ({call.call_id})", "bold"))
        items.append(data_text(pretty_arguments(call.arguments)))
    title = (
        f"{plural(len(calls), 'tool call')} running"
        if live
        else plural(len(calls), "dangling tool call")
    )
    return Panel(Group(*items), title=title, border_style="green" if live else "red")


class RunDetail(WorkerErrors, VerticalScroll):
    """Head, session link and dangling calls of one run; `r` shows the raw head.

    Drawn again by :meth:`tick` once its "updated … ago" would read
    differently: the age moves with time, without a key press.
    """

    def __init__(self, workspace: Workspace, stale_after: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workspace = workspace
        self.stale_after = stale_after
        self.raw = False
        """The raw head is shown instead of the table."""
        self._shown: tuple | None = None
        self._wanted: tuple[RunInfo | None, SessionLink | None] = (None, None)
        self._age = ""

    def compose(self):
        yield Static(id="run-detail-body")

    def describe(self, run: RunInfo | None, link: SessionLink | None) -> None:
        """Show ``run`` with its dangling calls, once the cursor rests on it.

        Drawn once, when the calls are read: each drawing lays the screen out
        again, too slow to do twice on every key held down the runs list.
        """
        self._wanted = (run, link)
        self._read_dangling(run)

    def toggle_raw(self) -> None:
        self.raw = not self.raw
        if self._shown is not None:
            run, link, dangling, problems, _, stale_after = self._shown
            self.show(
                run, link, dangling, problems, raw=self.raw, stale_after=stale_after
            )

    @work(exclusive=True, group=Workers.RUN_DETAIL)
    async def _read_dangling(self, run: RunInfo | None) -> None:
        await asyncio.sleep(DESCRIBE_SETTLE)  # a newer describe cancels this one
        if run is None:
            self.post_message(messages.RunDetailLoaded(None, [], []))
            return
        entries, problems = await checkpoint_reads.snapshot_entries(
            self.workspace.database(run.file), run.run_id
        )
        calls = dangling_calls([entry.data for entry in entries])
        self.post_message(messages.RunDetailLoaded(run.run_id, calls, problems))

    def on_run_detail_loaded(self, message: messages.RunDetailLoaded) -> None:
        message.stop()
        run, link = self._wanted
        if (run.run_id if run else None) != message.run_id:
            return  # read for a run no longer described
        self.show(
            run,
            link,
            message.dangling,
            message.problems,
            raw=self.raw,
            stale_after=self.stale_after,
        )

    def show(
        self,
        run: RunInfo | None,
        link: SessionLink | None,
        dangling: list[DanglingCall],
        problems: list[Unreadable],
        *,
        raw: bool,
        stale_after: float,
    ) -> None:
        self._shown = (run, link, dangling, problems, raw, stale_after)
        body = self.query_one("#run-detail-body", Static)
        if run is None:
            body.update(Text("No run selected.", style="dim"))
            return
        now = time.time()
        self._age = age_since(now, run.updated_at)
        if raw:
            body.update(
                Text(printable_json(json.dumps(run.head, ensure_ascii=False, indent=2)))
            )
            return
        table = head_table(run, link, now, stale_after)
        panel = dangling_panel(
            dangling, live=run.is_live(now, stale_after), unread=bool(problems)
        )
        # The calls first when there are any: what a crashed run left is what
        # a person came for, and below the head it was out of sight at 80x24.
        parts: list[RenderableType] = (
            [panel, table] if dangling else [table, Text(""), panel]
        )
        for problem in [run.unreadable, *problems]:
            if problem:
                parts.append(data_text(f"{UNREADABLE_SHOWN}: {problem}", "bold red"))
        body.update(Group(*parts))

    @property
    def run(self) -> RunInfo | None:
        """The run described."""
        return self._shown[0] if self._shown else None

    def tick(self) -> None:
        """Draw again if the run's age (or staleness) reads differently now."""
        if self._shown is None or self._shown[0] is None:
            return
        run, link, dangling, problems, raw, stale_after = self._shown
        if not raw and age_since(time.time(), run.updated_at) != self._age:
            self.show(run, link, dangling, problems, raw=raw, stale_after=stale_after)
