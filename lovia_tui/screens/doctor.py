"""The Doctor view: every finding of the doctor, its fix one key away.

Pushed over the inspector (``!``). A fix goes through the same flows as the
inspector's keys, which it is handed (this module never imports the
inspector, which imports it on first use):
:class:`~lovia_tui.screens.action_flows.ActionFlows` (preview, confirm,
perform, journal, refresh) for actions and undo,
:class:`~lovia_tui.screens.run_flows.RunFlows` (preflight dialog, then the
console) for replay and resume. Once a fix is done the doctor runs again and
the list refreshes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Label, ProgressBar, Static
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from lovia_tui.core.actions.previews import Preview
from lovia_tui.core.doctor.audit import (
    DEFAULT_OLDER_THAN_DAYS,
    Finding,
    Report,
    diagnose,
)
from lovia_tui.core.doctor.findings import SEVERITY_STYLES, FixAction, summary
from lovia_tui.core.doctor.fixes import RUN_FIXES, fix_action, fix_preview
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.formatting import printable
from lovia_tui.core.models import SessionKey
from lovia_tui.screens.action_dialog import FormField
from lovia_tui.screens.action_flows import ActionFlows, session_choice
from lovia_tui.screens.run_flows import RunFlows
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.worker_errors import WorkerErrors

PROGRESS_EVERY = 0.1
FIXES = ("fix", "fix_instead")
READ_ONLY = "the files are open read-only: no fix or undo can change them"


async def _finished(worker: Worker) -> None:
    """Wait for another flow's worker; its own errors were already shown to the user."""
    with contextlib.suppress(WorkerCancelled, WorkerFailed):
        await worker.wait()


