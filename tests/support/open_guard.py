"""A test fails if lovia-tui's own code opens a SQLite file with Python I/O.

POSIX advisory locks belong to the process and the inode: closing *any*
descriptor of a database file drops every lock the process's SQLite
connections hold on it, and another process may then delete the ``-wal``
under them (SQLite's "How To Corrupt", 2.2). So the tool never holds a
descriptor on a database, its ``-wal``, ``-shm`` or ``-journal`` but
SQLite's own. This audit hook (``sys.addaudithook``) sees every ``open``
made through Python — ``open()``, ``os.open``, ``pathlib`` — and records one
whose call stack passes through the ``lovia_tui`` package and whose path is
a SQLite file: one passed to ``sqlite3.connect`` in this process, a
companion of one, or a name ending like one. Creating a new file
(``O_CREAT|O_EXCL``) is allowed: nobody can be connected to it yet.

The pytest process installs it from ``conftest.py``; every Python process a
test starts installs it through ``open_guard_site/sitecustomize.py`` (on
``PYTHONPATH``) and appends what it records to ``$LOVIA_TUI_OPEN_GUARD_LOG``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from urllib.parse import unquote, urlsplit

LOG_ENV = "LOVIA_TUI_OPEN_GUARD_LOG"
COMPANIONS = ("-wal", "-shm", "-journal")
DATABASE_NAMES = (".db", ".sqlite", ".sqlite3")

violations: list[str] = []
_connected: set[str] = set()
_connected_names: set[str] = set()
_inside = False
_log_to_file = False


def _package_dir() -> str:
    spec = importlib.util.find_spec("lovia_tui")
    locations = spec.submodule_search_locations if spec else None
    if not locations:
        return os.path.join(os.path.dirname(os.path.dirname(__file__)), "lovia_tui")
    return os.path.realpath(next(iter(locations))) + os.sep


PACKAGE_DIR = _package_dir()


def _database_path(database: object) -> str | None:
    """The file a ``sqlite3.connect`` argument names (a path or a ``file:`` URI)."""
    if isinstance(database, bytes):
        database = os.fsdecode(database)
    if not isinstance(database, str | os.PathLike):
        return None
    text = os.fspath(database)
    if text.startswith("file:"):
        text = unquote(urlsplit(text).path)
    if not text or text == ":memory:":
        return None
    return os.path.realpath(text)


def _without_companion(name: str) -> str:
    for suffix in COMPANIONS:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _is_sqlite_file(path: str) -> bool:
    name = os.path.basename(path)
    stem = _without_companion(name)
    if stem.endswith(DATABASE_NAMES):
        return True
    if stem not in _connected_names:
        return False
    return _without_companion(os.path.realpath(path)) in _connected


def _opened_by_the_tool() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(PACKAGE_DIR):
            return True
        frame = frame.f_back
    return False


def _record(path: str) -> None:
    stack = "".join(traceback.format_stack(sys._getframe(2), limit=8))
    text = f"pid {os.getpid()} opened {path} outside SQLite:\n{stack}"
    violations.append(text)
    log = os.environ.get(LOG_ENV)
    if log and _log_to_file:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def _hook(event: str, args: tuple) -> None:
    global _inside
    if _inside:
        return
    if event == "sqlite3.connect":
        path = _database_path(args[0]) if args else None
        if path:
            _connected.add(path)
            _connected_names.add(os.path.basename(path))
        return
    if event != "open" or not args:
        return
    path, flags = args[0], args[2] if len(args) > 2 else None
    if isinstance(path, int) or path is None:
        return  # an inherited descriptor (os.fdopen): opened before
    path = os.fsdecode(path)
    if isinstance(flags, int) and flags & os.O_CREAT and flags & os.O_EXCL:
        return  # a new file: nobody can be connected to it yet
    _inside = True
    try:
        if _is_sqlite_file(path) and _opened_by_the_tool():
            _record(path)
    finally:
        _inside = False


def install(*, log_to_file: bool = False) -> None:
    """Install the hook once per process (audit hooks cannot be removed);
    a process a test started reports to the log file as well."""
    global _log_to_file
    _log_to_file = log_to_file
    if getattr(sys, "_lovia_tui_open_guard", False):
        return
    sys._lovia_tui_open_guard = True  # type: ignore[attr-defined]
    sys.addaudithook(_hook)
