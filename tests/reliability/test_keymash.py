"""``--readonly`` means read-only: after every view, and after a key mash.

Both run on a copy of the demo (both layouts: the web UI's WAL file, and the
rollback-journal sessions.db + runs.db). Afterwards every database file is
byte-identical and nothing appeared but SQLite's own empty -wal/-shm of the
WAL database.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.app import watched_app
from support.lovia_factory import copy_db
from support.reliability import (
    assert_untouched,
    digests,
    until,
    visit_transcript,
)
from textual.command import CommandPalette

from lovia_tui.app import make_app
from lovia_tui.commands import INSPECTOR_COMMANDS
from lovia_tui.core.export import export_name
from lovia_tui.pilot import settle
from lovia_tui.screens.export_dialog import ExportScreen
from lovia_tui.screens.help import HelpScreen
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.transcript import Transcript

MASH_STEPS = int(os.environ.get("KEYMASH_STEPS", "100"))
"""Steps, not seconds: the same seed presses the same keys on any machine."""
MASH_SEED = int(os.environ.get("KEYMASH_SEED", "20240611"))
WAL_FILES = ["assistant.db"]  # the demo's only WAL database


@pytest.fixture
def demo_copy(
    demo_dir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A copy of the demo in ``tmp_path/db``; the cwd (where exports go) is apart."""
    directory = tmp_path / "db"
    directory.mkdir()
    for path in demo_dir.files:
        copy_db(path, directory / path.name)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("PAGER", "true")  # `o` must not wait on a real pager
    yield directory


# ------------------------------------------------------------ every view


async def test_browsing_every_view_leaves_every_file_byte_identical(
    demo_copy: Path, demo_dir
) -> None:
    before = digests(demo_copy)
    app = make_app([demo_copy], readonly=True, stale_after=2)
    async with watched_app(app, (120, 32)) as (pilot, watch):
        screen = app.screen
        # A session of each layout: unfolded, raw, exported both ways, paged.
        exported = []
        for session_id in (demo_dir.trip_session, demo_dir.cli_session):
            await pilot.press("1")
            screen.sessions.row_list.cursor = [
                key[1] for key in screen.sessions.shown
            ].index(session_id)
            await settle(pilot)
            await visit_transcript(pilot, most=5)
            for key in ("x", "X"):  # the names it proposes
                await pilot.press(key)
                await until(pilot, lambda: isinstance(app.screen, ExportScreen))
                await pilot.press("enter")
                await settle(pilot)
            await pilot.press("o")
            await settle(pilot)
            exported.append(session_id)
        # Runs of both layouts: detail, raw head; Enter to a seam, to a run alone; follow.
        for run_id in (
            demo_dir.crashed_run,
            demo_dir.failed_run,
            demo_dir.cli_crashed_run,
        ):
            await pilot.press("3")
            assert screen.runs.select_run(run_id)
            await settle(pilot)
            await pilot.press("r", "r", "enter")
            await settle(pilot)
        await visit_transcript(pilot, most=3)
        await pilot.press("3", "f")
        await settle(pilot)
        # Help, filter, content search, the palette (and going to a run from it).
        await pilot.press("question_mark", "pagedown")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "slash", *"ky", "escape", "s", *"rep", "enter")
        await settle(pilot)
        await pilot.press("escape", "ctrl+p", *"run-crashed")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press("enter")
        await settle(pilot)
        assert (
            screen.runs.selected is not None
            and screen.runs.selected.run_id == demo_dir.crashed_run
        )
        await pilot.press("ctrl+r")
        await settle(pilot)
    watch.assert_healthy(app)
    assert {path.name for path in Path.cwd().iterdir()} == {
        export_name(sid, fmt) for sid in exported for fmt in ("md", "json")
    }
    assert_untouched(demo_copy, before, WAL_FILES)


# -------------------------------------------------------------- key mash


def mash_keys() -> list[str]:
    """The app's bindings, letters, digits, moves: everything but quitting."""
    keys = {key for command in INSPECTOR_COMMANDS for key in command.key.split(",")}
    for bindings in (Transcript.BINDINGS, RowList.BINDINGS):
        keys |= {key for binding in bindings for key in binding.key.split(",")}
    keys |= set("abcdefghijklmnoprstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    keys |= {
        "up",
        "down",
        "left",
        "right",
        "enter",
        "escape",
        "tab",
        "shift+tab",
        "space",
    }
    keys |= {"pageup", "pagedown", "home", "end", "backspace", "ctrl+p", "ctrl+r"}
    return sorted(keys - {"q", "ctrl+q", "ctrl+c"})


PALETTE_KEYS = [
    "escape",
    "down",
    "up",
    "a",
    "r",
    "backspace",
]  # never Enter: it could run Quit


async def test_a_key_mash_ends_with_the_app_alive_and_the_files_untouched(
    demo_copy: Path,
) -> None:
    print(f"key mash seed {MASH_SEED} (set KEYMASH_SEED to repeat it)")
    rng = random.Random(MASH_SEED)
    keys = mash_keys()
    before = digests(demo_copy)
    pressed: list[str] = []
    app = make_app([demo_copy], readonly=True, stale_after=2)
    async with watched_app(app, (120, 36)) as (pilot, watch):
        inspector = app.screen
        for _ in range(MASH_STEPS):
            roll = rng.random()
            if roll < 0.08:
                size = (rng.randint(12, 240), rng.randint(4, 70))
                pressed.append(f"resize{size}")
                await pilot.resize_terminal(*size)
            elif roll < 0.16:
                # A burst, faster than the app answers: keys queue up behind workers.
                burst = [rng.choice(keys) for _ in range(rng.randint(3, 8))]
                if isinstance(app.screen, CommandPalette):
                    burst = [rng.choice(PALETTE_KEYS) for _ in burst]
                pressed.append(f"burst{burst}")
                for key in burst:
                    app.simulate_key(key)
                await pilot.pause()
            else:
                pool = PALETTE_KEYS if isinstance(app.screen, CommandPalette) else keys
                key = rng.choice(pool)
                pressed.append(key)
                await pilot.press(key)
            assert app.is_running, (MASH_SEED, pressed[-20:])
        # Dialogs may be open: escape them; the inspector answers as before.
        for _ in range(5):  # bounded
            if app.screen is inspector:
                break
            await pilot.press("escape")
        assert app.screen is inspector
        await pilot.resize_terminal(120, 36)
        await pilot.press("1", "ctrl+r")
        await settle(pilot)
        assert app.is_running and inspector.sessions.keys and inspector.runs.runs
    assert not watch.worker_errors, (
        MASH_SEED,
        pressed[-30:],
        watch.worker_errors,
    )
    watch.assert_healthy(app)
    assert_untouched(demo_copy, before, WAL_FILES)
    print(f"key mash: {len(pressed)} steps")
