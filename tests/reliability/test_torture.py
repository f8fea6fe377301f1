"""Random actions, resumes, doctor fixes and undos from one long-lived process,
beside two lovia writers and the search indexer: the file stays sound.

The seed is printed first; ``TORTURE_SEED`` repeats a run, ``TORTURE_STEPS``
(default 24) makes it longer. See :mod:`support.torture`.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
from support.lovia_factory import integrity
from support.torture import Torturer, chat_rows, seed
from support.writer_process import db_rows, writer

from lovia_tui.core.search.indexer import Indexer
from lovia_tui.core.store.workspace import Workspace

STEPS = int(os.environ.get("TORTURE_STEPS", "24"))


@pytest.mark.parametrize("layout", ["web", "two-file"])
async def test_torture(layout: str, tmp_path: Path) -> None:
    chosen = os.environ.get("TORTURE_SEED")
    the_seed = int(chosen) if chosen else random.SystemRandom().randrange(2**32)
    print(f"torture seed {the_seed} ({layout}): TORTURE_SEED={the_seed} repeats it")
    sys.stdout.flush()
    if layout == "web":
        sessions = runs = tmp_path / "assistant.db"
    else:
        sessions, runs = tmp_path / "sessions.db", tmp_path / "runs.db"
    await seed(sessions, runs)
    files = sorted({sessions, runs})
    seeded_chats = chat_rows(sessions)
    steps: list[str] = []
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    with (
        writer(sessions, "writer-one", tmp_path / "w1", pace=0.02) as one,
        writer(runs, "writer-two", tmp_path / "w2", pace=0.02) as two,
    ):
        indexer = Indexer([(path, False) for path in files])
        ws = await Workspace.open(files)
        try:
            torturer = Torturer(ws, random.Random(the_seed))
            for number in range(STEPS):
                steps.append(await torturer.step())
                for path in files:
                    verdict = integrity(path)
                    assert verdict == "ok", (
                        f"seed {the_seed}, step {number} ({steps}): {path.name}: {verdict}"
                    )
            refused = await torturer.undo_everything()
        finally:
            await ws.close()
            indexer.stop()
    for path in files:
        assert integrity(path) == "ok", f"seed {the_seed}: {path.name}"
    for committed, path in ((one, sessions), (two, runs)):
        stored = set(db_rows(path)[0])
        lost = [row for row in committed.segments if row not in stored]
        assert committed.segments and not lost, (
            f"seed {the_seed}: writer rows lost: {lost}"
        )
    assert not refused, f"seed {the_seed} ({steps}): undo refused: {refused}"
    assert chat_rows(sessions) == seeded_chats, f"seed {the_seed} ({steps})"
    print(
        f"seed {the_seed}: {dict(torturer.tally.done)} done, {dict(torturer.tally.refused)} refused"
    )
