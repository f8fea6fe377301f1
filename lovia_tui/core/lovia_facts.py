"""What the installed lovia writes, read from its source: versions, columns, entry types.

Importing lovia costs ~0.6 s (``lovia.web`` 0.4 s more), twice the rest of
start-up, so the facts a read needs are read from lovia's installed source
with ``ast`` instead: each store's ``SQLiteStore`` construction (its ``name``,
its version-0 schema, and its ``migrations``, whose number is its version:
lovia's own rule), the entry types ``entry_from_dict`` accepts
(``transcript._ENTRY_TYPES``) and the trim marker's fixed tail
(``stores.session._TRIM_SENTINEL``). The schema SQL runs in an in-memory
SQLite database of our own to list its tables' columns. The answer is cached
per installed copy of those files (path, size, modification time: every
upgrade changes them) in a 0600 file; only where the source holds no plain
literal is lovia imported (:mod:`lovia_tui.core.lovia_private`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.private_files import cache_dir, open_private_file

CACHE_NAME = "lovia-facts.json"
CACHE_BYTES = 1 << 16
"""More than the cache ever holds: a planted large file is not read whole."""
CACHE_ENTRIES = 8
"""Installed copies remembered (one per virtual environment with lovia): two
environments used in turn would otherwise each read lovia's source anew on
every start (~30-60 ms with ``ast``), each replacing the other's answer."""
SOURCES = (
    "stores/session.py",
    "stores/checkpointer.py",
    "web/store.py",
    "transcript.py",
)
"""The lovia modules the facts are read from, relative to its package."""
STORE_TABLES: dict[str, frozenset[str]] = {
    "session": frozenset({"session_runs"}),
    "checkpoint": frozenset({"snapshot_heads", "snapshot_turns"}),
}
"""The tables lovia-tui reads of each store (a store's appear on its first use)."""


@dataclass(frozen=True)
class LoviaFacts:
    """The schema versions, columns and entry types of the installed lovia."""

    versions: dict[str, int]
    columns: dict[str, frozenset[str]]
    entry_types: frozenset[str]
    trim_sentinel: str

    def as_json(self) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "columns": {table: sorted(c) for table, c in self.columns.items()},
            "entry_types": sorted(self.entry_types),
            "trim_sentinel": self.trim_sentinel,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoviaFacts:
        return cls(
            versions={str(k): int(v) for k, v in data["versions"].items()},
            columns={str(t): frozenset(c) for t, c in data["columns"].items()},
            entry_types=frozenset(data["entry_types"]),
            trim_sentinel=str(data["trim_sentinel"]),
        )


def lovia_package() -> Path | None:
    """Where lovia is installed (found without importing it)."""
    spec = importlib.util.find_spec("lovia")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class _Module:
    """One lovia module's plain literals, by the name they are bound to."""

    def __init__(self, source: str) -> None:
        self.tree = ast.parse(source)
        self.values: dict[str, ast.expr] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name):
                self.values[target.id] = value

    def literal(self, node: ast.expr | None) -> Any:
        """A node's value if it is (a name bound to) a plain literal, else None."""
        if isinstance(node, ast.Name):
            node = self.values.get(node.id)
        if isinstance(node, ast.Tuple | ast.List) and not any(
            isinstance(item, ast.Starred) for item in node.elts
        ):
            return len(node.elts)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Dict) and all(
            isinstance(k, ast.Constant) for k in node.keys
        ):
            return frozenset(k.value for k in node.keys if isinstance(k, ast.Constant))
        return None

    def stores(self) -> dict[str, tuple[Any, Any]]:
        """(schema SQL, number of migrations) of each store built here: a call
        with a literal ``name=`` and the schema as its second argument."""
        found = {}
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            name = self.literal(keywords.get("name"))
            if isinstance(name, str):
                migrations = keywords.get("migrations")
                count = 0 if migrations is None else self.literal(migrations)
                found[name] = (self.literal(node.args[1]), count)
        return found


