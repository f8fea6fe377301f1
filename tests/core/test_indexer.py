"""The search indexes' own process (core/search/indexer.py): it builds, pauses
when told, follows commits, and ends with its app, however the app ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.lovia_factory import append_entries

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.search.file_search import FileSearch
from lovia_tui.core.search.indexer import Indexer
from lovia_tui.core.search.query import parse_query


def _until_built(progress) -> None:
    for step in progress:
        if step is not None and step.done:
            return
    raise AssertionError("the indexer ended before the index was built")


async def test_it_builds_follows_commits_and_ends_when_told(tmp_path: Path):
    path = tmp_path / "s.db"
    await append_entries(path, "first", 3, prefix="harbour")
    indexer = Indexer([(path, False)])
    progress = indexer.progress()
    _until_built(progress)
    indexer.pause(True)
    await append_entries(path, "later", 1, prefix="lighthouse")
    indexer.pause(False)
    search = FileSearch(path)
    try:
        deadline = time.monotonic() + 30
        while search.index.state().seg_count < 4:  # bounded by the deadline
            assert time.monotonic() < deadline, "the new segment was never indexed"
            next(progress)
        found = search.search(parse_query("lighthouse"))
        assert found.scanned == 0 and found.groups[0].session_id == "later"
    finally:
        search.close()
    indexer.stop()
    for _ in progress:  # drained to its end: no error is raised
        pass
    assert indexer.ended


def test_a_file_it_cannot_read_is_one_line(tmp_path: Path):
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not a database" * 100)
    indexer = Indexer([(bad, False)])
    with pytest.raises(LoviaTuiError, match="search index could not be built"):
        for _ in indexer.progress():
            pass


CHILD = """
import sys, time
from pathlib import Path
from lovia_tui.core.search.indexer import Indexer
indexer = Indexer([(Path(sys.argv[1]), False)])
print(indexer.pid, flush=True)
time.sleep(600)  # bounded: the test SIGKILLs this process
"""


async def test_it_ends_when_its_app_is_killed(tmp_path: Path):
    path = tmp_path / "s.db"
    await append_entries(path, "s", 2)
    app = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert app.stdout is not None
    child = int(app.stdout.readline())
    app.send_signal(signal.SIGKILL)
    app.wait()
    deadline = time.monotonic() + 30
    while _alive(child):  # bounded by the deadline
        assert time.monotonic() < deadline, "the indexer outlived its app"
        time.sleep(0.05)  # bounded: polled until the deadline


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, never reaped: its parent was killed) counts as gone.
    state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    return state != "Z"
