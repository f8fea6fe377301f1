"""The web UI's chat schema version the installed lovia knows, without importing it.

lovia's rule (``SQLiteStore``) is that a store's version is its number of
migrations; the chat store's are ``lovia.web.store._MIGRATIONS``. Importing
``lovia.web`` to count them pulls in FastAPI (~0.4 s, twice the rest of
start-up), so the tuple is counted in the module's source text instead, and
the count is cached per installed copy of that file (its path, size and
modification time change with every lovia upgrade). Only when the source does
not hold a plain literal is the module imported.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
from pathlib import Path

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.private_files import cache_dir, open_private_file

CACHE_NAME = "schema-versions.json"
CACHE_BYTES = 1 << 16
"""More than the cache ever holds: a planted large file is not read whole."""


def store_source() -> Path | None:
    """Where lovia's ``web/store.py`` is installed (found without importing lovia)."""
    spec = importlib.util.find_spec("lovia")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "web" / "store.py"
    return path if path.is_file() else None


def count_migrations(source: str) -> int | None:
    """The length of the module-level ``_MIGRATIONS`` tuple or list literal, if any."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "_MIGRATIONS":
            if isinstance(value, ast.Tuple | ast.List) and not any(
                isinstance(item, ast.Starred) for item in value.elts
            ):
                return len(value.elts)
            return None
    return None


def _key(source: Path) -> str:
    stat = source.stat()
    return f"{source.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def _read_cache(key: str) -> int | None:
    try:
        fd = open_private_file(cache_dir() / CACHE_NAME, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            cached = json.loads(handle.read(CACHE_BYTES))
    except (OSError, ValueError, LoviaTuiError):
        return None  # none yet, an unreadable or refused one: counted afresh
    value = cached.get(key) if isinstance(cached, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _write_cache(key: str, version: int) -> None:
    """Remember the count for this copy of lovia: a 0600 file in a 0700
    directory, written under a new unguessable name and renamed over the old
    (a rename replaces a link at the name, never writes through it)."""
    directory = cache_dir()
    partial = directory / f".{CACHE_NAME}.{os.urandom(8).hex()}"
    try:
        fd = open_private_file(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except (OSError, LoviaTuiError):
        # A read-only home, or a directory refused: counted again next time.
        return
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({key: version}, handle)
        os.replace(partial, directory / CACHE_NAME)
    except OSError:
        partial.unlink(missing_ok=True)


def _imported_count() -> int:
    from lovia.web import store as chat_store

    return len(getattr(chat_store, "_MIGRATIONS", ()))


def chat_version() -> int:
    """The chat store's schema version written by the installed lovia."""
    source = store_source()
    if source is None:
        return _imported_count()
    key = _key(source)
    cached = _read_cache(key)
    if cached is not None:
        return cached
    counted = count_migrations(source.read_text(encoding="utf-8"))
    version = _imported_count() if counted is None else counted
    _write_cache(key, version)
    return version
