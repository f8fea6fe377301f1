"""Versions, columns and entry types come from the installed lovia: read from its
source, equal to what lovia itself says, cached, never by importing it to read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lovia_tui.core import lovia_facts


@pytest.fixture(autouse=True)
def fresh() -> None:
    """``installed()`` is kept for the process: each test reads it afresh."""
    lovia_facts.installed.cache_clear()


def test_the_source_says_what_lovia_itself_does() -> None:
    package = lovia_facts.lovia_package()
    assert package is not None
    read = lovia_facts.read_facts(package)
    assert read is not None
    assert read == lovia_facts.imported_facts()
    assert read.versions.keys() == {"session", "checkpoint", "chat"}


def test_the_columns_are_those_lovia_creates(tmp_path: Path) -> None:
    """A file written by lovia's own stores has exactly the columns read."""
    import asyncio
    import sqlite3

    from lovia import SQLiteCheckpointer, SQLiteSession

    path = tmp_path / "lovia.db"
    asyncio.run(SQLiteSession(path).load("s"))
    asyncio.run(SQLiteCheckpointer(path).load("r"))
    conn = sqlite3.connect(path)
    try:
        for table, columns in lovia_facts.installed().columns.items():
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()
            assert {row[1] for row in info} == columns, table
    finally:
        conn.close()


def test_the_cache_is_private_and_keyed_by_the_installed_files(
    isolated_cache: Path,
) -> None:
    facts = lovia_facts.installed()
    directory = isolated_cache / "lovia-tui"
    cached = directory / lovia_facts.CACHE_NAME
    assert (directory.stat().st_mode & 0o777, cached.stat().st_mode & 0o777) == (
        0o700,
        0o600,
    )
    [(key, value)] = json.loads(cached.read_text()).items()
    assert value == facts.as_json()
    assert str(lovia_facts.lovia_package()) in key
    # A cached answer is trusted as long as the files it was read from are unchanged.
    cached.write_text(json.dumps({key: {**value, "versions": {"session": 7}}}))
    lovia_facts.installed.cache_clear()
    assert lovia_facts.installed().versions == {"session": 7}


def test_the_cache_keeps_other_installed_copies(isolated_cache: Path) -> None:
    """Two environments with lovia used in turn: each finds its own answer."""
    directory = isolated_cache / "lovia-tui"
    lovia_facts.installed()
    cached = directory / lovia_facts.CACHE_NAME
    [(key, value)] = json.loads(cached.read_text()).items()
    others = {f"/venv-{n}/lovia": value for n in range(lovia_facts.CACHE_ENTRIES)}
    cached.write_text(json.dumps(others))
    lovia_facts.installed.cache_clear()
    lovia_facts.installed()  # not cached: read from the source, then remembered
    kept = json.loads(cached.read_text())
    assert list(kept) == [*list(others)[1:], key]  # the oldest other one dropped


def test_a_damaged_or_unwritable_cache_is_read_again(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = lovia_facts.installed()
    (isolated_cache / "lovia-tui" / lovia_facts.CACHE_NAME).write_text("{not json")
    lovia_facts.installed.cache_clear()
    assert lovia_facts.installed() == expected
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-such-dir")
    lovia_facts.installed.cache_clear()
    assert lovia_facts.installed() == expected


def test_only_plain_literals_are_read(tmp_path: Path) -> None:
    """A source that builds its values at run time is not guessed at: None,
    and lovia is imported instead."""
    package = lovia_facts.lovia_package()
    assert package is not None
    copy = tmp_path / "lovia"
    for source in lovia_facts.SOURCES:
        (copy / source).parent.mkdir(parents=True, exist_ok=True)
        (copy / source).write_text((package / source).read_text())
    assert lovia_facts.read_facts(copy) == lovia_facts.read_facts(package)
    store = copy / "web" / "store.py"
    source = store.read_text()
    assert "= (_reconcile_unversioned," in source
    store.write_text(source.replace("= (_reconcile_unversioned,", "= (*_BASE,", 1))
    assert lovia_facts.read_facts(copy) is None


def test_reading_a_web_ui_file_imports_neither_lovia_nor_rich(
    web_file: Path, tmp_path: Path
) -> None:
    """`runs`, `sessions` and `show` with --json load only what they need, even
    with no cache yet (the facts are read from lovia's source)."""
    code = (
        "import sys, io, contextlib\n"
        "from lovia_tui.cli import main\n"
        "for argv in (['runs', sys.argv[1], '--json'], ['sessions', sys.argv[1], '--json']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(argv) == 0, argv\n"
        "print(' '.join(sys.modules))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(web_file)],
        capture_output=True, text=True, check=True, env=env, timeout=60,
    )  # fmt: skip
    loaded = set(done.stdout.split())
    assert not {
        name
        for name in loaded
        if name.split(".")[0] in {"lovia", "rich", "textual", "fastapi"}
    }
    assert (tmp_path / "lovia-tui" / lovia_facts.CACHE_NAME).exists()


def test_every_subcommand_is_in_the_lazy_map() -> None:
    """A command module's subcommands are reachable by name (the CLI imports
    only the module ``SUBCOMMANDS`` names for it)."""
    import importlib
    import pkgutil

    import lovia_tui.cli
    from lovia_tui.cli import SUBCOMMANDS, all_commands

    found = {}
    for info in pkgutil.iter_modules(lovia_tui.cli.__path__):
        module = importlib.import_module(f"lovia_tui.cli.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            found[command.name] = info.name
    assert found == SUBCOMMANDS
    assert [c.name for c in all_commands()] == list(SUBCOMMANDS)
