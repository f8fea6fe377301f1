"""lovia-tui's own files (journal, search index, caches): only its user reads
them, and none is ever reached through a symbolic link or another's directory.

The process runs as root in CI, and root ignores file modes: the checks here
are on mode bits and owners as stat reports them, never on access being denied.
The owner check is tested with a real chown when the test runs as root, and by
faking the effective uid the check compares with otherwise (said in the test).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.lovia_factory import copy_db

from lovia_tui.cli import main
from lovia_tui.core import lovia_facts, private_files
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.private_files import (
    PrivateFileError,
    connect_private,
    open_private_file,
)
from lovia_tui.core.search.index import IndexFile, index_path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def fingerprint(path: Path) -> tuple[bytes, int, list[str]]:
    """A file's bytes, mode and SQLite companions: what a refusal must leave."""
    companions = [
        s for s in ("-wal", "-shm", "-journal") if Path(f"{path}{s}").exists()
    ]
    return path.read_bytes(), mode(path), companions


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of a file nobody writes, leaving no companion."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


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


@pytest.fixture
def victim(web_file: Path, tmp_path: Path) -> Path:
    """Another lovia database, the target a planted link points at."""
    target = copy_db(web_file, tmp_path / "victim.db")
    os.chmod(target, 0o644)
    return target


