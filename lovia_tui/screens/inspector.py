"""The main screen: sessions, transcript and runs side by side.

The screen owns the selection and the workers; every database read runs in a
named worker and reports back by message, and a result for a selection the
user has already left is dropped.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, Label, Static

from lovia_tui import messages
from lovia_tui.commands import INSPECTOR_COMMANDS, RUN_STATUS_FILTERS, bindings
from lovia_tui.core import queries
from lovia_tui.core.entries import dangling_calls
from lovia_tui.core.models import RunInfo, SessionSummary
from lovia_tui.core.workspace import Workspace
from lovia_tui.screens.action_flows import ActionFlows
from lovia_tui.screens.live import LiveTail
from lovia_tui.screens.run_flows import RunFlows
from lovia_tui.screens.worker_errors import EXPECTED, WorkerErrors
from lovia_tui.transcript_loader import (
    Inflight,
    newer_rows,
    newest_batch,
    older_rows,
    session_rows,
    set_indices,
)
from lovia_tui.widgets.key_bar import KeyBar
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.run_detail import RunDetail
from lovia_tui.widgets.runs_pane import RunsPane
from lovia_tui.widgets.sessions_pane import SessionKey, SessionsPane
from lovia_tui.widgets.transcript import Transcript

FIRST_PAGE = 200
HIGHLIGHT_SETTLE = 0.06
FOCUS_AT_THE_LATEST = 0.3
"""Seconds after a jump to a session when its transcript takes the focus even
if its rows have not arrived (they normally arrive first, with the focus)."""
SEARCH_PROGRESS_EVERY = 0.25
NARROW_WIDTH = 100
PANES = ("sessions", "transcript", "runs")
SESSION_ACTIONS = {"rewind_here", "rewind_turn", "trim", "clear_session", "export"}
RUN_ACTIONS = {"delete_run", "finalize"}
MUTATIONS = {
    "rewind_here",
    "rewind_turn",
    "trim",
    "clear_session",
    "delete_run",
    "delete_runs_by_filter",
    "finalize",
    "undo",
    "resume",
    "replay",
}


@dataclass(frozen=True)
class FirstPage:
    """The newest sessions and the summaries of a screenful of them, read
    before the screen is composed so that its first frame shows them."""

    keys: list[SessionKey]
    summaries: dict[SessionKey, SessionSummary]

    @classmethod
    async def read(cls, workspace: Workspace, rows: int) -> FirstPage | None:
        try:
            keys = await workspace.recent_sessions(FIRST_PAGE)
            return cls(keys, await workspace.summaries(keys[:rows]))
        except EXPECTED:
            return None  # the screen's own worker reads again and says why


class InspectorScreen(WorkerErrors, ActionFlows, LiveTail, RunFlows, Screen):
    """Sessions | transcript | runs, with the selected run's head and dangling calls."""

    BINDINGS = bindings(INSPECTOR_COMMANDS)
    AUTO_FOCUS = "#sessions"

    def __init__(
        self,
        workspace: Workspace,
        *,
        stale_after: float,
        first_page: FirstPage | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.first_page = first_page
        self.stale_after = stale_after
        self.session_key: SessionKey | None = None
        self.run_raw = False
        self.filter_mode = "filter"
        self.search_needle = ""
        self.pending_row: str | None = None
        self.flat_starts: dict[int, int | None] | None = None
        self.tails = {}
        self.watch_modes = {}
        self.described = False
        self.focus_when_loaded = False
        self.runs_loaded = False

    # ----- layout -----

    def compose(self) -> ComposeResult:
        yield Static(id="status-line")
        with Horizontal(id="panes"):
            yield SessionsPane(id="sessions-pane", classes="pane")
            with Vertical(id="transcript-pane", classes="pane"):
                yield Label("Transcript", classes="pane-title", id="transcript-title")
                yield Transcript(id="transcript")
            yield RunsPane(self.stale_after, id="runs-pane", classes="pane")
        yield KeyBar()

    @property
    def sessions(self) -> SessionsPane:
        return self.query_one(SessionsPane)

    @property
    def runs(self) -> RunsPane:
        return self.query_one(RunsPane)

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    def on_mount(self) -> None:
        self.start_live()  # first: it decides each file's watch mode, which the status line shows
        if self.first_page:
            self.sessions.summaries.update(self.first_page.summaries)
            self._show_sessions(self.first_page.keys)
        self.load_sessions()
        self.load_runs()
        self.set_interval(1.0, self._tick)

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW_WIDTH, "narrow")
        self._show_focused_pane()

    def _describe_files(self) -> None:
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
        self.query_one("#status-line", Static).update(" · ".join(parts))
        self.described = True

    def _tick(self) -> None:
        """Ages and staleness move with time, without any key press."""
        self.runs.row_list.refresh_changed()
        self.sessions.row_list.refresh_changed()
        self._title_transcript()

    # ----- sessions -----

    @work(exclusive=True, group="sessions")
    async def load_sessions(self) -> None:
        """First the newest page (a short walk), then the full index in the background."""
        if self.first_page is None:
            keys = await self.workspace.recent_sessions(FIRST_PAGE)
            self.post_message(messages.SessionsLoaded(keys))
        else:
            keys, self.first_page = self.first_page.keys, None
        index: dict[SessionKey, int] = {}
        for db in self.workspace.session_dbs:
            async for chunk, _ in queries.session_index(db):
                for session_id, (_, last_id) in chunk.items():
                    key = (str(db.path), session_id)
                    index[key] = max(index.get(key, 0), last_id)
        first = set(keys)
        rest = sorted(
            (k for k in index if k not in first), key=lambda k: index[k], reverse=True
        )
        self.post_message(messages.SessionsLoaded(keys + rest))
        # The index is most of what lives as long as the app: keeping it out of
        # full garbage collections spares the UI their ~90 ms pauses.
        gc.freeze()

    def on_sessions_loaded(self, message: messages.SessionsLoaded) -> None:
        self._show_sessions(message.keys)

    def _show_sessions(self, keys: list[SessionKey]) -> None:
        pane = self.sessions
        pane.set_keys(keys)
        if self.session_key is None and self.run_view is None and pane.selected:
            self._select_session(pane.selected)
        self.fetch_visible_summaries()

    def fetch_visible_summaries(self) -> None:
        pane = self.sessions
        if not all(key in pane.summaries for key in pane.visible_keys()):
            self._read_summaries()

    @work(exclusive=True, group="summaries")
    async def _read_summaries(self) -> None:
        pane = self.sessions
        # A screenful ahead each way: scrolling row by row then reads once a
        # screen, not once a key.
        found = await self.workspace.summaries(
            key for key in pane.visible_keys(margin=1) if key not in pane.summaries
        )
        if found:
            self.post_message(messages.SummariesLoaded(found))

    def on_summaries_loaded(self, message: messages.SummariesLoaded) -> None:
        pane = self.sessions
        pane.summaries.update(message.summaries)
        # Redraw only the rows that got their summary, not the whole list.
        top = int(pane.row_list.scroll_offset.y)
        for offset, key in enumerate(pane.visible_keys()):
            if key in message.summaries:
                pane.row_list.refresh_line(top + offset)

    @on(RowList.Highlighted, "#sessions")
    def _session_highlighted(self, event: RowList.Highlighted) -> None:
        self.fetch_visible_summaries()
        key = self.sessions.selected
        if key and key != self.session_key:
            self._select_session(key, settle=HIGHLIGHT_SETTLE)

    @on(RowList.Selected, "#sessions")
    def _session_chosen(self) -> None:
        self.action_focus_pane("transcript")

    def _select_session(self, key: SessionKey, *, settle: float = 0.0) -> None:
        first = self.session_key is None
        self.session_key = key
        self.run_view = None
        if first:
            # Only whether a session is selected matters to the bindings; a
            # refresh on every move would recompose the footer per key press.
            self.refresh_bindings()
        self.runs.highlight_session(key)
        self.query_one("#transcript-title", Label).update(
            f"Transcript · {key[1]} · loading…", layout=False
        )
        if self.runs_loaded:
            # Otherwise on_runs_loaded loads it: the seam needs the runs' links.
            self.load_transcript(key, settle)

    # ----- transcript -----

    @work(exclusive=True, group="transcript")
    async def load_transcript(self, key: SessionKey, settle: float = 0.0) -> None:
        if settle:
            # Moving through the list: load once the cursor rests, not for
            # every session passed over (each one repaints the whole screen).
            await asyncio.sleep(settle)
        db = self.workspace.database(Path(key[0]))
        batch, older = listed = await newest_batch(db, key[1])
        self.follow_session(db.path, key[1], batch, older + len(batch))
        rows, seqs = await session_rows(db, key[1], listed, self._inflight(key))
        self.post_message(messages.TranscriptLoaded(key, rows, seqs))
        # Shown first; the flat indices need every older segment counted.
        self.post_message(
            messages.IndicesCounted(key, await queries.flat_starts(db, key[1]))
        )

    def on_transcript_loaded(self, message: messages.TranscriptLoaded) -> None:
        if message.key != self.session_key:
            return
        self.flat_starts = None
        self.transcript.show(message.rows)
        self.transcript.set_needle(self.search_needle)
        self.follow_inflight(message.run_seqs)
        if self.pending_row:
            self.transcript.select_key(self.pending_row)
            self.pending_row = None
        self._focus_loaded()
        self._title_transcript()

    def _inflight(self, key: SessionKey) -> Inflight:
        return [
            (self.workspace.database(run.file), run, self.runs.status_of(run))
            for run in self.runs.runs
            if (link := self.runs.links.get(run.run_id))
            and (str(link.file), link.session_id) == key
        ]

    def on_indices_counted(self, message: messages.IndicesCounted) -> None:
        if message.key == self.session_key:
            self.flat_starts = message.starts
            set_indices(self.transcript.rows, message.starts)
            self.transcript.refresh()

    def reload_transcript(self) -> None:
        if self.session_key:
            self.load_transcript(self.session_key)
        elif self.run_view and (run := self.runs.find(self.run_view)):
            self.load_run_view(run)

    def _title_transcript(self) -> None:
        transcript = self.transcript
        if self.session_key:
            title = f"Transcript · {self.session_key[1]} · {transcript.entries:,} entries shown · {transcript.position}"
        elif self.run_view:
            title = f"Run {self.run_view} · session unknown · {transcript.entries:,} entries · {transcript.position}"
        else:
            return
        if self.followed:
            title += f" · following {self.followed[1]}"
        if self.transcript.new_below:
            title += f" · {self.transcript.new_below} new entries ↓"
        label = self.query_one("#transcript-title", Label)
        if title != label.content:
            label.update(title, layout=False)

    def on_transcript_row_highlighted(self) -> None:
        self._title_transcript()

    @on(Transcript.LoadOlder)
    def _load_older(self) -> None:
        rows = self.transcript.rows
        if self.session_key and rows and rows[0].kind == "older":
            self.load_older(self.session_key, rows[0].extra["before"])

    @work(exclusive=True, group="older")
    async def load_older(self, key: SessionKey, before_id: int) -> None:
        db = self.workspace.database(Path(key[0]))
        await self.watch_older(db.path)
        rows = await older_rows(db, key[1], before_id, self.flat_starts)
        self.post_message(messages.OlderLoaded(key, rows))

    def on_older_loaded(self, message: messages.OlderLoaded) -> None:
        if message.key == self.session_key:
            if self.flat_starts is not None:
                set_indices(
                    message.rows, self.flat_starts
                )  # counted while this batch loaded
            self.transcript.prepend(message.rows)
            self._watch_window()

    @on(Transcript.LoadNewer)
    def _load_newer(self) -> None:
        rows = self.transcript.rows
        if self.session_key and rows and rows[-1].kind == "newer":
            self.load_newer(self.session_key, rows[-1].extra["after"])

    @work(exclusive=True, group="newer")
    async def load_newer(self, key: SessionKey, after_id: int) -> None:
        db = self.workspace.database(Path(key[0]))
        await self.watch_newer(db.path)
        rows, seqs = await newer_rows(
            db, key[1], after_id, self.flat_starts, self._inflight(key)
        )
        self.post_message(messages.NewerLoaded(key, rows, seqs))

    def on_newer_loaded(self, message: messages.NewerLoaded) -> None:
        if message.key == self.session_key:
            if self.flat_starts is not None:
                set_indices(message.rows, self.flat_starts)
            self.transcript.append_newer(message.rows)
            if message.run_seqs:
                self.follow_inflight(message.run_seqs)
            self._watch_window()

    def _watch_window(self) -> None:
        """The live tail watches the segments the transcript still holds."""
        rows = self.transcript.rows
        ids = [
            row.segment.row_id for row in rows if row.kind == "segment" and row.segment
        ]
        if self.session_key and ids:
            to_id = ids[-1] if rows[-1].kind == "newer" else None
            file = Path(self.session_key[0])
            self.run_worker(
                self.watch_window(file, ids[0], to_id), group="watch", exclusive=True
            )

    # ----- runs -----

    @work(exclusive=True, group="runs")
    async def load_runs(self) -> None:
        runs = await self.workspace.all_runs()
        links = await self.workspace.links(run.run_id for run in runs)
        self.post_message(messages.RunsLoaded(runs, links))

    def on_runs_loaded(self, message: messages.RunsLoaded) -> None:
        first = not self.runs_loaded
        self.runs_loaded = True
        before = _run_keys_state(self.runs.selected)
        self.runs.set_runs(message.runs, message.links)
        if before != _run_keys_state(self.runs.selected):
            # Resume, replay, delete... depend on the selected run: the footer too.
            self.refresh_bindings()
        if first and self.session_key:
            self.load_transcript(self.session_key)
        self.sessions.badges = self._session_badges(message.runs, message.links)
        self.sessions.row_list.refresh()
        if self.session_key:
            self.runs.highlight_session(self.session_key)
        self._show_run(self.runs.selected)

    def _session_badges(self, runs: list[RunInfo], links) -> dict[SessionKey, str]:
        badges: dict[SessionKey, str] = {}
        for run in runs:
            link = links.get(run.run_id)
            status = self.runs.status_of(run)
            if link and status != "completed":
                badges[(str(link.file), link.session_id)] = (
                    "live" if status == "running" else status
                )
        return badges

    @on(RowList.Highlighted, "#runs")
    def _run_highlighted(self) -> None:
        self.refresh_bindings()
        self._show_run(self.runs.selected)

    @on(RowList.Selected, "#runs")
    def _run_chosen(self) -> None:
        self.action_jump_to_session()

    def _show_run(self, run: RunInfo | None) -> None:
        detail = self.query_one(RunDetail)
        link = self.runs.links.get(run.run_id) if run else None
        detail.show(run, link, [], [], raw=self.run_raw, stale_after=self.stale_after)
        if run:
            self.load_run_detail(run)

    @work(exclusive=True, group="run-detail")
    async def load_run_detail(self, run: RunInfo) -> None:
        entries, problems = await queries.snapshot_entries(
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
        current = next(
            (
                name
                for name in PANES
                if self.query_one(f"#{name}-pane").has_class("focused")
            ),
            PANES[0],
        )
        self.action_focus_pane(PANES[(PANES.index(current) + step) % len(PANES)])

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

    async def action_filter_sessions(self) -> None:
        await self._open_input(
            "filter", "filter by id or title", self.sessions.filter_text
        )

    async def action_search_content(self) -> None:
        await self._open_input(
            "search",
            "search message text (Enter to start, Esc to cancel)",
            self.search_needle,
        )

    async def _open_input(self, mode: str, placeholder: str, value: str) -> None:
        self.filter_mode = mode
        box = await self.sessions.filter_box()
        box.placeholder, box.value = placeholder, value
        box.remove_class("hidden")
        self.action_focus_pane("sessions")
        box.focus()

    @on(Input.Changed, "#session-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if self.filter_mode == "filter":
            self.sessions.filter_text = event.value
            self.sessions.apply_filter()

    @on(Input.Submitted, "#session-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if self.filter_mode == "search" and event.value:
            self.search_needle = event.value
            self.sessions.matches = set()
            self.sessions.apply_filter()
            self._search_progress("searching… (esc cancels)")
            self.search(event.value)
        self.sessions.row_list.focus()

    @work(exclusive=True, group="search")
    async def search(self, needle: str) -> None:
        found: dict[SessionKey, None] = {}
        posted = 0.0
        for db in self.workspace.session_dbs:
            async for matches, fraction in queries.search_segments(db, needle):
                found.update(((str(db.path), sid), None) for sid, _ in matches)
                # Chunks take ~25 ms: report at most every SEARCH_PROGRESS_EVERY
                # so the UI is not busy re-filtering the list all along.
                if time.monotonic() - posted >= SEARCH_PROGRESS_EVERY:
                    posted = time.monotonic()
                    self.post_message(
                        messages.SearchProgress(
                            needle, list(found), fraction, done=False
                        )
                    )
        self.post_message(messages.SearchProgress(needle, list(found), 1.0, done=True))

    def on_search_progress(self, message: messages.SearchProgress) -> None:
        if message.needle != self.search_needle:
            return
        self._search_progress(f"searching {message.fraction:.0%} (esc cancels)")
        keys = set(message.keys)
        if message.done or keys != self.sessions.matches:
            # Re-filtering walks every session: only when the matches changed.
            self.sessions.matches = keys
            self.sessions.apply_filter()
            self.transcript.set_needle(self.search_needle)
        if message.done:
            self._search_progress("")
            self.notify(f"{len(message.keys)} session(s) contain {message.needle!r}")

    def _search_progress(self, text: str) -> None:
        """A search's progress, in the sessions title: no bar to lay out."""
        self.sessions.progress = text
        self.sessions.show_title()

    def action_back(self) -> None:
        if self.workers and any(
            w.group == "search" and w.is_running for w in self.workers
        ):
            self.workers.cancel_group(self, "search")
            self._search_progress("")
            self.notify("search cancelled")
            return
        if (
            self.sessions.filter_open
            or self.sessions.matches is not None
            or self.sessions.filter_text
        ):
            for box in self.query("#session-filter").results(Input):
                box.add_class("hidden")
                box.value = ""
            self.sessions.filter_text = ""
            self.sessions.matches = None
            self.search_needle = ""
            self.transcript.set_needle("")
            self.sessions.apply_filter()
            self.sessions.row_list.focus()
            return
        self.focus_previous()

    def action_toggle_raw(self) -> None:
        if self.focused is self.transcript:
            self.transcript.action_raw()
            return
        self.run_raw = not self.run_raw
        self._show_run(self.runs.selected)

    def action_jump_to_session(self) -> None:
        if self.runs.selected is not None:
            self.open_run(self.runs.selected)

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
            f"seam:{run.run_id}"
            if run.status != "completed" or link.kind == "web"
            else None
        )
        self.go_to_session(key, focus_row=row)

    def go_to_session(self, key: SessionKey, *, focus_row: str | None = None) -> None:
        pane = self.sessions
        # One scan of the list (130,000 keys at a million segments), not three.
        position = _position(pane.shown, key)
        if position is None and (pane.filter_text or pane.matches is not None):
            self.action_back()
            position = _position(pane.shown, key)
        self.pending_row = focus_row
        self._select_session(key)
        if position is not None:
            pane.row_list.cursor = position
        # The focus moves with the new rows: moved now, it would repaint the
        # old session's rows and the panes while the new ones are read.
        self.focus_when_loaded = True
        self.set_timer(FOCUS_AT_THE_LATEST, self._focus_loaded)

    def _focus_loaded(self) -> None:
        if self.focus_when_loaded:
            self.focus_when_loaded = False
            self.action_focus_pane("transcript")

    def go_to_run(self, run_id: str) -> None:
        if self.runs.select_run(run_id):
            self.action_focus_pane("runs")

    def action_runs_filter(self, status: str) -> None:
        self.runs.status_filter = status
        self.runs.apply_filter()

    def action_pager(self) -> None:
        row = self.transcript.current_row
        if row is None or row.entry is None:
            return
        from lovia_tui.screens.pager import open_in_pager

        open_in_pager(self.app, row)

    def action_export(self, fmt: str) -> None:
        if self.session_key is None:
            self.notify("select a session first", severity="warning")
            return
        self.export(self.session_key, fmt)

    @work(exclusive=True, group="export")
    async def export(self, key: SessionKey, fmt: str) -> None:
        from lovia_tui.core.export import export_session

        target = Path.cwd() / f"{_safe_name(key[1])}.{fmt}"
        db = self.workspace.database(Path(key[0]))
        await export_session(db, key[1], fmt, target)
        self.notify(f"exported {key[1]} to {target}")

    def action_refresh(self) -> None:
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        run = self.runs.selected if self.is_mounted else None
        if action in MUTATIONS and self.workspace.readonly:
            return None  # hidden: the files are open read-only
        if action in SESSION_ACTIONS:
            return None if self.session_key is None else True
        if action in RUN_ACTIONS:
            return None if run is None else True
        if action == "resume":
            return (
                None
                if run is None or run.status == "completed" or self.workspace.readonly
                else True
            )
        if action == "replay":
            return (
                None
                if run is None or run.status != "completed" or self.workspace.readonly
                else True
            )
        if action == "cancel_run":
            return True if self.run_going else None
        if action == "jump_to_session":
            return None if run is None else True
        return True


def _run_keys_state(run: RunInfo | None) -> tuple[bool, bool]:
    """What check_action reads from the selected run (so the footer knows when to update)."""
    return run is None, run is not None and run.status == "completed"


def _position(keys: list[SessionKey], key: SessionKey) -> int | None:
    try:
        return keys.index(key)
    except ValueError:
        return None


def _safe_name(text: str) -> str:
    return (
        "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80]
        or "session"
    )


__all__ = ["InspectorScreen", "RUN_STATUS_FILTERS"]
