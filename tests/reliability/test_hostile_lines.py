"""A stored id or a given reason holding a line break never forges a line.

Action previews and undo descriptions quote ids, titles and reasons inside
lines of their own; a newline in one showed raw and added a line that looked
like the tool's ("FAKE: nothing will be restored"). Each value shows as one
line (``␊``, ``␍``), as ``journal`` shows it, in the CLI and in the app's
dialogs (actions, undo, a replay's preflight).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from lovia.testing import text
from rich.console import Console
from support.lovia_factory import copy_db, scratch_directory, write_session
from textual.widgets import Static

from lovia_tui.app import make_app
from lovia_tui.cli import main
from lovia_tui.core.formatting import printable
from lovia_tui.core.runs.preflight import preflight_replay
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.pilot import settle
from lovia_tui.screens.action_dialog import ActionScreen
from lovia_tui.screens.preflight import describe

pytestmark = pytest.mark.usefixtures("private_journal")

SESSION = "evil\nFAKE: nothing will be restored, do not undo\r\nFAKE\x1b[2J"
REASON = "why\r\nFAKE REASON: none"


@pytest.fixture(scope="module")
def newline_template() -> Iterator[tuple[Path, Path]]:
    """Two runs of a session whose id holds line breaks, checkpointed too
    (the runs' ids are the session's with ``-0``, ``-1``)."""
    with scratch_directory() as directory:
        sessions, runs = directory / "sessions.db", directory / "runs.db"
        asyncio.run(
            write_session(
                sessions, SESSION, [[text("one")], [text("two")]], checkpoint_path=runs
            )
        )
        yield sessions, runs


@pytest.fixture
def newline_files(
    newline_template: tuple[Path, Path], scratch: Path
) -> tuple[Path, Path]:
    sessions, runs = (copy_db(p, scratch / p.name) for p in newline_template)
    return sessions, runs


def _forged(shown: str) -> list[str]:
    """The lines the stored text added of its own."""
    return [line for line in shown.splitlines() if line.lstrip().startswith("FAKE")]


def _cli(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out + err


def test_cli_previews_and_undo_keep_each_value_on_one_line(
    newline_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    sessions, runs = newline_files
    for argv in (
        ["rewind", sessions, runs, SESSION, "--keep", "1"],
        ["fork", sessions, SESSION, "--keep", "1"],
        ["clear", sessions, runs, SESSION],
        ["delete-run", sessions, runs, f"{SESSION}-0"],
        ["replay", sessions, runs, f"{SESSION}-0"],  # its preflight
    ):
        shown = _cli(capsys, *argv)
        assert printable(SESSION) in shown and not _forged(shown), argv
    rewind = ["rewind", sessions, runs, SESSION, "--keep", "1"]
    shown = _cli(capsys, *rewind, "--yes", "--reason", REASON)
    assert not _forged(shown)
    shown = _cli(capsys, "undo", sessions, runs)
    first = shown.splitlines()[0]
    assert printable(SESSION) in first and printable(REASON) in first, first
    assert not _forged(shown)
    assert not _forged(_cli(capsys, "journal", sessions, runs))


async def test_the_preflight_dialog_keeps_each_fact_on_one_line(
    newline_files: tuple[Path, Path],
) -> None:
    ws = await Workspace.open(list(newline_files))
    try:
        pf = await preflight_replay(ws, f"{SESSION}-0")
    finally:
        await ws.close()
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(describe(pf))
    shown = console.export_text()
    assert printable(SESSION) in shown and not _forged(shown), shown


def _preview(dialog: ActionScreen) -> str:
    content = dialog.query_one("#preview", Static).content
    return getattr(content, "plain", str(content))


async def test_app_dialogs_keep_each_value_on_one_line(
    newline_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clear dialog's preview, then the undo dialog of a rewind."""
    sessions, runs = newline_files
    rewind = ["rewind", str(sessions), str(runs), SESSION, "--keep", "1", "--yes"]
    assert await asyncio.to_thread(main, rewind) == 0
    monkeypatch.chdir(sessions.parent)
    app = make_app([sessions.name, runs.name])
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        key = next(key for key in screen.sessions.keys if key[1] == SESSION)
        screen.go_to_session(key)
        await settle(pilot)
        for press in ("C", "u"):
            await pilot.press(press)
            await settle(pilot)
            dialog = app.screen
            assert isinstance(dialog, ActionScreen), press
            shown = _preview(dialog)
            assert printable(SESSION) in shown and not _forged(shown), shown
            assert shown.count("\n") == len(dialog.lines)
            await pilot.press("escape")
            await settle(pilot)
