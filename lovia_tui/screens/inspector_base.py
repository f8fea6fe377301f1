"""What every part of the inspector shares, typed once: its state, its
panes, the selection commands act on, and the few methods one part calls
on another.

The inspector is one screen made of parts, each in its own module (the
transcript's paging, the sessions search, the actions, the live tail, the
runs console). Each part subclasses :class:`InspectorBase`, so what it may
read or call of the others is declared here, and checked (mypy), instead of
found by name at run time.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.worker import Worker

from lovia_tui.commands import BY_ACTION, COMMANDS, INSPECTOR_COMMANDS
from lovia_tui.core.models import RunInfo, SegmentInfo, SessionKey
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.screens.worker_errors import WorkerErrors
from lovia_tui.view.kinds import Pane
from lovia_tui.view.selection import Selection
from lovia_tui.widgets.run_console import RunConsole
from lovia_tui.widgets.runs_pane import RunsPane
from lovia_tui.widgets.sessions_pane import SessionsPane
from lovia_tui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from lovia_tui.core.actions.fork import ForkPreview
    from lovia_tui.core.actions.previews import Preview
    from lovia_tui.screens.action_dialog import FormField
    from lovia_tui.view.transcript_loader import Starts

Build = Callable[[dict[str, str], bool], Awaitable["Preview | ForkPreview"]]
"""An action's preview from the dialog's option values and whether to force."""

KEYS = {command.key: command for command in INSPECTOR_COMMANDS}


class InspectorBase(WorkerErrors):
    """The inspector's state and panes, and what its parts call on each other."""

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
        self.agent_spec = agent_spec
        """--agent: the entry agent resume needs (MODULE:ATTR)."""
        self.deps_spec = deps_spec
        self.session_key: SessionKey | None = None
        """The session the transcript shows (None: a run shown alone, or nothing)."""
        self.run_view: str | None = None
        """The run the transcript shows on its own (no session is known for it)."""
        self.pending_row: str | None = None
        """The row key the transcript puts its cursor on once loaded."""
        self.focus_when_loaded = False
        self.flat_starts: Starts | None = None
        self.search_needle = ""
        self.followed: tuple[Path, str] | None = None
        """(file, run id) of the running run the transcript follows."""
        self.runs_loaded = False
        """The runs (and so the seams' links) have been read once."""
        self.run_raw = False
        """The run detail shows the raw head."""
        self.run_console: RunConsole | None = None
        """The console of resumes and replays, once mounted (on first use)."""
        self._sessions: SessionsPane | None = None
        self._runs: RunsPane | None = None
        self._transcript: Transcript | None = None

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
    def transcript(self) -> Transcript:
        if self._transcript is None:
            self._transcript = self.query_one(Transcript)
        return self._transcript

    @property
    def run_going(self) -> bool:
        """Whether a resume or replay is running in the console."""
        return self.run_console is not None and self.run_console.running

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
            run_going=self.run_going,
        )

    def _on_key_bar(self, action: str) -> bool:
        command = BY_ACTION.get(action)
        return command is None or command.on_key_bar(self.focused_pane)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        command = COMMANDS.get(action)
        if command is None or not self.is_mounted:
            return True
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
            self.notify(reason, severity="warning", timeout=4)

    # ----- what one part calls on another -----

    @abstractmethod
    def load_transcript(self, key: SessionKey, settle: float = 0.0) -> Worker[None]:
        """Read the session's newest batch into the transcript."""

    @abstractmethod
    def load_older(self, key: SessionKey, before_id: int) -> Worker[None]:
        """Read the batch of segments above what the transcript shows."""

    @abstractmethod
    def reload_transcript(self) -> None:
        """Read what the transcript shows again."""

    @abstractmethod
    def load_run_view(self, run: RunInfo) -> Worker[None]:
        """Show a run on its own, behind its seam."""

    @abstractmethod
    def show_run_alone(self, run: RunInfo) -> None:
        """Show a run no record links to a session."""

    @abstractmethod
    def title_transcript(self) -> None:
        """Say in the transcript's title what it shows and where the cursor is."""

    @abstractmethod
    def focus_loaded(self) -> None:
        """Focus the transcript if a jump asked for it once its rows arrived."""

    @abstractmethod
    def follow_inflight(self, run_seqs: dict[str, int]) -> None:
        """Follow the running checkpoint shown at the seam."""

    @abstractmethod
    def follow_session(
        self, file: Path, session_id: str, shown: list[SegmentInfo], total: int
    ) -> None:
        """Watch the session's newest batch, as listed."""

    @abstractmethod
    async def watch_older(self, file: Path) -> None:
        """Watch the next older batch too."""

    @abstractmethod
    async def watch_newer(self, file: Path) -> None:
        """Watch the next newer batch too."""

    @abstractmethod
    async def watch_window(self, file: Path, from_id: int, to_id: int | None) -> None:
        """Watch only the segments the transcript holds."""

    @abstractmethod
    def load_runs(self) -> None:
        """Have the runs pane walk the checkpoint files (RunsLoaded once linked)."""

    @abstractmethod
    def fetch_visible_summaries(self) -> None:
        """Read the summaries of the sessions on screen that lack one."""

    @abstractmethod
    def describe_files(self) -> None:
        """The status line: each file's stores, mode and watch."""

    @abstractmethod
    def action_refresh(self) -> None:
        """Re-read every pane."""

    @abstractmethod
    def action_focus_pane(self, pane: str) -> None:
        """Focus a pane (on a narrow terminal, show it)."""

    @abstractmethod
    def back_a_pane(self) -> None:
        """Focus the pane before this one."""

    @abstractmethod
    def go_to_session(
        self, key: SessionKey, *, focus_row: str | None = None, focus: bool = True
    ) -> None:
        """Select a session (and its row ``focus_row``), focusing its transcript."""

    @abstractmethod
    def open_run(self, run: RunInfo) -> None:
        """Show a run in the transcript: at its session's seam, or alone."""

    # ----- the flows the doctor's fixes go through too -----

    @abstractmethod
    def action_flow(
        self,
        title: str,
        build: Build,
        fields: Sequence[FormField] = (),
        *,
        fork_instead: tuple[str, int] | None = None,
    ) -> Worker[None]:
        """Preview, confirm, perform through lovia (journaled), refresh."""

    @abstractmethod
    def preflight_flow(
        self, mode: str, run_id: str, *, delete_on_success: bool = False
    ) -> Worker[None]:
        """Resume or replay: the preflight dialog, then the console."""

    @abstractmethod
    def action_undo(self, entry_id: int | None = None) -> Worker[None]:
        """Undo a journaled action (the newest on the open files), after asking."""
