"""The chat schema version comes from lovia's source, cached, never from importing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lovia_tui.core.store import chat_schema


def test_the_count_in_the_source_is_lovias_own() -> None:
    from lovia.web import store

    source = chat_schema.store_source()
    assert source is not None
    assert chat_schema.count_migrations(source.read_text()) == len(store._MIGRATIONS)


def test_the_cache_is_private_and_keyed_by_the_installed_file(
    isolated_cache: Path,
) -> None:
    version = chat_schema.chat_version()
    directory = isolated_cache / "lovia-tui"
    cached = directory / chat_schema.CACHE_NAME
    assert (directory.stat().st_mode & 0o777, cached.stat().st_mode & 0o777) == (
        0o700,
        0o600,
    )
    [(key, value)] = json.loads(cached.read_text()).items()
    assert value == version and key.startswith(str(chat_schema.store_source()))
    # A cached answer is trusted as long as the file it was counted from is unchanged.
    cached.write_text(json.dumps({key: version + 5}))
    assert chat_schema.chat_version() == version + 5


def test_a_damaged_or_unwritable_cache_is_counted_again(
    isolated_cache: Path, monkeypatch
) -> None:
    expected = chat_schema.chat_version()
    (isolated_cache / "lovia-tui" / chat_schema.CACHE_NAME).write_text("{not json")
    assert chat_schema.chat_version() == expected
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-such-dir")
    assert chat_schema.chat_version() == expected


def test_only_a_plain_literal_is_counted() -> None:
    assert chat_schema.count_migrations("_MIGRATIONS: tuple = (a, b, c)\n") == 3
    assert chat_schema.count_migrations("_MIGRATIONS = [a]\n") == 1
    assert chat_schema.count_migrations("_MIGRATIONS = (*base, extra)\n") is None
    assert chat_schema.count_migrations("_MIGRATIONS = build()\n") is None
    assert chat_schema.count_migrations("OTHER = (a,)\n") is None


def test_reading_a_web_ui_file_imports_neither_lovia_nor_rich(
    web_file: Path, tmp_path: Path
) -> None:
    """`runs`, `sessions` and `show` with --json load only what they need."""
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
