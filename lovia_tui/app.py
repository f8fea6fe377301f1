"""The lovia-tui App: opens the workspace, shows the inspector, wires commands.

``make_app`` is the one factory used by the CLI, the tests, the snapshot apps
and the screenshot script.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Import with the cyclic collector off, then freeze what was imported.

    Importing Textual and the app allocates ~70,000 objects that live as long
    as the process; the collector would walk them over and over meanwhile
    (~150 young and ~14 middle passes, 10-25 ms of a ~300 ms start) and in
    every full pass after. Frozen, they are never walked again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


with collector_paused():
    import ctypes
    import time
    from collections.abc import Iterable
    from functools import partial
    from pathlib import Path

    from textual.app import App, SystemCommand
    from textual.notifications import SeverityLevel
    from textual.screen import Screen

    from lovia_tui.commands import BY_ACTION, INSPECTOR_COMMANDS
    from lovia_tui.core.errors import LoviaTuiError
    from lovia_tui.core.formatting import clipped, printable
    from lovia_tui.core.run_status import ALL_RUNS, DEFAULT_STALE_AFTER, STATUS_FILTERS
    from lovia_tui.core.store.workspace import Workspace
    from lovia_tui.screens.first_page import FirstPage
    from lovia_tui.screens.goto import GotoProvider
    from lovia_tui.screens.inspector import InspectorScreen
    from lovia_tui.screens.palette import Palette

FULL_COLLECTION_EVERY = 1_000
"""Second-generation collections before a full one (Python's default: 10)."""
M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter: how many malloc arenas threads may share."""
FIRST_PAGE_ROWS = 60
"""Sessions whose titles are read before the first frame: most terminals; the rest follow."""
FAILURE_SECONDS = 10.0
"""How long a read's failure is shown; the same failure meanwhile is not said again."""


def share_malloc_arenas(arenas: int = 1) -> None:
    """glibc gives each thread that allocates an arena of its own (up to 8 a
    core), and what a thread frees stays in its arena. The app's threads
    (SQLite reads, parsing) allocate little that lives: browsing a
    1M-segment file peaked at 146 MB with one arena, 154 MB with two (one run
    each, same code and file). Elsewhere than glibc: nothing."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(M_ARENA_MAX, arenas)


DONE_BY_OURS = frozenset({"Keys", "Quit"})
"""Textual's palette entries one of the inspector's commands does, left out
there so that each has one entry: Keys (a panel of the focused widget's keys)
is Help (every key and command, from the command list); Quit is `q`, which
first asks while a run is going in the console."""


class LoviaTui(App):
    """A terminal run inspector and debugger for lovia."""

    CSS_PATH = "lovia_tui.tcss"
    TITLE = "lovia-tui"
    COMMANDS = App.COMMANDS | {GotoProvider}

    def __init__(
        self,
        paths: Iterable[str | Path],
        *,
        readonly: bool = False,
        stale_after: float = DEFAULT_STALE_AFTER,
        agent_spec: str | None = None,
        deps_spec: str | None = None,
    ) -> None:
        super().__init__()
        share_malloc_arenas()  # before any of the app's threads allocates
        self.paths = list(paths)
        self.readonly = readonly
        self.stale_after = stale_after
        self.agent_spec = agent_spec
        self.deps_spec = deps_spec
        self.workspace: Workspace | None = None
        self.first_page: FirstPage | None = None
        self.open_error = ""
        """Why the files did not open (the app then exits before it draws)."""
        self.collecting = True
        """Whether the cyclic collector ran before the app paused it."""
        self._failures_shown: dict[str, float] = {}
        """Failures on screen now, with when their notification goes."""

    async def on_load(self) -> None:
        """Open the files and read the first page before anything is drawn:
        the first frame is the inspector with its newest sessions."""
        try:
            self.workspace = await Workspace.open(
                self.paths, readonly=self.readonly, skip_damaged=True
            )
        except LoviaTuiError as exc:
            # Refused before the terminal is taken: no screen flashes, and the
            # command line says why in its one line (``launch_app``).
            self.open_error = printable(exc)
            self.exit(return_code=2)
            return
        # Paused until the first frame is drawn (on_mount): what it builds
        # lives as long as the screen, and the collector would walk it ~70
        # times meanwhile (not frozen: a process may run many apps, tests do).
        self.collecting = gc.isenabled()
        gc.disable()
        # A full collection walks every object (~40-90 ms with a long session
        # loaded) and froze the UI mid-keypress; rows and strips form no
        # cycles, so reference counting frees them and full passes can be rare.
        gen0, gen1, _ = gc.get_threshold()
        gc.set_threshold(gen0, gen1, FULL_COLLECTION_EVERY)
        self.first_page = await FirstPage.read(self.workspace, FIRST_PAGE_ROWS)

    def on_mount(self) -> None:
        self.call_after_refresh(self._resume_collector)

    def get_default_screen(self) -> Screen:
        # Not asked for when the files did not open: on_load ended the app.
        assert self.workspace is not None
        return InspectorScreen(
            self.workspace,
            stale_after=self.stale_after,
            first_page=self.first_page,
            agent_spec=self.agent_spec,
            deps_spec=self.deps_spec,
        )

    def _resume_collector(self) -> None:
        if self.collecting:
            gc.enable()

    async def on_unmount(self) -> None:
        self._resume_collector()  # closed before its first frame
        if self.workspace is not None:
            await self.workspace.close()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification (the screens' ``notify`` comes here too) quotes
        ids, paths and errors: shown as printable text, never read as markup,
        and at most :data:`~lovia_tui.core.formatting.MESSAGE_CHARS` long."""
        super().notify(
            clipped(printable(message)),
            title=clipped(printable(title)),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def say_failure(self, text: str) -> None:
        """A read's failure, said once while its notification is up: every
        read of a live view may meet the same one (a hot journal that
        appeared under ``--readonly``), and a toast each would bury the screen."""
        now = time.monotonic()
        shown = {
            said: until for said, until in self._failures_shown.items() if until > now
        }
        if text not in shown:
            self.notify(text, severity="error", timeout=FAILURE_SECONDS)
            shown[text] = now + FAILURE_SECONDS
        self._failures_shown = shown

    def action_help_quit(self) -> None:
        """Ctrl+C does not quit (in a field it copies): say which key does.
        Textual's own words are markup, and every notification here is shown
        as text, so it is said here in plain words."""
        self.notify(
            f"Press {BY_ACTION['quit'].key_label} to quit the app",
            title="Do you want to quit?",
        )

    def action_command_palette(self) -> None:
        """Show the command palette (ours: Textual's, safe to page at once)."""
        if self.use_command_palette and not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette"))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for textuals in super().get_system_commands(screen):
            if not (
                isinstance(screen, InspectorScreen) and textuals.title in DONE_BY_OURS
            ):
                yield textuals
        if not isinstance(screen, InspectorScreen):
            return
        for command in INSPECTOR_COMMANDS:
            if screen.check_action(command.name, ()):
                yield SystemCommand(
                    command.title, command.help, _runner(screen, command.action)
                )
            elif why := command.why_not(screen.selection):
                # Found with where it acts ("rewind" typed in the sessions
                # pane found nothing, as if there were no such command), but
                # not listed before anything is typed.
                yield SystemCommand(
                    command.title, why, partial(screen.say_why_not, why), discover=False
                )
        for status in [ALL_RUNS, *STATUS_FILTERS]:
            yield SystemCommand(
                f"Runs: show {status} (status filter)",
                "Show every run again"
                if status == ALL_RUNS
                else f"Show only the runs whose status is {status}",
                partial(screen.action_runs_filter, status),
            )


def _runner(screen: Screen, action: str):
    async def run() -> None:
        await screen.run_action(action)

    return run


def make_app(
    paths: Iterable[str | Path],
    *,
    readonly: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
    agent_spec: str | None = None,
    deps_spec: str | None = None,
) -> LoviaTui:
    return LoviaTui(
        paths,
        readonly=readonly,
        stale_after=stale_after,
        agent_spec=agent_spec,
        deps_spec=deps_spec,
    )
