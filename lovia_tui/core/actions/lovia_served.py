"""What lovia's rewind and trim would compute under the write lock, computed before it.

Both read a session's segments and parse each one inside lovia's
transaction, and the trim serializes each segment it trims again: a half
rewind of 2,000 runs held lovia's writers ~25 ms parsing, a trim of 1,000
runs 170-210 ms. Here the read, the parses and the serializations are done
before the lock from the rows the action captured (:func:`prepare_rewind`,
:func:`prepare_trim`) and served to lovia's own method, its code as written
(:func:`served`): its read is answered with the captured rows
(:class:`~lovia_tui.core.actions.locked_stores.HeldConnection`), and its
``json`` and entry functions find their results by the text or the objects
built before. That holds while the rows are as captured, which the check
under the lock ensures or nothing is done
(:mod:`~lovia_tui.core.store.row_check`). A lovia whose methods read or
parse otherwise is not served (:func:`reads_as_known`).
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.stores.session import SQLiteSession

from lovia_tui.core.lovia_private import trim_entries
from lovia_tui.core.store.rows import Cell

Parsed = dict[str, list[list[Any]]]
"""Segments parsed before the lock: by their text, one entry list per row."""

REWIND_READ = (
    "SELECT id, run_id, entries_json FROM session_runs "
    "WHERE session_id = ? ORDER BY id ASC"
)
"""The read ``SQLiteSession.rewind`` starts with: every segment of the session."""
TRIM_READ = (
    "SELECT id, entries_json FROM session_runs WHERE session_id = ? ORDER BY id ASC"
)
"""The read ``SQLiteSession.trim_tool_results`` starts with."""

# How each method reads, parses and writes, as its source spells it (one
# line, adjacent string literals joined): served only while it still does.
_AS_KNOWN = {
    "rewind": (
        f'"{REWIND_READ}", (session_id,), ).fetchall()',
        "entries=[entry_from_dict(d) for d in json.loads(r[2])]",
        "_rewind_split(segments, keep_entries)",
        '"UPDATE session_runs SET entries_json = ?, meta_json = NULL WHERE id = ?"',
        '"DELETE FROM session_runs WHERE id = ?"',
    ),
    "trim_tool_results": (
        f'"{TRIM_READ}", (session_id,), ).fetchall()',
        "entries = [entry_from_dict(d) for d in json.loads(entries_json)]",
        "trimmed_entries, trimmed = _trim_entries(entries, keep_chars)",
        "json.dumps( [entry_to_dict(e) for e in trimmed_entries], ensure_ascii=False, )",
        '"UPDATE session_runs SET entries_json = ? WHERE id = ?"',
    ),
}


@dataclass(frozen=True)
class Prepared:
    """A method's read as ``sqlite3`` returns it, and what it computes from it."""

    read: str
    """The statement the rows answer (:data:`REWIND_READ`, :data:`TRIM_READ`)."""
    rows: list[tuple[Any, ...]] | None
    """None where a text is not UTF-8: lovia's read fails on it, under the lock."""
    parsed: Parsed = field(default_factory=dict)
    trimmed: dict[tuple[int, ...], tuple[list[Any], int]] = field(default_factory=dict)
    """``_trim_entries``' result, by the ids of the parsed entries it was given."""
    dumped: dict[tuple[int, ...], str] = field(default_factory=dict)
    """The text each trimmed segment is written as, by its entries' ids."""


def prepare_rewind(rows: Iterable[tuple[int, Cell, Cell]]) -> Prepared:
    """The rewind's read from its cut and the parse of each segment: ``rows``
    are (rowid, run id, entries) as captured, in rowid order."""
    try:
        read = [(rowid, as_read(run), as_read(text)) for rowid, run, text in rows]
    except UnicodeDecodeError:
        return Prepared(REWIND_READ, None)
    return Prepared(REWIND_READ, read, parse_segments(r[2] for r in read))


