"""The journal holds full rows of the user's conversations: only its user reads it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from lovia_tui.cli import main


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The journal at its default place under a fresh $XDG_STATE_HOME, with a
    umask that would make new files world-readable."""
    monkeypatch.delenv("LOVIA_TUI_JOURNAL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    saved = os.umask(0o022)
    try:
        yield tmp_path / "state" / "lovia-tui" / "journal.db"
    finally:
        os.umask(saved)


def _act(web_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A journaled action through lovia, then a read of the journal."""
    assert main(["clear", str(web_file), "chat", "--force", "--yes"]) == 0
    assert main(["journal", str(web_file)]) == 0
    capsys.readouterr()


def test_a_new_journal_is_private(
    default_location: Path, web_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _act(web_file, capsys)
    assert mode(default_location) == 0o600
    assert mode(default_location.parent) == 0o700  # lovia-tui/
    assert mode(default_location.parent.parent) == 0o700  # state/, created by us
    companions = [p for p in default_location.parent.iterdir() if p != default_location]
    assert all(mode(p) == 0o600 for p in companions), companions


def test_a_loose_journal_is_tightened(
    default_location: Path, web_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As an older lovia-tui left it: 0644 in 0755, with a 0644 companion."""
    default_location.parent.mkdir(parents=True, mode=0o755)
    os.chmod(default_location.parent, 0o755)
    default_location.touch(mode=0o644)
    os.chmod(default_location, 0o644)
    wal = default_location.with_name("journal.db-wal")
    wal.touch()
    os.chmod(wal, 0o644)
    _act(web_file, capsys)
    assert mode(default_location) == 0o600 and mode(wal) == 0o600
    assert mode(default_location.parent) == 0o700


def test_a_chosen_directory_is_left_alone_but_the_file_is_private(
    tmp_path: Path,
    web_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    monkeypatch.setenv("LOVIA_TUI_JOURNAL", str(shared / "journal.db"))
    _act(web_file, capsys)
    assert mode(shared / "journal.db") == 0o600
    assert mode(shared) == 0o755  # the user's own directory, not ours to change
