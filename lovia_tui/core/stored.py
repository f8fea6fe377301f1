"""Keys and times as a lovia file may hold them, which is not always as lovia writes them.

lovia writes session and run ids as TEXT and times as REAL numbers. A foreign
writer, a table another program created without lovia's column types, or a
damaged page can leave any SQLite storage class there, or TEXT that is not
UTF-8 (which no Python program can bind, lovia included). The read layer passes
every key and time it reads through :func:`stored_key` and :func:`stored_time`,
so the views, the filter, search, the doctor and the CLI get a ``str`` and a
``float | None`` whatever the file holds, and the actions can tell a key that
lovia's methods cannot be given (:func:`refuse_non_text`).
"""

from __future__ import annotations

import math
from typing import Any

from lovia_tui.core.errors import ActionError

UNREADABLE = "unreadable"
"""What lovia could not load: a row, a head (as its status), a time."""
UNREADABLE_MARK = "⚠"
"""What marks a stored value lovia-tui cannot use as lovia would, wherever it is shown."""
UNREADABLE_SHOWN = f"{UNREADABLE_MARK} {UNREADABLE}"
"""How a row or a time that does not read is shown (a time is then read as None)."""
BLOB_SHOWN = 16
"""Bytes of a BLOB key spelled out; the rest is counted."""
SQL_SPELLED_BYTES = 256
"""Up to this many bytes, a key of text that is not UTF-8 is also given whole,
as SQL that finds its rows (:func:`text_literal`)."""
SAFE_ENTRY_COUNT = (
    "CASE WHEN json_valid(entries_json) THEN json_array_length(entries_json) END"
)
"""A row's entry count that a malformed row cannot fail (it counts as NULL)."""


class UndecodedText(str):
    """Stored TEXT that is not UTF-8, as the read layer decodes it: U+FFFD for
    each byte that does not decode, and the bytes as stored (``raw``), so a
    key can be told from the text id spelled with U+FFFD (:func:`stored_key`)."""

    raw: bytes

    def __new__(cls, raw: bytes) -> UndecodedText:
        text = super().__new__(cls, raw.decode("utf-8", errors="replace"))
        text.raw = raw
        return text