def prepare_trim(
    rows: Sequence[tuple[int, Cell]], keep_chars: int, keep_runs: int
) -> Prepared:
    """The trim's read of the session, and for each segment it would trim
    (all but the last ``keep_runs``) the parse, the trim and the text it
    writes: ``rows`` are (rowid, entries) as captured, in rowid order."""
    from lovia.transcript import entry_to_dict

    try:
        read = [(rowid, as_read(text)) for rowid, text in rows]
    except UnicodeDecodeError:
        return Prepared(TRIM_READ, None)
    parsed = parse_segments(r[1] for r in read[: max(0, len(read) - keep_runs)])
    trimmed: dict[tuple[int, ...], tuple[list[Any], int]] = {}
    dumped: dict[tuple[int, ...], str] = {}
    for segments in parsed.values():
        for entries in segments:
            cut, count = trim_entries()(entries, keep_chars)
            trimmed[_ids(entries)] = cut, count
            if count:
                dumps = [entry_to_dict(e) for e in cut]
                dumped[_ids(cut)] = json.dumps(dumps, ensure_ascii=False)
    return Prepared(TRIM_READ, read, parsed, trimmed, dumped)


def as_read(cell: Cell) -> Any:
    """A stored value as ``sqlite3`` gives it (text decoded strictly, as it does)."""
    kind, value = cell
    if kind == "text":
        return bytes(value).decode()
    return bytes(value) if kind == "blob" else value


def parse_segments(texts: Iterable[Any]) -> Parsed:
    """lovia's own parse of each segment's text (``entry_from_dict`` of each
    item ``json.loads`` gives), by text, one entry list per row holding it. A
    text lovia cannot parse is left out, for lovia to meet under the lock."""
    from lovia.transcript import entry_from_dict

    parsed: Parsed = {}
    for text in texts:
        if not isinstance(text, str):
            continue
        try:
            entries = [entry_from_dict(d) for d in json.loads(text)]
        except Exception:  # lovia's parse raises it again, under the lock
            continue
        parsed.setdefault(text, []).append(entries)
    return parsed


class _ServedJson:
    """The ``json`` a served method sees: a text parsed before the lock gives
    the entries built from it (once per row that held it: each segment keeps
    objects of its own), and entries trimmed before it the text written for
    them; anything else is done as lovia would. Equal text is the check that
    the parse still holds."""

    def __init__(self, prepared: Prepared) -> None:
        self._parsed = {text: iter(rows) for text, rows in prepared.parsed.items()}
        self._dumped = prepared.dumped

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    def loads(self, text: Any, *args: Any, **kwargs: Any) -> Any:
        rows = self._parsed.get(text) if isinstance(text, str) else None
        entries = None if rows is None or args or kwargs else next(rows, None)
        return json.loads(text, *args, **kwargs) if entries is None else entries

    def dumps(self, value: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(value, list) and not args and kwargs == {"ensure_ascii": False}:
            text = self._dumped.get(_ids(value))
            if text is not None:
                return text
        return json.dumps(value, *args, **kwargs)


def served(method: Callable[..., Any], prepared: Prepared) -> Callable[..., Any]:
    """``method`` of ``SQLiteSession``, its code as written, with what
    ``prepared`` holds served in place of computing it: ``json`` as
    :class:`_ServedJson`; ``entry_from_dict`` passes lovia's entries through
    (``json`` never makes one); ``_trim_entries`` and ``entry_to_dict`` give
    their results for the entries prepared, by identity."""
    from lovia.transcript import TranscriptEntry

    names = method.__globals__
    built = typing.get_args(TranscriptEntry)
    cut = {id(e) for entries, _ in prepared.trimmed.values() for e in entries}

    def from_dict(data: Any) -> Any:
        return data if isinstance(data, built) else names["entry_from_dict"](data)

    def trimmed(entries: list[Any], keep_chars: int) -> tuple[list[Any], int]:
        found = prepared.trimmed.get(_ids(entries))
        return found or names["_trim_entries"](entries, keep_chars)

    def to_dict(entry: Any) -> Any:
        return entry if id(entry) in cut else names["entry_to_dict"](entry)

    function = types.FunctionType(
        method.__code__,
        {
            **names,
            "json": _ServedJson(prepared),
            "entry_from_dict": from_dict,
            "_trim_entries": trimmed,
            "entry_to_dict": to_dict,
        },
        method.__name__, method.__defaults__, method.__closure__,
    )  # fmt: skip
    function.__kwdefaults__ = method.__kwdefaults__
    return function


@functools.cache
def reads_as_known(name: str) -> bool:
    """Whether ``SQLiteSession.<name>`` reads, parses and writes as served."""
    source = " ".join(inspect.getsource(getattr(SQLiteSession, name)).split())
    source = source.replace('" "', "")
    return all(part in source for part in _AS_KNOWN[name])


def _ids(objects: list[Any]) -> tuple[int, ...]:
    return tuple(map(id, objects))
