"""Stored strings too large to decode whole: a 200 MB tool output, a piece at a time.

Decoded, a 50 MB output is a 100 MB Python str (two bytes a character once
one is beyond Latin-1), and every writer made another copy of it. Here a
string literal of more than ``HUGE_ABOVE`` bytes stays the stored JSON bytes
it is: :func:`spare_entries` parses the rest of the segment and puts a
:class:`HugeText` where the string was, checked whole (every piece decodes)
before it is returned. A writer renders an entry as it always did (``str()``
of a HugeText is its :attr:`~HugeText.token`, as ``default=str`` and
f-strings produce it), then :func:`expand` puts the pieces where the token
is, each encoded as the writer encodes a string. The pieces join into the
string the whole parse gives, so the output is the same text.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import orjson

from lovia_tui.core.entries import check_entry, shorten

HUGE_ABOVE = 4 << 20
"""Bytes of a string literal above which it is not decoded whole."""
PIECE = 1 << 20
"""Bytes of the stored literal decoded at a time."""
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
"""A JSON string literal, lexed as JSON lexes it (an escape is a backslash and
one character; ``\\uXXXX``'s digits are plain characters). Possessive: a
backtracking repeat keeps a frame per escape (80 MB for a 50 MB log)."""
_NONCE = secrets.token_hex(16)
"""Per process: stored text cannot hold a token by chance or by design."""
_PREFIX = f"lovia-tui-huge-{_NONCE}-"
_TOKEN = re.compile(f"{_PREFIX}([0-9]+)")
_TOKEN_BYTES = re.compile(_TOKEN.pattern.encode())
_LIVE: weakref.WeakValueDictionary[int, HugeText] = weakref.WeakValueDictionary()
_SHOWN_KEYS = frozenset({"type", "role", "call_id", "name", "is_error"})
"""Entry fields read as values (paired, compared, hashed): always decoded."""

Text = TypeVar("Text", str, bytes)


class HugeText:
    """One huge stored string: where its literal lies in the stored bytes, and
    where it is cut into pieces that each decode alone."""

    def __init__(self, raw: bytes, cuts: list[int], chars: int) -> None:
        self._raw = raw
        self._cuts = cuts  # offsets in raw: inside the quotes, first to last
        self.chars = chars
        self.number = next(_numbers)
        _LIVE[self.number] = self

    @property
    def token(self) -> str:
        """What stands for the text in a rendered entry until :func:`expand`."""
        return f"{_PREFIX}{self.number}"

    def __str__(self) -> str:
        return self.token

    def __format__(self, spec: str) -> str:
        return format(self.token, spec)

    def __len__(self) -> int:
        return self.chars

    def __getitem__(self, cut: slice) -> str:
        """A slice from the start (``text[:n]``), decoding only what it needs."""
        if cut.start or cut.step or cut.stop is None or cut.stop < 0:
            raise ValueError("a huge text is sliced from its start only")
        head = ""
        for piece in self.pieces():
            if len(head) >= cut.stop:
                break
            head += piece
        return head[: cut.stop]

    def endswith(self, suffix: str) -> bool:
        """``str.endswith``, decoding the last pieces only."""
        tail, at = "", len(self._cuts) - 1
        while len(tail) < len(suffix) and at > 0:
            tail = self._piece(at - 1) + tail
            at -= 1
        return tail.endswith(suffix)

    def sha1(self) -> str:
        """``hashlib.sha1`` of the text's UTF-8 (surrogates passed), a piece at a time."""
        digest = hashlib.sha1()
        for piece in self.pieces():
            digest.update(piece.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def pieces(self) -> Iterator[str]:
        """The decoded text, a piece (about ``PIECE`` bytes stored) at a time."""
        for number in range(len(self._cuts) - 1):
            yield self._piece(number)

    def _piece(self, number: int) -> str:
        start, end = self._cuts[number], self._cuts[number + 1]
        return orjson.loads(b'"' + self._raw[start:end] + b'"')


def _count() -> Iterator[int]:
    number = 0
    while True:
        number += 1
        yield number


_numbers = _count()


def _cut(raw: bytes, target: int, floor: int) -> int | None:
    """A cut at or before ``target`` (above ``floor``) that splits no UTF-8
    sequence, no escape and no surrogate pair of escapes, so that each side
    decodes alone."""
    while target > floor:
        if raw[target] & 0xC0 == 0x80:  # inside a UTF-8 sequence
            target -= 1
            continue
        escape = _escape_before(raw, target, floor)
        if escape is None:
            return target
        start, end = escape
        high = end - start == 6 and raw[start + 2 : start + 4].lower() in _HIGH
        if end <= target and not (end == target and high):
            return target
        target = start  # inside it, or between a pair's halves: cut before it
    return None


_HIGH = frozenset(f"d{digit}".encode() for digit in "89ab")
"""The first two hex digits of a high surrogate's escape (``\\uD83D``)."""


def _escape_before(raw: bytes, target: int, floor: int) -> tuple[int, int] | None:
    """The escape nearest before ``target`` that could reach it (it starts at
    most 6 bytes before), as (start, end); None if there is none."""
    slash = raw.rfind(b"\\", max(floor, target - 6), target)
    if slash < 0:
        return None
    run = slash
    while run > floor and raw[run - 1] == 0x5C:
        run -= 1
    if (slash - run) % 2:  # the second of an escaped backslash: it ends here
        return slash - 1, slash + 1
    return slash, slash + (6 if raw[slash + 1 : slash + 2] == b"u" else 2)


def _huge(raw: bytes, start: int, end: int) -> HugeText | None:
    """The literal ``raw[start:end]`` (quotes excluded) as a HugeText, every
    piece decoded once to check it; None if a piece does not decode."""
    cuts, at, chars = [start], start, 0
    while at < end:
        following = end if end - at <= PIECE else _cut(raw, at + PIECE, at)
        if following is None:
            return None
        try:
            chars += len(orjson.loads(b'"' + raw[at:following] + b'"'))
        except orjson.JSONDecodeError:
            return None
        cuts.append(following)
        at = following
    return HugeText(raw, cuts, chars)


def spare_entries(raw: bytes) -> list[dict[str, Any]] | None:
    """An ``entries_json`` value parsed with its huge strings left stored, or
    None where that reading is not certain to equal :func:`parse_entries`'s
    (invalid JSON or UTF-8, a huge string where a value is compared): the
    caller then parses it whole, which says what is wrong."""
    if len(raw) <= HUGE_ABOVE:
        return None
    found: dict[str, HugeText] = {}
    skeleton, last = [], 0
    for match in _STRING.finditer(raw):
        start, end = match.span()
        if end - start <= HUGE_ABOVE:
            continue
        huge = _huge(raw, start + 1, end - 1)
        if huge is None:
            return None
        found[huge.token] = huge
        skeleton += [raw[last:start], b'"', huge.token.encode(), b'"']
        last = end
    if not found:
        return None
    skeleton.append(raw[last:])
    try:
        data = orjson.loads(b"".join(skeleton))
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, list):
        return None
    for position, entry in enumerate(data):
        if not isinstance(entry, dict):
            return None
        for key, value in entry.items():
            if key in found:
                return None
            if isinstance(value, str) and value in found:
                if key in _SHOWN_KEYS:
                    return None
                entry[key] = found.pop(value)
        check_entry(position, entry)
    # A token left over sits deeper than an entry's own fields: not kept huge.
    return None if found else data


def expand(text: Text, encode: Callable[[str], Text]) -> Iterator[Text]:
    """``text`` (a rendered entry) in parts, each token replaced by its
    text's pieces through ``encode`` (how the writer renders a string)."""
    if isinstance(text, bytes):
        pattern, prefix = _TOKEN_BYTES, _PREFIX.encode()
    else:
        pattern, prefix = _TOKEN, _PREFIX
    if prefix not in text:
        yield text
        return
    at = 0
    for match in pattern.finditer(text):
        huge = _LIVE.get(int(match.group(1)))
        if huge is None:  # written after its entry was let go: a bug, never the token
            raise LookupError("a huge text was released before it was written")
        yield text[at : match.start()]
        for piece in huge.pieces():
            yield encode(piece)
        at = match.end()
    yield text[at:]


def json_piece(text: str) -> str:
    """A piece of a string as ``json.dumps`` writes it inside the quotes."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def dumped_bytes(entry: dict[str, Any]) -> int:
    """``len(json.dumps(entry, ensure_ascii=False).encode())``, a huge string's
    pieces measured one at a time."""
    text = json.dumps(entry, ensure_ascii=False, default=str)
    return sum(len(part.encode()) for part in expand(text, json_piece))


def holds_huge(text: str) -> bool:
    """Whether a rendered text stands for a huge string (expand it while it lives)."""
    return _PREFIX in text


def shortened(text: str, width: int) -> str:
    """:func:`shorten` of ``text`` with its tokens expanded, decoding only
    as many pieces as the line needs."""
    if not holds_huge(text):
        return shorten(text, width)
    head = ""
    for part in expand(text, str):
        head += part
        if len(" ".join(head.split())) > width:
            return shorten(head, width)
    return shorten(head, width)