class FindingsTable(DataTable[str | Text]):
    """The findings, one a row: j/k move like every other list's."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, tooltip="Next finding"),
        Binding("k", "cursor_up", "Up", show=False, tooltip="Previous finding"),
    ]


class DoctorScreen(WorkerErrors, Screen):
    """Findings in a table, the highlighted one in full below with its fix."""

    DEFAULT_CSS = """
    DoctorScreen #doctor-title { height: 1; background: $boost; text-style: bold; padding: 0 1; }
    DoctorScreen #doctor-progress { height: 1; padding: 0 1; }
    DoctorScreen #doctor-table { height: 1fr; }
    DoctorScreen #doctor-detail { height: auto; max-height: 40%; border-top: solid $panel-lighten-2; padding: 0 1; }
    """

    BINDINGS = [
        Binding("x", "fix", "Apply fix", tooltip="Apply the suggested fix (Enter does too)", id="doctor-fix"),
        Binding("d", "fix_instead('delete-run')", "Delete checkpoint", tooltip="Delete the run's checkpoint instead", id="doctor-delete"),
        Binding("f", "fix_instead('finalize')", "Finalize", tooltip="Finalize the run into its session instead", id="doctor-finalize"),
        Binding("u", "undo", "Undo", tooltip="Undo the last action (a fix's toast says so)", id="doctor-undo"),
        Binding("ctrl+r", "rerun", "Run again", tooltip="Run the doctor again", id="doctor-rerun"),
        Binding("escape,q", "close", "Back", tooltip="Back to the inspector", id="doctor-close"),
    ]  # fmt: skip

    @dataclass
    class Scanning(Message):
        """How far the doctor got."""

        what: str
        fraction: float

    @dataclass
    class Diagnosed(Message):
        """The doctor's report."""

        report: Report

    def __init__(
        self,
        actions: ActionFlows,
        runs: RunFlows,
        sessions: Callable[[], list[SessionKey]],
        *,
        older_than_days: float = DEFAULT_OLDER_THAN_DAYS,
    ) -> None:
        super().__init__()
        self.actions = actions
        self.runs = runs
        self.sessions = sessions
        """The sessions a finalize of an unlinked run may pick from."""
        self.workspace = actions.workspace
        self.stale_after = actions.stale_after
        self.older_than_days = older_than_days
        self.findings: list[Finding] = []
        self.busy: str | None = None
        # How many reports were shown: the doctor ran again once it grows.
        self.audits = 0

    def compose(self) -> ComposeResult:
        yield Label("Doctor · reading…", id="doctor-title", markup=False)
        yield ProgressBar(total=1.0, show_eta=False, id="doctor-progress")
        table = FindingsTable(id="doctor-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("severity", "kind", "run", "session", "finding")
        yield table
        yield Static(id="doctor-detail")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.run_doctor()

    @property
    def current(self) -> Finding | None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        return (
            self.findings[row]
            if self.findings and 0 <= row < len(self.findings)
            else None
        )

    # ----- the audit -----

    @work(exclusive=True, group=Group.DOCTOR)
    async def run_doctor(self) -> None:
        shown = 0.0

        def progress(what: str, fraction: float) -> None:
            nonlocal shown
            if time.monotonic() - shown >= PROGRESS_EVERY:
                shown = time.monotonic()
                self.post_message(self.Scanning(what, fraction))

        report = await diagnose(
            self.workspace,
            stale_after=self.stale_after,
            older_than_days=self.older_than_days,
            progress=progress,
            agent=(self.runs.agent_spec, self.runs.deps_spec),
        )  # a failure reaches the user through WorkerErrors
        self.post_message(self.Diagnosed(report))

    def on_doctor_screen_scanning(self, message: Scanning) -> None:
        self.query_one(ProgressBar).update(progress=message.fraction)
        self.query_one("#doctor-title", Label).update(
            printable(f"Doctor · reading {message.what}…")
        )

    def on_doctor_screen_diagnosed(self, message: Diagnosed) -> None:
        self.audits += 1
        self.query_one(ProgressBar).add_class("hidden")
        table = self.query_one(DataTable)
        row = table.cursor_row
        self.findings = list(message.report.findings)
        table.clear()
        for finding in self.findings:
            table.add_row(
                Text(finding.severity, style=SEVERITY_STYLES[finding.severity]),
                finding.kind,
                Text(printable(finding.run_id or "")),
                Text(printable(finding.session_id or "")),
                Text(printable(finding.message)),
            )
        if self.findings:
            table.move_cursor(row=min(max(row, 0), len(self.findings) - 1))
        self._title()
        self._show_detail()
        self.refresh_bindings()

    def _title(self) -> None:
        found = summary(self.findings) or "no findings: the stores are consistent"
        busy = f" · {self.busy}" if self.busy else ""
        self.query_one("#doctor-title", Label).update(
            printable(f"Doctor · {found}{busy}")
        )

    @on(DataTable.RowHighlighted)
    def _show_detail(self) -> None:
        finding = self.current
        detail = self.query_one("#doctor-detail", Static)
        if finding is None:
            detail.update("")
            return
        text = Text()
        text.append(
            printable(f"{finding.severity} · {finding.kind} · {finding.file.name}")
            + "\n",
            style=SEVERITY_STYLES[finding.severity],
        )
        # What x does before the finding's long story: at 60x15 the detail
        # has four lines and the fix was cut off.
        if finding.fix is not None:
            text.append(
                printable(f"x (or enter) applies the fix: {finding.fix.text}") + "\n",
                style="cyan",
            )
        else:
            text.append("no one-key fix for this finding\n", style="dim")
        text.append(printable(finding.message))
        detail.update(text)

    # ----- fixes -----

    @on(DataTable.RowSelected)
    def _row_chosen(self) -> None:
        self.action_fix()

    def action_fix(self, instead: FixAction | None = None) -> None:
        finding = self.current
        if finding is None or self.busy:
            return
        if self.workspace.readonly:
            self.notify(READ_ONLY, severity="warning")
            return
        try:
            action = fix_action(finding, instead)
        except LoviaTuiError as exc:
            self.notify(str(exc), severity="warning")
            return
        self.apply_fix(finding, action, instead)

    def action_fix_instead(self, action: FixAction) -> None:
        self.action_fix(action)

    @work(exclusive=True, group=Group.DOCTOR_FIX)
    async def apply_fix(
        self, finding: Finding, action: FixAction, instead: FixAction | None
    ) -> None:
        """Hand the fix to its flow, wait for it to end, then audit again."""
        if action in RUN_FIXES:
            assert finding.run_id is not None
            self.busy = f"{action} of {finding.run_id}: waiting for its preflight"
            self._title()
            await _finished(
                self.runs.preflight(action, finding.run_id, delete_on_success=True)
            )
            going = [
                w
                for w in self.app.workers
                if w.group == Group.CONSOLE and not w.is_finished
            ]
            if going:  # confirmed: now it runs
                self.busy = f"{action} of {finding.run_id}: see the console (esc)"
                self._title()
            for worker in going:
                await _finished(worker)
        elif action == "undo" and finding.fix is not None:
            await _finished(self.actions.undo(finding.fix.journal_entry))
        else:
            # Busy until the dialog is answered and the fix done: an audit
            # finishing meanwhile is not the one after the fix.
            self.busy = f"{action}: waiting for its dialog"
            self._title()
            fields = self._fields(finding, action, instead)

            def build(values: dict[str, str], force: bool) -> Awaitable[Preview]:
                chosen = values.get("session")
                return fix_preview(
                    self.workspace, finding, instead=instead,
                    session_id=chosen or None,
                    force=force, stale_after=self.stale_after,
                )  # fmt: skip

            title = f"Doctor: {action} for the {finding.kind} finding"
            await _finished(self.actions.flow(title, build, fields))
        self.busy = None
        self.query_one(ProgressBar).remove_class("hidden")
        self.run_doctor()

    def _fields(
        self, finding: Finding, action: FixAction, instead: FixAction | None
    ) -> list[FormField]:
        """A finalize of a run nothing links to a session asks which session."""
        linked = (
            finding.session_id if instead else finding.fix and finding.fix.session_id
        )
        if action != "finalize" or linked:
            return []
        return [session_choice(self.sessions())]

    @work(exclusive=True, group=Group.DOCTOR_FIX)
    async def action_undo(self) -> None:
        """``u`` as in the inspector (a fix's toast offers it), then audit again."""
        if self.busy:
            return
        await _finished(self.actions.undo())
        self.action_rerun()

    def action_rerun(self) -> None:
        self.query_one(ProgressBar).remove_class("hidden")
        self.run_doctor()

    def action_close(self) -> None:
        self.dismiss()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if _writes(action) and self.workspace.readonly:
            return None  # shown disabled: the files are open read-only
        return True

    def on_key(self, event: events.Key) -> None:
        """A disabled fix's key says why, in one line, as the inspector's do."""
        if self.workspace.readonly and event.key in WRITING_KEYS:
            event.stop()
            event.prevent_default()
            self.notify(READ_ONLY, severity="warning")


def _writes(action: str) -> bool:
    """Whether the doctor's ``action`` (a binding's, parameters and all) changes a file."""
    return action.split("(")[0] in (*FIXES, "undo")


WRITING_KEYS = frozenset(
    key
    for binding in DoctorScreen.BINDINGS
    if isinstance(binding, Binding) and _writes(binding.action)
    for key in binding.key.split(",")
)
"""The doctor's keys that change a file (off when the files are read-only)."""
