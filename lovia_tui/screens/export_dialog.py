"""Exporting a session from the app: the file is asked for, never overwritten unasked.

The dialog is pre-filled with the session's export name in the current
directory (see :func:`lovia_tui.core.export.export_name`). A name that is
taken is refused until the user confirms (Replace); a symbolic link, a
directory or a file of an open database at the name is refused outright. The export itself runs in the
flow's worker, its writes in a thread; a failure is one notification.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from lovia_tui.core.actions.actor import serving
from lovia_tui.core.errors import os_error_text
from lovia_tui.core.export import (
    export_name,
    export_session,
    export_to_file,
    free_path,
)
from lovia_tui.core.export_target import ExportError, refusal, target_state
from lovia_tui.core.formatting import plural, printable

if TYPE_CHECKING:
    from lovia_tui.screens.inspector_base import InspectorBase

FORMAT_NAMES = {"md": "Markdown", "json": "JSON"}


@dataclass(frozen=True)
class ExportAnswer:
    """Where to write, and whether the user confirmed replacing a file there."""

    path: Path
    replace: bool


class ExportScreen(ModalScreen[ExportAnswer | None]):
    """Asks for the export file; offers Replace only for the file it warned about."""

    AUTO_FOCUS = "#export-path"
    """Focused as the dialog is composed (a key typed at once lands in it)."""

    BINDINGS = [
        Binding(
            "escape",
            "dismiss(None)",
            "Cancel",
            tooltip="Close without writing anything",
        )
    ]

    def __init__(
        self, session_id: str, fmt: str, path: Path, *, problem: str = "", taken=False
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self.fmt = fmt
        self.path = path
        self.problem = problem
        self.taken = taken
        """``path`` holds a regular file: the button replaces it."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                printable(
                    f"Export session {self.session_id} as {FORMAT_NAMES[self.fmt]}"
                ),
                classes="dialog-title",
                markup=False,
            )
            with VerticalScroll(classes="dialog-form"):
                yield Label("Write to (a new file)", markup=False)
                yield Input(str(self.path), id="export-path", compact=True)
                if self.problem:
                    yield Static(
                        Text(printable(self.problem), style="bold yellow"),
                        id="export-problem",
                    )
            with Horizontal(classes="dialog-buttons"):
                if self.taken:
                    yield Button("Replace", id="export", variant="error", compact=True)
                else:
                    yield Button("Export", id="export", variant="primary", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        typed = self.query_one("#export-path", Input).value.strip()
        if not typed:
            return
        path = Path(typed).expanduser()
        # A confirmation is for the file it was asked about, not an edited name.
        self.dismiss(ExportAnswer(path, self.taken and path == self.path))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


def _problem(path: Path, state: str) -> str:
    if state == "file":
        return f"{path} exists: Replace writes over it"
    return str(refusal(path, state))


async def export_flow(screen: InspectorBase, key: tuple[str, str], fmt: str) -> None:
    """Ask for the file (run as a worker of ``screen``), then export into it."""
    session_id = key[1]
    if serving():
        await _deliver(screen, key, fmt)
        return
    path = await asyncio.to_thread(free_path, Path.cwd(), session_id, fmt)
    databases = [db.path for db in screen.workspace.databases]
    problem, state = "", "free"
    while True:
        answer = await screen.app.push_screen_wait(
            ExportScreen(session_id, fmt, path, problem=problem, taken=state == "file")
        )
        if answer is None:
            return
        path = answer.path
        state = await asyncio.to_thread(target_state, path, databases)
        if state == "free" or (state == "file" and answer.replace):
            break
        problem = _problem(path, state)
    db = screen.workspace.database(Path(key[0]))
    try:
        count = await export_to_file(
            db,
            session_id,
            fmt,
            path,
            replace=state == "file",
            ws=screen.workspace,
            stale_after=screen.stale_after,
        )
    except ExportError as exc:
        screen.notify(f"export refused: {exc}", severity="error")
        return
    except OSError as exc:
        screen.notify(f"export failed: {os_error_text(exc)}", severity="error")
        return
    screen.notify(
        f"exported {plural(count, 'entry', 'entries')} of {session_id} to {path}"
    )


async def _deliver(screen: InspectorBase, key: tuple[str, str], fmt: str) -> None:
    """Under ``serve`` the export is the browser's download, never a server file."""
    session_id = key[1]
    text = io.StringIO()
    try:
        count = await export_session(
            screen.workspace.database(Path(key[0])),
            session_id,
            fmt,
            text,
            ws=screen.workspace,
            stale_after=screen.stale_after,
        )
    except ExportError as exc:
        screen.notify(f"export refused: {exc}", severity="error")
        return
    text.seek(0)
    name = export_name(session_id, fmt)
    screen.app.deliver_text(text, save_filename=name)
    screen.notify(
        f"exported {plural(count, 'entry', 'entries')} of {session_id} as download {name}"
    )
