"""What of an entry is searchable, and in which field.

One posting per entry: its text in ``body`` (a long tool output only up to
``ENTRY_CAP`` characters), the tool's name in ``tool`` (a call, and the result
answering it within the same segment or batch) and its kind in ``tag``
(``user``, ``system``, ``assistant``, ``reasoning``, ``call``, ``result``, and
``error`` for a result lovia stored with ``is_error``), as :data:`TAG` tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lovia_tui.core.entries import text_of
from lovia_tui.core.search.index import ENTRY_CAP
from lovia_tui.core.search.query import TAG, words_of

Fields = tuple[str, str, str]
# TAG prefixes the tag and tool tokens ("lterror", "ltrefundpayment"): words
# no text holds, so ``error:`` reads only its own postings, not those of every
# "error" said in a message.


def tool_token(name: str) -> str:
    """A tool name as one token: case and punctuation dropped (refund_payment, Refund-Payment)."""
    return TAG + "".join(words_of(name))


_TAGS = {
    name: " ".join(TAG + word for word in name.split())
    for name in (
        "call",
        "result",
        "result error",
        "user",
        "system",
        "assistant",
        "reasoning",
    )
}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def entry_fields(entries: list[dict[str, Any]]) -> list[Fields]:
    """(body, tool, tag) of each entry, in order (per entry: the index's hot loop)."""
    names: dict[str, str] = {}
    fields: list[Fields] = []
    for entry in entries:
        kind = entry.get("type")
        if kind == "tool_call":
            name = _text(entry.get("name"))
            names[_text(entry.get("call_id"))] = name
            body = f"{name} {_text(entry.get('arguments'))}"
            fields.append((body[:ENTRY_CAP], tool_token(name), _TAGS["call"]))
        elif kind == "tool_result":
            tags = _TAGS["result error" if entry.get("is_error") is True else "result"]
            called = names.get(_text(entry.get("call_id")))
            tool = "" if called is None else tool_token(called)
            fields.append((_text(entry.get("output"))[:ENTRY_CAP], tool, tags))
        else:
            content = entry.get("content")
            text = content if isinstance(content, str) else text_of(content)
            if kind == "input":
                tag = _TAGS["system" if entry.get("role") == "system" else "user"]
            else:
                tag = _TAGS["reasoning" if kind == "reasoning" else "assistant"]
            fields.append((text[:ENTRY_CAP], "", tag))
    return fields


def entry_matches(words: Iterable[str], entry: dict[str, Any]) -> bool:
    """Whether every one of a query's ``words`` is in the entry's indexed text:
    how an in-flight run's entries, loaded whole, are searched in place."""
    body = entry_fields([entry])[0][0].lower()
    return all(word in body for word in words)