def read_facts(package: Path) -> LoviaFacts | None:
    """The facts as lovia's source states them; None where it holds no plain literal."""
    modules = {
        source: _Module((package / source).read_text(encoding="utf-8"))
        for source in SOURCES
    }
    stores: dict[str, tuple[Any, Any]] = {}
    for module in modules.values():
        stores.update(module.stores())
    versions = {name: count for name, (_, count) in stores.items()}
    types = modules["transcript.py"].literal(ast.Name("_ENTRY_TYPES"))
    sentinel = modules["stores/session.py"].literal(ast.Name("_TRIM_SENTINEL"))
    schemas = {name: stores.get(name, (None, None))[0] for name in STORE_TABLES}
    if (
        set(versions) != {"session", "checkpoint", "chat"}
        or not all(isinstance(v, int) for v in versions.values())
        or not all(isinstance(s, str) for s in schemas.values())
        or not isinstance(types, frozenset)
        or not isinstance(sentinel, str)
    ):
        return None
    columns = {}
    for name, tables in STORE_TABLES.items():
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            conn.executescript(schemas[name])
            for table in tables:
                info = conn.execute(f"PRAGMA table_info({table})").fetchall()
                columns[table] = frozenset(row[1] for row in info)
    return LoviaFacts(versions, columns, types, sentinel)


def imported_facts() -> LoviaFacts:
    """The facts from lovia itself, imported: when its source says too little."""
    from lovia_tui.core import lovia_private

    columns: dict[str, frozenset[str]] = {}
    for name, tables in STORE_TABLES.items():
        columns.update(lovia_private.store_columns(name, tables))
    return LoviaFacts(
        versions={
            name: lovia_private.store_version(name) for name in lovia_private.STORES
        },
        columns=columns,
        entry_types=lovia_private.entry_types(),
        trim_sentinel=lovia_private.trim_sentinel(),
    )


def _key(package: Path) -> str:
    parts = []
    for source in SOURCES:
        stat = (package / source).stat()
        parts.append(
            f"{(package / source).resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        )
    return "|".join(parts)


def _cached() -> dict[str, Any]:
    """Every installed copy's facts in the cache, as stored (none: empty)."""
    try:
        fd = open_private_file(cache_dir() / CACHE_NAME, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            cached = json.loads(handle.read(CACHE_BYTES))
    except (OSError, ValueError, LoviaTuiError):
        return {}  # none yet, an unreadable or refused one
    return cached if isinstance(cached, dict) else {}


def _read_cache(key: str) -> LoviaFacts | None:
    try:
        return LoviaFacts.from_json(_cached()[key])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # another lovia's, or a damaged entry


def _write_cache(key: str, facts: LoviaFacts) -> None:
    """Remember the facts of this copy of lovia beside the other copies' last
    ones: a 0600 file in a 0700 directory, written under a new unguessable
    name and renamed over the old (a rename replaces a link at the name,
    never writes through it)."""
    others = [(k, v) for k, v in _cached().items() if k != key]
    entries = dict(others[-(CACHE_ENTRIES - 1) :])
    entries[key] = facts.as_json()
    directory = cache_dir()
    partial = directory / f".{CACHE_NAME}.{os.urandom(8).hex()}"
    try:
        fd = open_private_file(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except (OSError, LoviaTuiError):
        return  # a read-only home, or a directory refused: read again next time
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(entries, handle)
        os.replace(partial, directory / CACHE_NAME)
    except OSError:
        partial.unlink(missing_ok=True)


@functools.cache
def installed() -> LoviaFacts:
    """The installed lovia's facts: cached, else read from its source (once a process)."""
    package = lovia_package()
    if package is None or not all((package / s).is_file() for s in SOURCES):
        return imported_facts()
    key = _key(package)
    cached = _read_cache(key)
    if cached is not None:
        return cached
    facts = read_facts(package) or imported_facts()
    _write_cache(key, facts)
    return facts