def _act(web_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A journaled action through lovia, then a read of the journal."""
    assert main(["clear", str(web_file), "chat", "--force", "--yes"]) == 0
    assert main(["journal", str(web_file)]) == 0
    capsys.readouterr()


def _refused_action(web_file: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The same action, refused before it changed anything: its one line."""
    before = fingerprint(web_file)
    assert main(["clear", str(web_file), "chat", "--force", "--yes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lovia-tui: ") and err.count("\n") == 1, err
    assert fingerprint(web_file)[:2] == before[:2]
    return err


def test_a_new_journal_is_private(
    default_location: Path, web_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _act(web_file, capsys)
    assert mode(default_location) == 0o600
    assert mode(default_location.parent) == 0o700  # lovia-tui/
    assert mode(default_location.parent.parent) == 0o700  # state/, created by us
    locks = default_location.parent / "journal.locks"  # the entries' lock files
    assert mode(locks) == 0o700
    companions = [
        p
        for p in default_location.parent.iterdir()
        if p not in (default_location, locks)
    ]
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


# ------------------------------------------------------------ planted links


def plant(planted: str, file: Path, victim: Path, elsewhere: Path) -> Path:
    """A link where lovia-tui will look for ``file``: ``dangling`` (to a name in
    the missing ``elsewhere``), to the ``lovia file`` ``victim``, at its
    ``-wal``, or at its ``directory`` (to the empty ``elsewhere``). Returns
    the name planted."""
    if planted == "directory":
        elsewhere.mkdir(mode=0o700)
        file.parent.symlink_to(elsewhere)
        return file.parent
    file.parent.mkdir(mode=0o700)
    named = file.with_name(f"{file.name}-wal") if planted == "-wal" else file
    named.symlink_to(elsewhere / file.name if planted == "dangling" else victim)
    return named


@pytest.mark.parametrize("planted", ["dangling", "lovia file", "directory", "-wal"])
def test_a_link_planted_for_the_journal_is_refused(
    planted: str,
    default_location: Path,
    victim: Path,
    web_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A dangling journal.db link once created the journal at its target; one to
    the user's lovia file added the journal's tables to it and chmodded it."""
    default_location.parent.parent.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    named = plant(planted, default_location, victim, elsewhere)
    before = fingerprint(victim)
    err = _refused_action(web_file, capsys)
    assert f"{named} is a symbolic link" in err
    assert fingerprint(victim) == before and integrity(victim) == "ok"
    assert not (elsewhere / "journal.db").exists()
    assert not elsewhere.exists() or not any(elsewhere.iterdir())


def test_a_journal_with_another_name_is_refused(
    default_location: Path,
    victim: Path,
    web_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A hard link is the same file by another name (the lovia file itself here)."""
    default_location.parent.mkdir(parents=True, mode=0o700)
    os.link(victim, default_location)
    before = fingerprint(victim)
    err = _refused_action(web_file, capsys)
    assert f"{default_location} has 2 names" in err
    assert fingerprint(victim) == before


def test_a_lovia_database_named_as_the_journal_is_left_as_it_is(
    victim: Path,
    web_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """$LOVIA_TUI_JOURNAL naming a lovia file (another, or the one acted on):
    the journal's tables were added to it and its mode became 0600, which
    could lock out a lovia web serving it as another user."""
    for named in (victim, web_file):
        monkeypatch.setenv("LOVIA_TUI_JOURNAL", str(named))
        before = fingerprint(named)
        err = _refused_action(web_file, capsys)
        assert f"{named} holds tables that are not lovia-tui's" in err
        assert fingerprint(named)[:2] == before[:2]


@pytest.mark.parametrize("planted", ["dangling", "lovia file", "-wal", "directory"])
def test_a_link_planted_for_the_search_index_is_refused(
    planted: str, victim: Path, web_file: Path, tmp_path: Path
) -> None:
    """An index link once switched another SQLite file to WAL and chmodded it;
    a dangling one created the index (the conversations' words) at 0644."""
    elsewhere = tmp_path / "elsewhere"
    named = plant(planted, index_path(web_file), victim, elsewhere)
    before = fingerprint(victim)
    index = IndexFile.open(web_file)
    try:
        assert str(index.path) == ":memory:"  # searches scan the file instead
        assert index.notice and f"{named} is a symbolic link" in index.notice
    finally:
        index.close()
    assert fingerprint(victim) == before and integrity(victim) == "ok"
    assert not elsewhere.exists() or not any(elsewhere.iterdir())


def _chat_version() -> int:
    """The chat store's version as a new process finds it: through the cache file."""
    lovia_facts.installed.cache_clear()
    return lovia_facts.installed().versions["chat"]


def test_the_schema_cache_is_never_read_or_written_through_a_link(
    isolated_cache: Path, victim: Path
) -> None:
    """The cache's temporary file was written with O_TRUNC and no O_NOFOLLOW:
    a planted link there had its target overwritten with JSON. Reading the
    cache through a link to a database would also have put a Python descriptor
    on it (the open guard of this test suite fails the test if so)."""
    expected = _chat_version()
    cache = isolated_cache / "lovia-tui"
    name = cache / lovia_facts.CACHE_NAME
    name.unlink()
    name.symlink_to(victim)
    old_temporary = cache / f".{lovia_facts.CACHE_NAME}.{os.getpid()}"
    old_temporary.symlink_to(victim)
    before = fingerprint(victim)
    assert _chat_version() == expected
    assert fingerprint(victim) == before and integrity(victim) == "ok"
    assert old_temporary.is_symlink()
    # The link at the cache's name was replaced by a rename, not written through.
    assert not name.is_symlink() and mode(name) == 0o600
    # Any temporary name: created new or not at all, never through a link.
    for flags in (os.O_CREAT | os.O_EXCL, os.O_CREAT | os.O_TRUNC, os.O_RDONLY):
        with pytest.raises(PrivateFileError, match="is a symbolic link"):
            open_private_file(old_temporary, os.O_WRONLY | flags)
    assert fingerprint(victim) == before
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [lovia_facts.CACHE_NAME, old_temporary.name]
    )


def test_a_cache_directory_that_is_a_link_is_not_used(
    isolated_cache: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (isolated_cache / "lovia-tui").symlink_to(elsewhere)
    assert _chat_version() >= 1  # counted, not cached
    assert list(elsewhere.iterdir()) == []


def test_a_file_swapped_for_a_link_while_it_is_opened_is_refused(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moment between the check and SQLite's open: another process swaps
    the checked file for a link to a lovia file (done here inside the call to
    ``sqlite3.connect``, the last moment before SQLite opens the name)."""
    path = tmp_path / "own" / "index.db"
    real_connect = sqlite3.connect

    def swap_then_connect(*args, **kwargs):
        path.unlink()
        path.symlink_to(victim)
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(private_files.sqlite3, "connect", swap_then_connect)
    before = fingerprint(victim)
    with pytest.raises(PrivateFileError, match="replaced while it was being opened"):
        connect_private(path, own_directory=True)
    assert fingerprint(victim) == before and integrity(victim) == "ok"


# ---------------------------------------------------- directory owner and mode


@pytest.mark.parametrize("loose", [0o777, 0o770, 0o1777, 0o722])
def test_a_directory_others_can_write_is_refused(
    loose: int, default_location: Path, tmp_path: Path, monkeypatch
) -> None:
    """Ours or chosen by the user: anyone who can write there can plant links."""
    for directory, journal in (
        (default_location.parent, Journal()),
        (tmp_path / "chosen", Journal(tmp_path / "chosen" / "journal.db")),
    ):
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, loose)
        with pytest.raises(PrivateFileError, match="can be written by other users"):
            journal._entries(None, 1)
        assert list(directory.iterdir()) == []  # nothing created there
        assert stat.S_IMODE(directory.stat().st_mode) == loose  # nor changed


def test_a_directory_or_file_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root: chown to another uid for real. Otherwise the effective uid the
    check compares with is faked (the files then belong to "another user")."""
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    other = 4242
    if os.geteuid() == 0:
        os.chown(directory, other, other)
    else:
        monkeypatch.setattr(private_files.os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(PrivateFileError, match="belongs to another user"):
        Journal(directory / "journal.db")._entries(None, 1)
    assert list(directory.iterdir()) == []
    if os.geteuid() == 0:  # a file of theirs in a directory of ours
        os.chown(directory, 0, 0)
        (directory / "journal.db").touch(mode=0o600)
        os.chown(directory / "journal.db", other, other)
        with pytest.raises(PrivateFileError, match="belongs to another user"):
            Journal(directory / "journal.db")._entries(None, 1)
        assert (directory / "journal.db").stat().st_size == 0


def test_xdg_directories_must_be_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The XDG specification ignores a relative $XDG_*_HOME: so do we."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("XDG_STATE_HOME", "")
    assert private_files.cache_dir() == tmp_path / ".cache" / "lovia-tui"
    assert private_files.state_dir() == tmp_path / ".local" / "state" / "lovia-tui"
