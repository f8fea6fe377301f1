"""The main screen: sessions, transcript and runs side by side.

Thin on purpose: each pane owns its state and its reads (every one a named
worker whose result for a selection the user has left is dropped); the
screen composes them, moves the focus (Esc, a narrow terminal), routes the
panes' messages to one another and the live tail's changes to each pane,
and hands each command its target from the selection
(:class:`~lovia_tui.screens.inspector_base.InspectorBase`) to the flows
shared with the doctor (``ActionFlows``, ``RunFlows``).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal

from lovia_tui import messages
from lovia_tui.commands import INSPECTOR_COMMANDS, PINNED, bindings
from lovia_tui.core.models import RunInfo, SessionKey
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.screens.first_page import FirstPage
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.view.kinds import Group, Pane, seam_key
from lovia_tui.widgets.focus import focus_now
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.runs_pane import RunsPane
from lovia_tui.widgets.sessions_pane import SessionsPane
from lovia_tui.widgets.status_line import StatusLine
from lovia_tui.widgets.transcript_pane import TranscriptPane

if TYPE_CHECKING:
    from lovia_tui.widgets.run_console import RunConsole

FOCUS_AT_THE_LATEST = 0.3
"""Seconds after a jump to a session when its transcript takes the focus even
if its rows have not arrived (they normally arrive first, with the focus)."""
HIGHLIGHT_SETTLE = 0.06
"""Seconds the cursor rests on a session before its transcript is read."""
NARROW_WIDTH = 100
"""Below this many columns one pane shows at a time, the focused one."""
MEDIUM_WIDTH = 120
"""Below this, the side panes give the transcript some of their columns."""
PANES = tuple(pane.value for pane in Pane)


class InspectorScreen(InspectorBase):
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

    # ----- layout -----

    def compose(self) -> ComposeResult:
        runs = RunsPane(
            self.workspace, self.stale_after, id="runs-pane", classes="pane"
        )
        yield StatusLine(id="status-line")
        with Horizontal(id="panes"):
            yield SessionsPane(self.workspace, id="sessions-pane", classes="pane")
            yield TranscriptPane(
                self.workspace, self.live, runs, id="transcript-pane", classes="pane"
            )
            yield runs
        yield KeyBar(pinned=PINNED, shown=self._on_key_bar)

    def on_mount(self) -> None:
        self.live.start()  # first: it decides each file's watch mode, which the status line shows
        self.describe_files()
        first, self.first_page = self.first_page, None
        if first is not None and first.runs is not None:
            self.runs.adopt(first.runs)
        if first is None:
            self.sessions.load()
        else:
            self.sessions.load(first.keys, first.summaries)
        self.runs.load()

    def on_resize(self) -> None:
        width = self.size.width
        self.set_class(width < NARROW_WIDTH, "narrow")
        self.set_class(NARROW_WIDTH <= width < MEDIUM_WIDTH, "medium")
        self._show_focused_pane()

    # ----- actions -----

    def action_focus_pane(self, pane: str) -> None:
        target = {
            "sessions": "#sessions",
            "transcript": "#transcript",
            "runs": "#runs",
        }[pane]
        focus_now(self.query_one(target))
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
        self.runs.toggle_raw()

    # ----- routing between the panes -----

    def on_runs_loaded(self, message: messages.RunsLoaded) -> None:
        self.transcript_pane.runs_known()
        self.sessions.set_badges(self.runs.session_badges(message.runs))
        if self.session_key:
            self.runs.highlight_session(self.session_key)
        run_view = self.transcript_pane.run_view
        if run_view and (link := self.runs.links.get(run_view)):
            # The run shown alone landed in a session (or a record links it
            # now): show it there, where it is, not behind a stale seam.
            self.go_to_session((str(link.file), link.session_id), focus=False)

    def on_runs_pane_chosen(self) -> None:
        self.refresh_bindings()  # resume, replay... depend on the selected run

    def on_runs_pane_opened(self, message: RunsPane.Opened) -> None:
        self.open_run(message.run)

    def on_sessions_pane_highlighted(self, message: SessionsPane.Highlighted) -> None:
        """The transcript follows the list, once the cursor rests (the first
        session at once)."""
        pane = self.transcript_pane
        if message.key != pane.session_key:
            first = pane.session_key is None
            settle = 0.0 if first and pane.run_view is None else HIGHLIGHT_SETTLE
            pane.open_session(message.key, settle=settle)
            self._selected(message.key, first)

    def on_sessions_pane_chosen(self) -> None:
        self.action_focus_pane("transcript")

    def on_sessions_pane_searched(self, message: SessionsPane.Searched) -> None:
        self.transcript_pane.hits.search_for(
            message.query, message.needle, message.keys, self.sessions.content_search
        )

    def on_live_changed(self, message: messages.LiveChanged) -> None:
        """Another process committed: each pane takes its part."""
        changes = message.feed.take()
        self.describe_files()
        self.run_flows.check_undone()  # an undo by another process, perhaps
        if changes.stores_changed or changes.sessions_changed:
            self.action_refresh()
            return
        path = str(message.path)
        run_view = self.transcript_pane.run_view
        if changes.heads or changes.runs_removed:
            self.runs.load()
        if run_view and any(head.run_id == run_view for head in changes.heads):
            self.runs.load()  # once more: the run shown alone may land meanwhile
        if changes.segments:
            self.sessions.bring_to_front(
                [(path, s.session_id) for s in changes.segments]
            )
        if changes.segments or changes.rewritten_sessions:
            # A rewind or trim elsewhere: their run counts and titles changed.
            self.sessions.renew((path, sid) for sid in changes.rewritten_sessions)
        self.transcript_pane.take_live(Path(path), changes)

    def on_run_console_finished(self, message: RunConsole.Finished) -> None:
        self.notify(f"run {message.run_id}: {message.status}")
        self.action_refresh()

    # ----- where to look -----

    def open_run(self, run: RunInfo) -> None:
        """Show a run in the transcript: at its session's seam, or alone if unlinked."""
        link = self.runs.links.get(run.run_id)
        if link is None:
            self.notify(
                f"run {run.run_id} is unlinked: no record says which session it belongs to; showing it alone"
            )
            self.runs.highlight_session(None)
            self.transcript_pane.open_run(run)
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
        """Select a session (its cursor on ``focus_row``), focusing its
        transcript once its rows arrive."""
        first = self.session_key is None
        self.transcript_pane.open_session(key, focus_row=focus_row, focus=focus)
        self._selected(key, first)
        self.sessions.show(key)
        if focus:
            # The focus moves with the new rows: moved now, it would repaint
            # the old session's rows and the panes while the new ones are read.
            self.set_timer(FOCUS_AT_THE_LATEST, self.transcript_pane.focus_loaded)

    def _selected(self, key: SessionKey, first: bool) -> None:
        """A session is shown (``first``: none was): the runs mark its own."""
        if first:
            # Only whether a session is selected matters to the bindings; a
            # refresh on every move would recompose the footer per key press.
            self.refresh_bindings()
        self.runs.highlight_session(key)

    def go_to_run(self, run_id: str) -> None:
        if self.runs.select_run(run_id):
            self.action_focus_pane("runs")

    def action_jump_to_session(self) -> None:
        if self.runs.selected is not None:
            self.open_run(self.runs.selected)

    def action_runs_filter(self, status: str) -> None:
        """Filter the runs list, from any pane: the Runs pane shows the result."""
        self.runs.filter_by(status)
        self.action_focus_pane(Pane.RUNS)

    async def action_filter_sessions(self) -> None:
        await self.sessions.open_filter()  # focused at once: it is in the Sessions pane

    async def action_search_content(self) -> None:
        await self.sessions.open_search()

    def action_next_hit(self, step: int) -> None:
        self.transcript_pane.hits.step(step, self.sessions.step_match)

    def action_back(self) -> None:
        """Esc: the Sessions pane's search or filter first, then a pane back."""
        if not self.sessions.back():
            self.back_a_pane()

    def action_follow(self) -> None:
        """Follow the run selected in the Runs pane, or toggle following."""
        selection, pane = self.selection, self.transcript_pane
        run = selection.run if selection.pane is Pane.RUNS else None
        if run is not None and (
            pane.followed is None or pane.followed[1] != run.run_id
        ):
            pane.follow_enabled = True
            self.open_run(run)
            return
        state = (
            "on: a running run's new entries appear as they are saved"
            if pane.toggle_follow()
            else "off"
        )
        self.notify(f"follow {state}")
        pane.reload()

    # ----- commands handed to the flows shared with the doctor -----

    def action_rewind_here(self) -> None:
        self.actions.rewind_here(self.selection)

    def action_rewind_turn(self) -> None:
        self.actions.rewind_turn(self.selection)

    def action_fork_here(self) -> None:
        self.actions.fork_here(self.selection)

    def action_trim(self) -> None:
        self.actions.trim(self.selection)

    def action_clear_session(self) -> None:
        self.actions.clear_session(self.selection)

    def action_delete_run(self) -> None:
        self.actions.delete_run(self.selection)

    def action_delete_runs_by_filter(self) -> None:
        self.actions.delete_runs_by_filter()

    def action_finalize(self, keep_partial: bool = False) -> None:
        selection = self.selection
        linked = selection.run is not None and selection.run.run_id in self.runs.links
        self.actions.finalize(selection, linked, self.sessions.keys, keep_partial)

    def action_keep_partial(self) -> None:
        self.action_finalize(keep_partial=True)

    def action_undo(self) -> None:
        self.actions.undo()

    def action_resume(self) -> None:
        if (run := self.selection.run) is not None:
            self.run_flows.preflight("resume", run.run_id)

    def action_replay(self) -> None:
        if (run := self.selection.run) is not None:
            self.run_flows.preflight("replay", run.run_id)

    async def action_toggle_console(self) -> None:
        await self.run_flows.toggle_console()

    def action_cancel_run(self) -> None:
        self.run_flows.cancel()

    def action_pager(self) -> None:
        row = self.transcript.current_row
        if row is None or row.entry is None:
            return
        from lovia_tui.screens.pager import open_in_pager

        open_in_pager(self.app, row)

    def action_attachments(self) -> None:
        row = self.transcript.current_row
        if row is None or row.entry is None or not isinstance(row.entry.data, dict):
            return
        from lovia_tui.core.attachments import attachments
        from lovia_tui.screens.attachments import AttachmentsScreen
        from lovia_tui.view.rows import index_text

        title = f"Attachments of entry {index_text(row)}"
        self.app.push_screen(AttachmentsScreen(title, attachments(row.entry.data)))

    def action_export(self, fmt: str) -> None:
        key = self.selection.session
        if key is None:
            return
        from lovia_tui.screens.export_dialog import export_flow

        flow = partial(export_flow, self, key, fmt)
        self.run_worker(flow, group=Group.EXPORT, exclusive=True)

    def action_help(self) -> None:
        from lovia_tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())

    def action_doctor(self) -> None:
        from lovia_tui.screens.doctor import DoctorScreen

        sessions = self.sessions
        self.app.push_screen(
            DoctorScreen(self.actions, self.run_flows, lambda: sessions.keys)
        )


__all__ = ["InspectorScreen"]
