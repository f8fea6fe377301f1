"""The runs list's reads: the Runs pane walks and pages the checkpoints
itself (``RunsPane.load``); here the session badges once it is walked, and
the highlighted run's detail (its dangling calls read from its snapshot).

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`. The Runs
pane says when its highlight changes (``RunsPane.Chosen``); the detail is
read for that run, and a result for a run no longer highlighted is dropped.
"""

from __future__ import annotations

from textual import on, work

from lovia_tui import messages
from lovia_tui.core.entries import dangling_calls
from lovia_tui.core.models import RunInfo, SessionKey, SessionLink
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.store import checkpoint_reads
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.run_detail import RunDetail
from lovia_tui.widgets.runs_pane import RunsPane


class RunReads(InspectorBase):
    """Loads the runs list and the highlighted run's detail."""

    def load_runs(self) -> None:
        """The runs pane walks the files; RunsLoaded comes once its links are known."""
        self.runs.load(self.workspace)

    def on_runs_loaded(self, message: messages.RunsLoaded) -> None:
        first = not self.runs_loaded
        self.runs_loaded = True
        if first and self.session_key:
            self.load_transcript(self.session_key)
        self.sessions.badges = self._session_badges(message.runs, message.links)
        self.sessions.row_list.refresh()
        if self.session_key:
            self.runs.highlight_session(self.session_key)
        if self.run_view and (link := self.runs.links.get(self.run_view)):
            # The run shown alone landed in a session (or a record links it
            # now): show it there, where it is, not behind a stale seam.
            self.go_to_session((str(link.file), link.session_id), focus=False)

    def _session_badges(
        self, runs: list[RunInfo], links: dict[str, SessionLink]
    ) -> dict[SessionKey, str]:
        badges: dict[SessionKey, str] = {}
        for run in runs:
            link = links.get(run.run_id)
            status = self.runs.status_of(run)
            if link and status != RunStatus.COMPLETED:
                badges[(str(link.file), link.session_id)] = (
                    "live" if status == RunStatus.RUNNING else status
                )
        return badges

    def on_runs_pane_chosen(self, message: RunsPane.Chosen) -> None:
        self.refresh_bindings()  # resume, replay... depend on the selected run
        self._show_run(message.run)

    @on(RowList.Selected, "#runs")
    def _run_chosen(self) -> None:
        self.action_jump_to_session()

    def _show_run(self, run: RunInfo | None) -> None:
        detail = self.query_one(RunDetail)
        link = self.runs.links.get(run.run_id) if run else None
        detail.show(run, link, [], [], raw=self.run_raw, stale_after=self.stale_after)
        if run:
            self.load_run_detail(run)

    @work(exclusive=True, group=Group.RUN_DETAIL)
    async def load_run_detail(self, run: RunInfo) -> None:
        entries, problems = await checkpoint_reads.snapshot_entries(
            self.workspace.database(run.file), run.run_id
        )
        calls = dangling_calls([entry.data for entry in entries])
        self.post_message(messages.RunDetailLoaded(run.run_id, calls, problems))

    def on_run_detail_loaded(self, message: messages.RunDetailLoaded) -> None:
        run = self.runs.selected
        if run is None or run.run_id != message.run_id:
            return
        self.query_one(RunDetail).show(
            run,
            self.runs.links.get(run.run_id),
            message.dangling,
            message.problems,
            raw=self.run_raw,
            stale_after=self.stale_after,
        )

    def action_jump_to_session(self) -> None:
        if self.runs.selected is not None:
            self.open_run(self.runs.selected)
