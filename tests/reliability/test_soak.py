"""The short soak, in the normal suite: 4 lovia writers for ~10 s while the app
browses, searches, follows, trims, rewinds, clears and deletes on other sessions,
and rewinds, trims and clears the writers' own sessions as they append.
The long one: ``.venv/bin/python benchmarks/soak.py --seconds 600``."""

from __future__ import annotations

import os

import pytest
from support.lovia_factory import scratch_directory
from support.soak.harness import run_soak

SECONDS = float(os.environ.get("SOAK_SECONDS", "10"))


@pytest.mark.soak
async def test_nothing_lost_nothing_locked_nothing_raised() -> None:
    with scratch_directory() as directory:
        report = await run_soak(directory / "soak", SECONDS, writers=4, pace=0.1)
    print("\n".join(report.lines()))
    assert report.rows_written > 100 and report.rows_verified == report.rows_written
    assert (report.lost, report.changed, report.duplicated) == ([], [], [])
    assert report.lock_errors == 0 and report.writer_failures == 0, report.writers
    assert set(report.actions_done) == {"trim", "rewind", "clear", "delete"}, (
        report.app_errors
    )
    assert report.app_errors == [] and report.victims_wrong == []
    # Beside a writer appending every 0.1 s a confirmation often comes too late:
    # refused (the preview shown again) is as right as done; the CLI's
    # test_concurrent_actions proves actions get through beside a writer.
    tried = sum(n for step, n in report.app_steps.items() if step.startswith("live"))
    assert tried >= 1 and report.live_undone == sum(report.live_done.values())
    assert report.ok
