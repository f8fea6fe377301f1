"""The inspector's panes and the one selection every command acts on.

:class:`~lovia_tui.screens.inspector.InspectorScreen` subclasses it for its
layout and routing; what is here is how a key is judged: the
:class:`~lovia_tui.view.selection.Selection` built from the panes' public
properties, and ``check_action`` / ``on_key`` derived from the command list.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen
from textual.widgets import Input

from lovia_tui.commands import BY_ACTION, COMMANDS, INSPECTOR_COMMANDS
from lovia_tui.core.models import SessionKey
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.screens.action_flows import ActionFlows
from lovia_tui.screens.live import LiveTail
from lovia_tui.screens.run_flows import RunFlows
from lovia_tui.view.kinds import Group, Pane
from lovia_tui.view.selection import Selection
from lovia_tui.widgets.runs_pane import RunsPane
from lovia_tui.widgets.sessions_pane import SessionsPane
from lovia_tui.widgets.status_line import StatusLine
from lovia_tui.widgets.transcript import Transcript
from lovia_tui.widgets.transcript_pane import TranscriptPane
from lovia_tui.widgets.worker_errors import WorkerErrors

KEYS = {command.key: command for command in INSPECTOR_COMMANDS}


class InspectorBase(WorkerErrors, Screen):
    """The panes, the flows, and the selection read from the panes."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        stale_after: float,
        agent_spec: str | None = None,
        deps_spec: str | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.stale_after = stale_after
        self.live = LiveTail(self, workspace)
        self.actions = ActionFlows(self, workspace, stale_after, self.action_refresh)
        self.run_flows = RunFlows(
            self,
            workspace,
            stale_after,
            lambda: self.sessions.keys,
            agent_spec=agent_spec,
            deps_spec=deps_spec,
        )
        self._sessions: SessionsPane | None = None
        self._runs: RunsPane | None = None
        self._transcript_pane: TranscriptPane | None = None

    def describe_files(self) -> None:
        self.query_one(StatusLine).describe(self.workspace, self.live.watch_modes)

    def on_file_trouble(self) -> None:
        self.describe_files()

    def action_refresh(self) -> None:
        """Re-read every pane: sessions (their counts and titles too), runs,
        the transcript; a file called damaged is read again on a new
        connection first (its banner stays if it still fails)."""
        self.describe_files()  # a file replaced on disk meanwhile: its banner
        if any(db.damage for db in self.workspace.databases):
            self.run_worker(
                self._recheck_then_reload(), group=Group.RECHECK, exclusive=True
            )
            return
        self._reload()

    async def _recheck_then_reload(self) -> None:
        for db in self.workspace.databases:
            await db.recheck()
        self.describe_files()
        self._reload()

    def _reload(self) -> None:
        self.run_flows.check_undone()  # after an undo here or in the doctor
        self.sessions.renew()
        self.sessions.load()
        self.runs.load()
        self.transcript_pane.reload()

    # ----- the panes -----
    # Found once: the selection is read for every binding of the key bar (a
    # DOM query each time cost ~0.3 ms a selection, ~15 ms a key bar).

    @property
    def sessions(self) -> SessionsPane:
        if self._sessions is None:
            self._sessions = self.query_one(SessionsPane)
        return self._sessions

    @property
    def runs(self) -> RunsPane:
        if self._runs is None:
            self._runs = self.query_one(RunsPane)
        return self._runs

    @property
    def transcript_pane(self) -> TranscriptPane:
        if self._transcript_pane is None:
            self._transcript_pane = self.query_one(TranscriptPane)
        return self._transcript_pane

    @property
    def transcript(self) -> Transcript:
        return self.transcript_pane.transcript

    @property
    def session_key(self) -> SessionKey | None:
        """The session the transcript shows (None: a run shown alone, or nothing)."""
        return self.transcript_pane.session_key

    # ----- the selection every command acts on -----

    @property
    def focused_pane(self) -> Pane | None:
        focused = self.focused
        if focused is None:
            return None
        for node in focused.ancestors_with_self:
            if node.id and node.id.endswith("-pane") and node.has_class("pane"):
                return Pane(node.id.removesuffix("-pane"))
        return None

    @property
    def selection(self) -> Selection:
        """What the user looks at, read from the panes now."""
        run = self.runs.selected
        pane = self.focused_pane
        return Selection(
            pane=pane,
            # In the list, the highlighted session: the transcript follows it
            # a moment later, and a key pressed meanwhile acts on what is lit.
            session=self.sessions.selected
            if pane is Pane.SESSIONS
            else self.session_key,
            row=self.transcript.current_row,
            run=run,
            run_status=self.runs.status_of(run) if run else None,
            readonly=self.workspace.readonly,
            run_going=self.run_flows.running,
            approval_waiting=self.run_flows.approval_waiting,
        )

    def _on_key_bar(self, action: str) -> bool:
        command = BY_ACTION.get(action)
        if command is not None and command.urgent:
            return self.is_mounted and command.state(self.selection) is True
        return command is None or command.on_key_bar(self.focused_pane)

    def action_approval(self, what: str) -> None:
        """A, V, E: answer the call waiting in the console, or type a reason."""
        self.run_flows.approval(what)

    def action_quit(self) -> None:
        if self.run_flows.may_quit():
            self.app.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        command = COMMANDS.get(action)
        if command is None or not self.is_mounted:
            return True
        if command.typed_after and isinstance(self.focused, Input):
            return False  # its key is typed into the box
        return command.state(self.selection)

    def on_key(self, event: events.Key) -> None:
        """A command's key that does not apply here says why, in one line."""
        command = KEYS.get(event.key)
        if command is None or not self.is_mounted:
            return
        reason = command.why_not(self.selection)
        if reason:
            event.stop()
            event.prevent_default()
            self.say_why_not(reason)

    def say_why_not(self, reason: str) -> None:
        """A command asked for where it does not apply: why, in one line."""
        self.notify(reason, severity="warning", timeout=4)
