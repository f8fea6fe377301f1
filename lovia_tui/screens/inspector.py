"""The main screen: sessions, transcript and runs side by side.

The screen owns the selection and the workers; every database read runs in a
named worker and reports back by message, and a result for a selection the
user has already left is dropped.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Static

from lovia_tui.commands import INSPECTOR_COMMANDS, PINNED, bindings
from lovia_tui.core.formatting import printable
from lovia_tui.core.models import RunInfo, SessionKey
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.screens.action_flows import ActionFlows
from lovia_tui.screens.live import LiveTail
from lovia_tui.screens.run_flows import RunFlows
from lovia_tui.screens.run_reads import RunReads
from lovia_tui.screens.session_reads import FirstPage, SessionReads
from lovia_tui.screens.session_search import SessionSearch
from lovia_tui.screens.transcript_flows import TranscriptFlows
from lovia_tui.view.kinds import Group, Pane, seam_key
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.run_detail import RunDetail
from lovia_tui.widgets.runs_pane import RunsPane
from lovia_tui.widgets.sessions_pane import SessionsPane
from lovia_tui.widgets.transcript import Transcript

FOCUS_AT_THE_LATEST = 0.3
"""Seconds after a jump to a session when its transcript takes the focus even
if its rows have not arrived (they normally arrive first, with the focus)."""
NARROW_WIDTH = 100
PANES = tuple(pane.value for pane in Pane)


class InspectorScreen(
    SessionReads,
    RunReads,
    TranscriptFlows,
    SessionSearch,
    ActionFlows,
    LiveTail,
    RunFlows,
):
    """Sessions | transcript | runs, with the selected run's head and dangling calls."""

    BINDINGS = bindings(INSPECTOR_COMMANDS)
    AUTO_FOCUS = "#sessions"

    def __init__(
        self,
        workspace: Workspace,
        *,
        stale_after: float,
        first_page: FirstPage | None = None,
        agent_spec: str | None = None,
        deps_spec: str | None = None,
    ) -> None:
        super().__init__(
            workspace,
            stale_after=stale_after,
            agent_spec=agent_spec,
            deps_spec=deps_spec,
        )
        self.first_page = first_page
        self.described = False

    # ----- layout -----

    def compose(self) -> ComposeResult:
        yield Static(id="status-line", markup=False)
        with Horizontal(id="panes"):
            yield SessionsPane(id="sessions-pane", classes="pane")
            with Vertical(id="transcript-pane", classes="pane"):
                yield Label(
                    "Transcript",
                    classes="pane-title",
                    id="transcript-title",
                    markup=False,
                )
                yield Transcript(id="transcript")
            yield RunsPane(self.stale_after, id="runs-pane", classes="pane")
        yield KeyBar(pinned=PINNED, shown=self._on_key_bar)

    def on_mount(self) -> None:
        self.start_live()  # first: it decides each file's watch mode, which the status line shows
        self.describe_files()
        if self.first_page:
            self.sessions.summaries.update(self.first_page.summaries)
            self._show_sessions(self.first_page.keys)
            if self.first_page.runs is not None:
                self.runs.adopt(self.first_page.runs)
        self.load_sessions()
        self.load_runs()
        self.set_interval(1.0, self._tick)

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW_WIDTH, "narrow")
        self._show_focused_pane()

    def describe_files(self) -> None:
        parts = []
        for db in self.workspace.databases:
            stores = "+".join(
                name
                for name, has in (
                    ("sessions", db.stores.session),
                    ("checkpoints", db.stores.checkpoint),
                    ("web", db.stores.chat),
                )
                if has
            )
            mode = "read-only" if db.readonly else db.journal_mode.upper()
            live = self.watch_modes.get(db.path, "watching")
            parts.append(f"{db.name} [{stores}, {mode}, {live}]")
            if db.notice and not self.described:
                self.notify(f"{db.name}: {db.notice}", severity="warning", timeout=8)
        self.query_one("#status-line", Static).update(printable(" · ".join(parts)))
        self.described = True

    def _tick(self) -> None:
        """Ages and staleness move with time, without any key press."""
        self.runs.row_list.refresh_changed()
        self.sessions.row_list.refresh_changed()
        self.query_one(RunDetail).tick()
        self.title_transcript()

    # ----- actions -----

    def action_focus_pane(self, pane: str) -> None:
        target = {
            "sessions": "#sessions",
            "transcript": "#transcript",
            "runs": "#runs",
        }[pane]
        self.query_one(target).focus()
        self._show_focused_pane()

    def action_cycle_pane(self, step: int) -> None:
        panes = list(Pane)
        current = panes.index(self.focused_pane or Pane.SESSIONS)
        self.action_focus_pane(panes[(current + step) % len(panes)])

    def back_a_pane(self) -> None:
        """Esc with nothing to close: the pane before this one (at 80 columns,
        where one pane shows at a time, the way back)."""
        panes = list(Pane)
        current = panes.index(self.focused_pane or Pane.SESSIONS)
        if current:
            self.action_focus_pane(panes[current - 1])

    def action_copy_id(self) -> None:
        """``y``: the id under the cursor to the clipboard (OSC 52)."""
        text = self.selection.id_under_cursor
        if text:
            self.app.copy_to_clipboard(text)
            self.notify(f"copied {text}")

    def on_descendant_focus(self) -> None:
        self._show_focused_pane()

    def _show_focused_pane(self) -> None:
        """On a narrow terminal only the focused pane is shown."""
        focused = self.focused
        for name in PANES:
            pane = self.query_one(f"#{name}-pane")
            pane.set_class(
                focused is not None and pane in focused.ancestors_with_self, "focused"
            )

    def action_toggle_raw(self) -> None:
        if self.focused_pane is Pane.TRANSCRIPT:
            self.transcript.action_raw()
            return
        self.run_raw = not self.run_raw
        self._show_run(self.runs.selected)

    def open_run(self, run: RunInfo) -> None:
        """Show a run in the transcript: at its session's seam, or alone if unlinked."""
        link = self.runs.links.get(run.run_id)
        if link is None:
            self.notify(
                f"run {run.run_id} is unlinked: no record says which session it belongs to; showing it alone"
            )
            self.show_run_alone(run)
            self.action_focus_pane("transcript")
            return
        key = (str(link.file), link.session_id)
        row = (
            seam_key(run.run_id)
            if run.status != RunStatus.COMPLETED or link.kind == "web"
            else None
        )
        self.go_to_session(key, focus_row=row)

    def go_to_session(
        self, key: SessionKey, *, focus_row: str | None = None, focus: bool = True
    ) -> None:
        pane = self.sessions
        # One scan of the list (130,000 keys at a million segments), not three.
        position = _position(pane.shown, key)
        if position is None and pane.narrowed:
            self.action_back()
            position = _position(pane.shown, key)
        self.pending_row = focus_row
        self._select_session(key)
        if position is not None:
            pane.row_list.cursor = position
        if focus:
            # The focus moves with the new rows: moved now, it would repaint
            # the old session's rows and the panes while the new ones are read.
            self.focus_when_loaded = True
            self.set_timer(FOCUS_AT_THE_LATEST, self.focus_loaded)

    def go_to_run(self, run_id: str) -> None:
        if self.runs.select_run(run_id):
            self.action_focus_pane("runs")

    def action_runs_filter(self, status: str) -> None:
        """Filter the runs list, from any pane: the Runs pane shows the result."""
        self.runs.status_filter = status
        self.runs.apply_filter()
        self.action_focus_pane(Pane.RUNS)

    def action_pager(self) -> None:
        row = self.transcript.current_row
        if row is None or row.entry is None:
            return
        from lovia_tui.screens.pager import open_in_pager

        open_in_pager(self.app, row)

    def action_export(self, fmt: str) -> None:
        key = self.selection.session
        if key is None:
            return
        from lovia_tui.screens.export_dialog import export_flow

        self.run_worker(export_flow(self, key, fmt), group=Group.EXPORT, exclusive=True)

    def action_refresh(self) -> None:
        """Re-read every pane: sessions (their counts and titles too), runs,
        the transcript."""
        self.sessions.forget_summaries()
        self.load_sessions()
        self.load_runs()
        self.reload_transcript()

    def action_help(self) -> None:
        from lovia_tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())

    def action_doctor(self) -> None:
        from lovia_tui.screens.doctor import open_doctor

        open_doctor(self)

    def action_quit(self) -> None:
        self.app.exit()


def _position(keys: list[SessionKey], key: SessionKey) -> int | None:
    try:
        return keys.index(key)
    except ValueError:
        return None


__all__ = ["InspectorScreen"]
