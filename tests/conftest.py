"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import open_guard

pytest_plugins = [
    "support.lovia_factory"
]  # lovia-written fixture databases (tests/support/lovia_factory.py)

if TYPE_CHECKING:
    from lovia_tui.demo import DemoWorkspace


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> DemoWorkspace:
    """The demo workspace, built once per test session: copy it before mutating."""
    from lovia_tui.demo import build_demo  # only sessions that use it pay for lovia.web

    return build_demo(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="session")
def snapshot_template(tmp_path_factory: pytest.TempPathFactory):
    """The deterministic snapshot database, written once by lovia."""
    from support.snapshot_db import build_snapshot_db

    return build_snapshot_db(tmp_path_factory.mktemp("snapshot"))


@pytest.fixture
def snap_dir(snapshot_template, tmp_path):
    """A private copy of the snapshot database, free to mutate."""
    import shutil

    shutil.copy(snapshot_template, tmp_path / snapshot_template.name)
    return tmp_path


@pytest.fixture(scope="session")
def hostile_text_template(tmp_path_factory: pytest.TempPathFactory):
    """The database whose text attacks the terminal (tests/support/hostile_text_db.py)."""
    import asyncio

    from support.hostile_text_db import build_hostile_text_db

    return asyncio.run(build_hostile_text_db(tmp_path_factory.mktemp("hostile")))


@pytest.fixture
def hostile_text(hostile_text_template, scratch):
    """A private copy of the hostile-text database."""
    from support.lovia_factory import copy_db

    (scratch / "db").mkdir()
    return copy_db(hostile_text_template, scratch / "db" / "web.db")


@pytest.fixture(scope="session")
def web_history_template(tmp_path_factory: pytest.TempPathFactory):
    """lovia web's records around a chat (tests/support/web_history_db.py)."""
    import asyncio

    from support.web_history_db import build_web_history

    return asyncio.run(build_web_history(tmp_path_factory.mktemp("history")))


@pytest.fixture
def web_history(web_history_template, scratch):
    """A private copy of the web-history database."""
    from dataclasses import replace

    from support.lovia_factory import copy_db

    path = copy_db(web_history_template.path, scratch / "web.db")
    return replace(web_history_template, path=path)


@pytest.fixture(autouse=True)
def isolated_journal(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    """Every test journals into its own file, never the user's ~/.local/state.

    Tests that look at the journal take lovia_factory's ``private_journal``,
    which points the journal at their scratch directory after this has run.
    """
    path = tmp_path_factory.mktemp("journal") / "journal.db"
    monkeypatch.setenv("LOVIA_TUI_JOURNAL", str(path))
    return path


@pytest.fixture(autouse=True)
def isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    """Every test caches in its own directory, never ~/.cache (search indexes,
    lovia's chat schema version)."""
    path = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


OPEN_GUARD_SITE = Path(__file__).parent / "support" / "open_guard_site"
open_guard.install()


@pytest.fixture(scope="session", autouse=True)
def open_guard_everywhere(tmp_path_factory: pytest.TempPathFactory):
    """Every Python process a test starts carries the open guard too, and
    reports to one log (support/open_guard.py)."""
    log = tmp_path_factory.mktemp("open-guard") / "violations.log"
    log.touch()
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", open_guard.LOG_ENV)}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(OPEN_GUARD_SITE), saved["PYTHONPATH"]])
    )
    os.environ[open_guard.LOG_ENV] = str(log)
    yield log
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def no_database_opened_outside_sqlite(open_guard_everywhere: Path):
    """Fails the test if lovia-tui, in this process or one it started, opened a
    SQLite file with Python I/O (which drops SQLite's locks on it)."""
    open_guard.violations.clear()
    seen = open_guard_everywhere.stat().st_size
    yield
    found = list(open_guard.violations)
    with open_guard_everywhere.open(encoding="utf-8") as log:
        log.seek(seen)
        found.extend(filter(None, log.read().split("\n\n")))
    assert not found, "\n".join(found)
