"""Previews in words state one consistent count and say what undo can restore."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lovia import SQLiteSession
from support.lovia_factory import copy_db

from lovia_tui.core.actions.describe import describe
from lovia_tui.core.actions.run_plans import preview_delete_runs
from lovia_tui.core.actions.session_plans import preview_rewind
from lovia_tui.core.actions.trim_plan import preview_trim
from lovia_tui.core.store.workspace import Workspace


@pytest.mark.parametrize("keep", [3, 4, 6, 7, 9])
async def test_a_rewind_preview_counts_what_lovia_keeps(
    two_files: tuple[Path, Path], scratch: Path, keep: int
) -> None:
    ws = await Workspace.open(two_files)
    try:
        lines = describe(await preview_rewind(ws, "s", keep, force=True))
    finally:
        await ws.close()
    kept, total, removed = map(
        int, re.search(r"keep (\d+) of (\d+) entries, remove (\d+)", lines[0]).groups()
    )
    copy = copy_db(two_files[0], scratch / "copy.db")
    assert removed == await SQLiteSession(copy).rewind("s", keep_entries=keep)
    assert kept == len(await SQLiteSession(copy).load("s")) == total - removed
    if cut := [line for line in lines if line.startswith("truncate run")]:
        # The cut segment's count is what lovia leaves of it, within the headline's.
        left = (await SQLiteSession(copy).segments("s"))[-1]
        assert f"truncate run {left.run_id}: keep {len(left.entries)}," in cut[0]
    assert lines[-1].startswith("undo restores the removed entries")


async def test_a_trim_preview_says_the_journal_keeps_what_lovia_loses(
    two_files: tuple[Path, Path],
) -> None:
    ws = await Workspace.open(two_files)
    try:
        lines = describe(await preview_trim(ws, "s", 10, 1))
    finally:
        await ws.close()
    text = "\n".join(lines)
    assert "lost for good" not in text and "gone for the agent" in text
    assert "only lovia-tui's journal keeps the full text" in text
    assert lines[-1].startswith("undo restores the full tool outputs byte for byte")


async def test_checkpoints_in_several_files_are_each_named_with_theirs(
    two_files: tuple[Path, Path], scratch: Path
) -> None:
    """The same run id in two files (a run id that is also a directory in the
    working directory opens that too): each line says which file it is in."""
    copies = []
    for name in ("a", "b"):
        (scratch / name).mkdir()
        copies.append(copy_db(two_files[1], scratch / name / "runs.db"))
    ws = await Workspace.open(copies)
    try:
        lines = describe(await preview_delete_runs(ws, ["crashed"], force=True))
    finally:
        await ws.close()
    named = [line for line in lines if line.startswith("delete checkpoint crashed")]
    assert [line.split(" (")[0] for line in named] == [
        f"delete checkpoint crashed in {copy}" for copy in copies
    ]
