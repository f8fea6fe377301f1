"""``lovia-tui search`` and ``lovia-tui index`` on files written by lovia."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry
from rich.cells import cell_len
from support.lovia_factory import build_two_files

from lovia_tui.cli import main
from lovia_tui.core.search.index import index_path


def cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(scratch: Path) -> tuple[Path, Path]:
    return asyncio.run(build_two_files(scratch))


def test_search_finds_sessions_and_in_flight_runs(capsys, files):
    sessions, runs = files
    code, out, err = cli(
        capsys, "search", sessions, runs, "echoed", "--json", "--progress"
    )
    assert code == 0 and "indexing sessions.db" in err and "(100%)" in err
    found = json.loads(out)
    assert found["scanned_rows"] == 0 and found["entry_cap"] == 4000
    [hit] = found["results"]  # its completed checkpoints are the same session's
    assert (hit["session_id"], hit["entry_index"], hit["in_flight"]) == ("s", 3, False)
    assert "Echoed one." in hit["snippet"]
    # "x" is only in the crashed run's dangling call: linked to "s" by nothing.
    code, out, _ = cli(capsys, "search", sessions, runs, 'tool:echo "x"', "--json")
    [flying] = json.loads(out)["results"]
    assert (flying["run_id"], flying["in_flight"]) == ("crashed", True)


def test_human_output_shows_stored_text_inert(capsys, scratch: Path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    path = scratch / "hostile.db"
    hostile = "beacon \x1b[2J\x1b]0;owned\x07 [bold red]markup[/] \u202eevil"
    asyncio.run(
        SQLiteSession(path, wal=True).append(
            "s\x1b[31m",
            [
                InputEntry(role="user", content=hostile),
                AssistantTextEntry(content="ok"),
            ],
        )
    )
    code, out, _ = cli(capsys, "search", path, "beacon")
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "[bold red]markup[/]" in out and "␛[2J" in out


def test_a_table_of_emoji_keeps_its_borders_straight(
    capsys, scratch: Path, monkeypatch
):
    """☀️ (with its emoji selector) is one cell in most terminals and two to
    Rich: the selector is dropped, so every row's borders line up."""
    monkeypatch.setenv("COLUMNS", "200")
    path = scratch / "sunny.db"
    asyncio.run(
        SQLiteSession(path, wal=True).append(
            "s☀️",
            [
                InputEntry(role="user", content="sunny ☀️ and 🗓️ dated"),
                AssistantTextEntry(content="ok"),
            ],
        )
    )
    code, out, _ = cli(capsys, "search", path, "sunny")
    assert code == 0 and "\ufe0f" not in out and "sunny ☀ and 🗓 dated" in out
    rows = [line for line in out.splitlines() if line.startswith(("┃", "│"))]
    assert len({line.count("│") + line.count("┃") for line in rows}) == 1
    assert len({cell_len(line) for line in rows}) == 1


def test_index_status_drop_and_readonly(capsys, files):
    sessions, _ = files
    sqlite3.connect(sessions).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    before = hashlib.sha256(sessions.read_bytes()).hexdigest()
    code, out, _ = cli(capsys, "index", sessions, "--status", "--json", "--readonly")
    [status] = json.loads(out)["files"]
    assert code == 0 and not status["complete"] and status["indexed_rows"] == 0
    code, out, _ = cli(capsys, "index", sessions, "--readonly")
    assert code == 0 and "3/3 rows indexed" in out and str(index_path(sessions)) in out
    code, out, _ = cli(capsys, "search", sessions, "echoed", "--readonly", "--json")
    assert json.loads(out)["results"]
    assert hashlib.sha256(sessions.read_bytes()).hexdigest() == before
    code, out, _ = cli(capsys, "index", sessions, "--drop")
    assert code == 0 and out.startswith("dropped") and not index_path(sessions).exists()


def test_a_query_with_nothing_to_find_is_one_line(capsys, files):
    sessions, _ = files
    code, out, err = cli(capsys, "search", sessions, '"" !!!')
    assert (
        code == 2 and out == "" and err.startswith("lovia-tui: nothing to search for")
    )


def test_without_a_writable_cache_searches_scan(capsys, files, scratch, monkeypatch):
    sessions, _ = files
    blocked = scratch / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    code, out, err = cli(capsys, "search", sessions, "echoed", "--json")
    found = json.loads(out)
    assert code == 0 and "search index not kept" in err
    assert found["results"][0]["session_id"] == "s" and found["scanned_rows"] == 3
