"""Parsing stored entry JSON and the analysis lovia's semantics call for.

Mirrors ``lovia.transcript`` (entry types, dangling-call pairing) without
importing lovia, which is slow to load and not needed to read. An entry of a
type the installed lovia does not know (a newer lovia's) is read and shown
as it is stored; only lovia's own methods cannot load it, so the actions
refuse it (:func:`known_only`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import orjson

from lovia_tui.core.attachments import encrypted_reasoning, part_label
from lovia_tui.core.lovia_facts import installed
from lovia_tui.core.models import DanglingCall
from lovia_tui.core.stored import UndecodedText


class UnreadableError(ValueError):
    """Stored JSON that does not parse, or holds something that is not an entry."""


def entry_types() -> frozenset[str]:
    """The entry types the installed lovia's ``entry_from_dict`` accepts."""
    return installed().entry_types


def trim_sentinel() -> str:
    """The fixed tail of lovia's trim marker: an output ending so is trimmed."""
    return installed().trim_sentinel


def known_only(entries: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``entries``, refused at the first of a type lovia's ``entry_from_dict``
    rejects: none of lovia's methods can load a run or session holding one."""
    known = entry_types()
    for entry in entries:
        if entry.get("type") not in known:
            raise UnreadableError(
                f"unknown type {entry.get('type')!r}: an entry the installed lovia "
                "cannot load (a newer lovia's?)"
            )
        yield entry


Parsed = TypeVar("Parsed")


def parse_stored(parse: Callable[[Any], Parsed], raw: str | bytes | None) -> Parsed:
    """``parse`` of a value read as bytes (no decoded copy, no Python decoding
    per cell), as of the text the read layer decodes (U+FFFD for bad bytes):
    the bytes are decoded only when they do not parse as they are."""
    if not isinstance(raw, bytes):
        return parse(raw)
    try:
        return parse(raw)
    except UnreadableError:
        return parse(raw.decode("utf-8", errors="replace"))


def parse_json(text: str | bytes | None) -> Any:
    if text is None:
        return None
    if isinstance(text, UndecodedText):
        text = str(text)  # orjson takes no str subclass
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UnreadableError(f"invalid JSON ({exc})") from exc


def parse_entries(text: str | bytes) -> list[dict[str, Any]]:
    """Parse an ``entries_json`` column, checking each entry's shape."""
    data = parse_json(text)
    if not isinstance(data, list):
        raise UnreadableError(
            f"expected a JSON list of entries, got {type(data).__name__}"
        )
    known = entry_types()
    for entry in data:  # the usual list in a tight loop; check_entry says what is wrong
        kind = entry.get("type") if type(entry) is dict else None
        if type(kind) is not str or kind not in known:
            for position, checked in enumerate(data):
                check_entry(position, checked)
            break
    return data


def check_entry(position: int, entry: Any) -> None:
    """Raise :class:`UnreadableError` unless ``entry`` is an entry: an object
    with a type (one the installed lovia does not know is shown as stored)."""
    if not isinstance(entry, dict):
        raise UnreadableError(f"entry {position} is not an object")
    kind = entry.get("type")
    if not isinstance(kind, str):
        raise UnreadableError(f"entry {position} has no type (got {kind!r})")


def parse_object(text: str | bytes | None) -> dict[str, Any] | None:
    data = parse_json(text)
    if data is not None and not isinstance(data, dict):
        raise UnreadableError(f"expected a JSON object, got {type(data).__name__}")
    return data


def _call_key(call_id: Any) -> Any:
    """A call_id usable as a key: lovia writes a string, a hostile row may hold a list."""
    if isinstance(call_id, list | dict):
        return json.dumps(call_id, sort_keys=True)
    return call_id


def dangling_calls(entries: list[dict[str, Any]]) -> list[DanglingCall]:
    """Tool calls with no matching result, paired by call_id occurrence.

    A call_id may repeat (providers reuse ids across turns); the n-th call is
    answered by the n-th result with that id, as lovia's resume pairs them.
    """
    results = Counter(
        _call_key(e.get("call_id")) for e in entries if e.get("type") == "tool_result"
    )
    dangling = []
    for entry in entries:
        if entry.get("type") != "tool_call":
            continue
        call_id = entry.get("call_id")
        if results[_call_key(call_id)] > 0:
            results[_call_key(call_id)] -= 1
        else:
            dangling.append(
                DanglingCall(
                    call_id=str(call_id),
                    name=str(entry.get("name", "?")),
                    arguments=str(entry.get("arguments", "")),
                )
            )
    return dangling


def drop_dangling(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mirror of lovia's ``drop_dangling_tool_calls`` on entry dicts.

    Unlike :func:`dangling_calls`, lovia keeps a call when ANY result carries
    its id (set membership, not occurrence pairing); mirroring it exactly is
    what makes a rewind preview count what lovia will remove.
    """
    resolved = {
        _call_key(e.get("call_id")) for e in entries if e.get("type") == "tool_result"
    }
    return [
        e
        for e in entries
        if not (
            e.get("type") == "tool_call" and _call_key(e.get("call_id")) not in resolved
        )
    ]


def trimmed_output(entry: dict[str, Any], keep_chars: int) -> str | None:
    """The output lovia's ``trim_tool_results`` would store, or None if it skips it.

    Mirrors lovia's ``_trim_entries`` (with lovia's own marker): results
    already trimmed are left alone, and so are those where the marker would
    outweigh the saving.
    """
    if entry.get("type") != "tool_result" or is_trimmed(entry):
        return None
    from lovia_tui.core.lovia_private import trim_marker

    output = output_text(entry)
    dropped = len(output) - keep_chars
    marker = trim_marker(entry.get("call_id"), dropped)
    return output[:keep_chars] + marker if dropped > len(marker) else None


def text_of(content: Any) -> str:
    """The readable text of an entry's content (a string or a list of parts,
    an attachment told by what it is, never by its bytes)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part_label(part) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def entry_text(entry: dict[str, Any]) -> str:
    """The searchable, previewable text of any entry."""
    kind = entry.get("type")
    if kind == "tool_call":
        return f"{entry.get('name', '')}({entry.get('arguments', '')})"
    if kind == "tool_result":
        return str(entry.get("output", ""))
    return encrypted_reasoning(entry) or text_of(entry.get("content"))


def is_trimmed(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "tool_result" and output_text(entry).endswith(
        trim_sentinel()
    )


def output_text(entry: dict[str, Any]) -> Any:
    """A result's output as text: a str, or a huge one left stored (which
    measures, slices from its start and tests its end as a str does)."""
    output = entry.get("output", "")
    return (
        output if isinstance(output, str) or hasattr(output, "pieces") else str(output)
    )


def shorten(text: str, width: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` with "…"."""
    head = 4 * (width + 1)
    if len(text) > head:
        # A stored output may be megabytes: collapse only as much as the result needs.
        flat = " ".join(text[:head].split())
        if len(flat) > width:
            return flat[: max(0, width - 1)] + "…"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"
