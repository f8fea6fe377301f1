"""Every name lovia-tui takes from lovia that lovia does not export as public API.

lovia-tui pins ``lovia>=0.9.119,<0.10``; a release inside that range may still
move a private name (an underscore, or a module lovia's package does not
export). They are all here, and this module is imported only where lovia is
about to be used anyway (importing lovia costs ~0.6 s): the store base
class on import, the rest when first called (``lovia.web`` costs 0.4 s
more). ``tests/core/test_lovia_private.py``
fails if one of them moves or changes meaning. The store plumbing that
``core/actions/locked_stores.py`` overrides (``SQLiteStore._connect`` and
friends) is held to its shape there, by ``check_lovia_shape``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lovia.stores._sqlite import SQLiteStore

if TYPE_CHECKING:
    from lovia.messages import Usage

STORES = ("session", "checkpoint", "chat")
"""lovia's SQLite stores, by the name each records in ``lovia_schema``."""


def rewind_split() -> Callable[..., Any]:
    """``SQLiteSession.rewind``'s own split of segments at a flat index."""
    from lovia.stores.session import _rewind_split

    return _rewind_split


def trim_entries() -> Callable[..., Any]:
    """``SQLiteSession.trim_tool_results``' own trim of one segment's entries."""
    from lovia.stores.session import _trim_entries

    return _trim_entries


def result_digest(output: str) -> str:
    """The digest lovia keys an offloaded tool output by (``context.state``)."""
    from lovia.context.state import result_digest as digest

    return digest(output)


def reachable_agents(entry: Any) -> Any:
    """The agents a resume can reach from ``entry`` through handoffs (``runtime.resume``)."""
    from lovia.runtime.resume import reachable_agents as reachable

    return reachable(entry)


def agent_run_as_tool(tool: Any) -> Any | None:
    """The agent a tool made by ``Agent.as_tool`` runs (the ``agent`` its
    ``handoff.agent_as_tool`` invoke closes over), else None. lovia runs it
    with ``Runner.run``: its approvals go to its own handler, no consumer."""
    invoke: Any = getattr(tool, "invoke", None)
    code = getattr(invoke, "__code__", None)
    if code is None or invoke.__qualname__ != "agent_as_tool.<locals>.invoke":
        return None
    cells = dict(zip(code.co_freevars, invoke.__closure__ or (), strict=False))
    return cells["agent"].cell_contents if "agent" in cells else None


def usage_dict(usage: Usage, last_input_tokens: int | None = None) -> dict[str, Any]:
    """lovia web's ``usage_json`` of a run (``web.sse.usage_dict``)."""
    from lovia.web.sse import usage_dict as as_dict

    return as_dict(usage, last_input_tokens=last_input_tokens)


def trim_marker(call_id: Any, dropped: int) -> str:
    """The marker ``trim_tool_results`` appends to a shortened output."""
    from lovia.stores.session import _trim_marker

    return str(_trim_marker(call_id, dropped))


def trim_sentinel() -> str:
    """The fixed tail of that marker, by which lovia skips a trimmed output."""
    from lovia.stores.session import _TRIM_SENTINEL

    return str(_TRIM_SENTINEL)


def entry_types() -> frozenset[str]:
    """The entry types ``entry_from_dict`` accepts (it raises on any other)."""
    from lovia.transcript import _ENTRY_TYPES

    return frozenset(_ENTRY_TYPES)


def _in_memory(name: str) -> Any:
    from lovia.stores.checkpointer import SQLiteCheckpointer
    from lovia.stores.session import SQLiteSession

    if name == "chat":
        from lovia.web.store import _META_SCHEMA, _MIGRATIONS

        return SQLiteStore(
            ":memory:", _META_SCHEMA, name="chat", migrations=_MIGRATIONS
        )
    return {"session": SQLiteSession, "checkpoint": SQLiteCheckpointer}[name](
        ":memory:"
    )


def store_version(name: str) -> int:
    """The schema version lovia writes for store ``name``: its number of
    migrations (``SQLiteStore._ensure_schema``'s rule)."""
    return len(_in_memory(name)._migrations)


def store_columns(name: str, tables: Iterable[str]) -> dict[str, frozenset[str]]:
    """The columns of ``tables`` as lovia creates store ``name`` (in memory)."""
    conn: sqlite3.Connection = _in_memory(name)._shared
    return {
        table: frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        for table in tables
    }