def decode_text(raw: bytes) -> str:
    """SQLite TEXT as the read layer reads it: a value that is not UTF-8 must
    not fail the whole statement, and is read as :class:`UndecodedText`."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return UndecodedText(raw)


def _hex(stored: bytes) -> str:
    """Bytes as an SQL literal, the first :data:`BLOB_SHOWN` of them spelled out."""
    more = len(stored) - BLOB_SHOWN
    tail = f"…' ({len(stored):,} bytes)" if more > 0 else "'"
    return f"x'{stored[:BLOB_SHOWN].hex()}{tail}"


Stored = int | float | bytes | UndecodedText | None
"""What a non-text key holds: what SQLite gave for it."""


def _spelled(stored: Stored) -> str:
    """A non-text key as SQL would write it, after its storage class."""
    if stored is None:
        return f"{UNREADABLE_MARK} null"
    if isinstance(stored, UndecodedText):
        return f"{UNREADABLE_MARK} text not UTF-8 {_hex(stored.raw)}"
    if isinstance(stored, bytes):
        return f"{UNREADABLE_MARK} blob {_hex(stored)}"
    if isinstance(stored, int):
        return f"{UNREADABLE_MARK} integer {stored}"
    return f"{UNREADABLE_MARK} real {stored!r}"


class NonTextKey(str):
    """A session or run id stored as INTEGER, REAL, BLOB or NULL, or as TEXT
    that is not UTF-8, which lovia never writes.

    A ``str`` so that it sorts, filters and keys a dict beside the text ids;
    its text says what it is (``⚠ integer 42``, ``⚠ blob x'00ff'``), so it never
    looks like the text id ``42``, and it never equals a text id even one
    spelled like it. SQLite binds it as the value stored (``__conform__``):
    a read by it finds that value's rows. Text that is not UTF-8 cannot be
    bound as text from Python: it is bound as its bytes, and a read by it
    finds no row of lovia's (lovia cannot read them either; the doctor
    reports them). lovia's methods take text ids, and given ``'42'`` they
    would act on other rows: every action refuses it.
    """

    stored: Stored

    def __new__(cls, stored: Stored) -> NonTextKey:
        key = super().__new__(cls, _spelled(stored))
        key.stored = stored
        return key

    def _identity(self) -> tuple[str, Any]:
        if isinstance(self.stored, UndecodedText):
            return "text", self.stored.raw
        return type(self.stored).__name__, self.stored

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NonTextKey) and self._identity() == other._identity()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._identity())

    def __conform__(self, protocol: object) -> int | float | bytes:
        """What sqlite3 binds in its place: the value as stored. NULL is bound
        as NaN, which SQLite binds as NULL (sqlite3 takes a None from here
        for "no adaptation" and would bind this key's text instead)."""
        if isinstance(self.stored, UndecodedText):
            return self.stored.raw
        return math.nan if self.stored is None else self.stored


def stored_key(value: Any) -> str:
    """A session or run id as SQLite gave it: text as it is; an INTEGER, REAL,
    BLOB, NULL or text that is not UTF-8 a :class:`NonTextKey`."""
    if isinstance(value, str) and not isinstance(value, UndecodedText):
        return value
    return NonTextKey(value)


def stored_number(value: Any) -> int | float | None:
    """A stored number, else None: a hostile row may hold any JSON where lovia writes one."""
    return (
        value
        if isinstance(value, int | float) and not isinstance(value, bool)
        else None
    )


def stored_time(value: Any) -> float | None:
    """A stored time (epoch seconds) if it is a finite number, else None (unreadable)."""
    number = stored_number(value)
    return float(number) if number is not None and math.isfinite(number) else None


def time_order(when: float | None) -> float:
    """Sort key of a stored time: an unreadable one sorts as the oldest, always the same."""
    return -math.inf if when is None else when


def non_text(what: str, key: str | None) -> str | None:
    """Why no action can take ``key`` (a ``what`` id), in one line; None if it can."""
    if not isinstance(key, NonTextKey):
        return None
    if isinstance(key.stored, UndecodedText):
        return (
            f"the {what} id {key} is text that is not UTF-8: no Python program "
            "can bind it, lovia included, so lovia's methods cannot be given it"
        )
    return (
        f"the {what} id {key} is not text as lovia writes ids: lovia's methods "
        "take text, and acting on it as text would touch other rows"
    )


def text_literal(key: str) -> str | None:
    """SQL for a key of text that is not UTF-8, whole (``CAST(x'..' AS TEXT)``):
    what finds its rows in the sqlite3 shell; None for any other key, or one
    over :data:`SQL_SPELLED_BYTES`."""
    if not (isinstance(key, NonTextKey) and isinstance(key.stored, UndecodedText)):
        return None
    raw = key.stored.raw
    return f"CAST(x'{raw.hex()}' AS TEXT)" if len(raw) <= SQL_SPELLED_BYTES else None


def unbindable(what: str, key: str) -> str | None:
    """Why nothing can be read by ``key`` (a ``what`` id), in one line; None if
    it can: text that is not UTF-8, which no Python program can bind."""
    if not (isinstance(key, NonTextKey) and isinstance(key.stored, UndecodedText)):
        return None
    literal = text_literal(key)
    shell = f"; the sqlite3 shell can, as {literal}" if literal else ""
    return (
        f"the {what} id {key} is text that is not UTF-8: no Python program can "
        f"read by it, lovia included{shell}"
    )


def refuse_non_text(what: str, key: str | None) -> None:
    """Refuse an action on a key lovia's methods cannot be given (:func:`non_text`)."""
    if reason := non_text(what, key):
        raise ActionError(f"{reason}; nothing was done")
